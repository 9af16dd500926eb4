"""Dialect: LangSmith's OpenTelemetry export (``LANGSMITH_OTEL_ENABLED=true`` with ``LANGSMITH_OTEL_ONLY=true``,
or ``LANGSMITH_TRACING_MODE=otel`` / ``hybrid``), recognised by ``langsmith.span.kind`` (one lookup).

Each LangSmith run (``@traceable`` functions, ``wrap_openai`` clients, LangChain runs) becomes a span with
``langsmith.span.kind`` (the run type), ``langsmith.trace.name``, and the run's inputs and outputs as JSON in
``gen_ai.prompt`` / ``gen_ai.completion``:

``llm`` runs
    inputs ``{"messages": [...]}`` (chat-shaped: ``role``, ``content``, ``tool_calls``, ``tool_call_id``; or, for
    LangChain chat models, ``[[...]]`` of serialised LangChain messages, ``kwargs.type`` their role); outputs a Chat
    Completions response (``{"choices": [{"message", "finish_reason"}]}``), LangChain's ``{"generations": [[...]]}``,
    or one message.
    Rewritten into ``gen_ai.input.messages`` / ``gen_ai.output.messages``; model, usage and response id are in
    ``gen_ai.*`` already.
``tool`` runs
    inputs: the keyword arguments; outputs ``{"output": value}`` (a LangChain tool's ``ToolMessage``: its
    ``content``) -> ``execute_tool`` with arguments and result.
    A ``@traceable`` tool has no tool-call id: the fold pairs it with the model's call by name and arguments.
a ``chain`` run at the root of the trace
    an agent span named after the run (the trace's name).

Never imports :mod:`spanfold.instrumentation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from spanfold import semconv
from spanfold.exporter.dialects.shapes import chat_message, dumps, loads, tool_call
from spanfold.exporter.records import SpanRecord

SPAN_KIND: Final = semconv.LANGSMITH_SPAN_KIND
PROMPT: Final = semconv.LANGSMITH_PROMPT
COMPLETION: Final = semconv.LANGSMITH_COMPLETION
#: A LangChain message's ``type`` -> its role.
LANGCHAIN_ROLES: Final = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool", "function": "tool"}


def _calls(raw: Any) -> list[dict[str, Any]]:
    calls = []
    for call in raw if isinstance(raw, list) else ():
        if isinstance(call, Mapping):
            function = call.get("function")
            fn: Mapping[str, Any] = function if isinstance(function, Mapping) else call  # LangChain: name, args
            calls.append(tool_call(call.get("id"), fn.get("name"), fn.get("arguments", fn.get("args"))))
    return calls


def _fields(msg: Any) -> Mapping[str, Any] | None:
    """A message's fields: chat-shaped as it is; a LangChain message serialised (``{"lc": 1, "kwargs": {...}}``) or
    dumped (``{"type": "human", "content": ...}``) with its ``type`` as the role."""
    if not isinstance(msg, Mapping):
        return None
    kwargs = msg.get("kwargs")
    fields: Mapping[str, Any] = kwargs if isinstance(kwargs, Mapping) and "lc" in msg else msg
    if "role" not in fields and fields.get("type") in LANGCHAIN_ROLES:
        return {**fields, "role": LANGCHAIN_ROLES[fields["type"]]}
    return fields


def _message(msg: Any, role: str = "user", finish_reason: str | None = None) -> list[dict[str, Any]]:
    fields = _fields(msg)
    if fields is None:
        return []
    calls = _calls(fields.get("tool_calls"))
    content = fields.get("content")
    if content == "" and calls:
        content = None
    return chat_message(
        fields.get("role") or role, content, calls, fields.get("tool_call_id"), finish_reason=finish_reason
    )


def _generations(generations: list[Any]) -> list[dict[str, Any]]:
    """LangChain's ``{"generations": [[{"message", "generation_info": {"finish_reason"}}]]}``: the first prompt's."""
    first = generations[0] if generations and isinstance(generations[0], list) else generations
    out: list[dict[str, Any]] = []
    for generation in first:
        if isinstance(generation, Mapping):
            info = generation.get("generation_info")
            reason = info.get("finish_reason") if isinstance(info, Mapping) else None
            out.extend(_message(generation.get("message"), "assistant", str(reason) if reason else None))
    return out


def _outputs(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, Mapping):
        return []
    generations = value.get("generations")
    if isinstance(generations, list):
        return _generations(generations)
    choices = value.get("choices")
    if isinstance(choices, list):
        out: list[dict[str, Any]] = []
        for choice in choices:
            if isinstance(choice, Mapping):
                reason = choice.get("finish_reason")
                out.extend(_message(choice.get("message"), "assistant", str(reason) if reason else None))
        return out
    return _message(value, "assistant") if "content" in value or "tool_calls" in value else []


def _model(attrs: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(attrs)
    out[semconv.OPERATION_NAME] = semconv.OP_CHAT
    inputs = loads(attrs.get(PROMPT))
    messages = inputs.get("messages") if isinstance(inputs, Mapping) else None
    if isinstance(messages, list) and messages and isinstance(messages[0], list):
        messages = messages[0]  # LangChain: one list of messages per prompt
    if isinstance(messages, list) and semconv.INPUT_MESSAGES not in attrs:
        out[semconv.INPUT_MESSAGES] = dumps([m for raw in messages for m in _message(raw)])
    outputs = _outputs(loads(attrs.get(COMPLETION)))
    if outputs and semconv.OUTPUT_MESSAGES not in attrs:
        out[semconv.OUTPUT_MESSAGES] = dumps(outputs)
    system = attrs.get(semconv.SYSTEM_LEGACY)
    if isinstance(system, str):
        out.setdefault(semconv.PROVIDER_NAME, system)
    return out


def _tool(attrs: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(attrs)
    out[semconv.OPERATION_NAME] = semconv.OP_EXECUTE_TOOL
    out.setdefault(semconv.TOOL_NAME, attrs.get(semconv.LANGSMITH_NAME))
    if PROMPT in attrs:
        out.setdefault(semconv.TOOL_CALL_ARGUMENTS, attrs[PROMPT])
    completion = loads(attrs.get(COMPLETION))
    if isinstance(completion, Mapping) and "output" in completion:
        value = completion["output"]
        if isinstance(value, Mapping) and value.get("type") == "tool" and "content" in value:
            value = value["content"]  # a LangChain tool's ToolMessage
        out.setdefault(semconv.TOOL_CALL_RESULT, value if isinstance(value, str) else dumps(value))
    elif COMPLETION in attrs:
        out.setdefault(semconv.TOOL_CALL_RESULT, attrs[COMPLETION])
    return out


def rewrite(record: SpanRecord) -> tuple[str, dict[str, Any]] | None:
    """A LangSmith span in the contract's name and attributes; None for other spans."""
    attrs = record.attributes
    kind = attrs.get(SPAN_KIND)
    if kind is None:
        return None
    if kind == "llm":
        out = _model(attrs)
        model = out.get(semconv.REQUEST_MODEL)
        return semconv.span_name(semconv.OP_CHAT, str(model) if model is not None else None), out
    if kind == "tool":
        out = _tool(attrs)
        name = out.get(semconv.TOOL_NAME)
        return semconv.span_name(semconv.OP_EXECUTE_TOOL, str(name) if name is not None else None), out
    if kind in ("chain", "agent") and record.is_local_root:
        out = dict(attrs)
        out[semconv.OPERATION_NAME] = semconv.OP_INVOKE_AGENT
        out.setdefault(semconv.AGENT_NAME, attrs.get(semconv.LANGSMITH_NAME))
        return semconv.span_name(semconv.OP_INVOKE_AGENT, _text(out.get(semconv.AGENT_NAME))), out
    return None


def _text(value: Any) -> str | None:
    return str(value) if value is not None else None

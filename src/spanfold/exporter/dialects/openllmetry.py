"""Dialect: OpenLLMetry (``opentelemetry-instrumentation-openai`` / ``-anthropic`` ...) and traceloop SDK spans.

OpenLLMetry 0.54 and later write ``gen_ai.operation.name`` and ``gen_ai.input.messages`` /
``gen_ai.output.messages`` as the contract does: those spans fold through the generic path, untouched here. This
module reads what the older releases (up to 0.53, and ``opentelemetry-instrumentation-anthropic`` 0.53.4) and the
traceloop SDK's decorators write:

LLM spans (``openai.chat``, ``anthropic.chat`` ...; recognised by ``llm.request.type``, one lookup)
    ``gen_ai.prompt.{N}.role`` / ``.content`` (a string, or the JSON of the content list: OpenAI content parts,
    Anthropic blocks with ``tool_use`` / ``tool_result``) / ``.tool_call_id`` / ``.tool_calls.{M}.id|name|arguments``;
    ``gen_ai.completion.{N}.role`` / ``.content`` / ``.finish_reason`` / ``.tool_calls.{M}.*``;
    ``gen_ai.system`` (``openai``, ``Anthropic``), ``gen_ai.request.model``, ``gen_ai.response.model|id``, usage as
    ``gen_ai.usage.input_tokens`` (older: ``prompt_tokens`` / ``completion_tokens``). Rewritten into
    ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (tool results split into ``tool`` messages),
    ``gen_ai.response.finish_reasons``, ``gen_ai.provider.name`` and ``chat {model}``. With content tracing off
    (``TRACELOOP_TRACE_CONTENT=false``) there are no prompt attributes: the step keeps model, usage and timing.
traceloop decorator spans (``{name}.tool``, ``{name}.agent`` ...; recognised by ``traceloop.span.kind``)
    ``traceloop.entity.name``, ``traceloop.entity.input`` (JSON ``{"args": [...], "kwargs": {...}}``),
    ``traceloop.entity.output`` (the JSON of the return value). ``tool`` -> ``execute_tool`` (arguments: the
    keyword arguments, or ``{"args", "kwargs"}`` when there are positional ones; result: the returned string, or
    its JSON); ``agent`` -> ``invoke_agent``; ``workflow`` / ``task`` are left alone (not steps). A tool span has no
    tool-call id: the fold pairs it with the model's call by name and arguments.

Never imports :mod:`spanfold.instrumentation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from spanfold import semconv
from spanfold.exporter.dialects.shapes import (
    chat_message,
    dumps,
    in_order,
    indexed,
    indexed_tool_calls,
    loads,
    messages_in_order,
)
from spanfold.exporter.records import SpanRecord

REQUEST_TYPE: Final = semconv.OPENLLMETRY_REQUEST_TYPE
SPAN_KIND: Final = semconv.OPENLLMETRY_SPAN_KIND
ENTITY_NAME: Final = semconv.OPENLLMETRY_ENTITY_NAME
ENTITY_INPUT: Final = semconv.OPENLLMETRY_ENTITY_INPUT
ENTITY_OUTPUT: Final = semconv.OPENLLMETRY_ENTITY_OUTPUT
PROMPT: Final = semconv.OPENLLMETRY_PROMPT
COMPLETION: Final = semconv.OPENLLMETRY_COMPLETION

#: ``llm.request.type`` values that are model steps (the anthropic instrumentation calls Messages ``completion``).
MODEL_REQUESTS: Final = frozenset({"chat", "completion"})
#: Older usage names -> the contract's.
USAGE_ALIASES: Final = semconv.OPENLLMETRY_USAGE_ALIASES
#: ``traceloop.span.kind`` -> the operation its span stands for.
ENTITY_OPERATIONS: Final = {"tool": semconv.OP_EXECUTE_TOOL, "agent": semconv.OP_INVOKE_AGENT}


def _messages(groups: dict[int, dict[str, Any]], output: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for fields in messages_in_order(groups):
        calls = indexed_tool_calls(fields, semconv.OPENLLMETRY_TOOL_CALLS, semconv.OPENLLMETRY_TOOL_CALL_KEYS)
        content = fields.get(semconv.OPENLLMETRY_CONTENT)
        if content is None and output:
            content = fields.get(semconv.OPENLLMETRY_REFUSAL)
        reason = str(fields.get(semconv.OPENLLMETRY_FINISH_REASON) or "") if output else None
        role = fields.get(semconv.OPENLLMETRY_ROLE) or ("assistant" if output else "user")
        call_id = fields.get(semconv.OPENLLMETRY_TOOL_CALL_ID)
        out.extend(chat_message(role, content, calls, call_id, finish_reason=reason, json_lists=True))
    return out


def _model(attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    out = dict(attrs)
    groups = indexed(attrs, (PROMPT, COMPLETION))
    if groups[PROMPT] and semconv.INPUT_MESSAGES not in attrs:
        out[semconv.INPUT_MESSAGES] = dumps(_messages(groups[PROMPT], output=False))
    if groups[COMPLETION] and semconv.OUTPUT_MESSAGES not in attrs:
        out[semconv.OUTPUT_MESSAGES] = dumps(_messages(groups[COMPLETION], output=True))
        reason_key = semconv.OPENLLMETRY_FINISH_REASON
        reasons = [f[reason_key] for f in in_order(groups[COMPLETION]) if f.get(reason_key)]
        if reasons and semconv.RESPONSE_FINISH_REASONS not in attrs:
            out[semconv.RESPONSE_FINISH_REASONS] = reasons
    for old, new in USAGE_ALIASES.items():
        if old in attrs and new not in attrs:
            out[new] = attrs[old]
    system = attrs.get(semconv.SYSTEM_LEGACY)
    if isinstance(system, str) and semconv.PROVIDER_NAME not in attrs:
        out[semconv.PROVIDER_NAME] = system.lower()
    out.setdefault(semconv.OPERATION_NAME, semconv.OP_CHAT)
    return semconv.span_name(semconv.OP_CHAT, _model_name(attrs)), out


def _model_name(attrs: Mapping[str, Any]) -> str | None:
    model = attrs.get(semconv.REQUEST_MODEL) or attrs.get(semconv.RESPONSE_MODEL)
    return str(model) if model is not None else None


def _tool_arguments(raw: Any) -> str | None:
    value = loads(raw)
    if not isinstance(value, dict):
        return raw if isinstance(raw, str) else None
    args, kwargs = value.get("args") or [], value.get("kwargs") or {}
    if not args and isinstance(kwargs, dict):
        return dumps(kwargs)
    return dumps({"args": args, "kwargs": kwargs})


def _tool_result(raw: Any) -> str | None:
    value = loads(raw)
    if isinstance(value, str):
        return value
    return raw if isinstance(raw, str) else None


def _entity(kind: str, attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    op = ENTITY_OPERATIONS.get(kind)
    if op is None:
        return None
    out = dict(attrs)
    entity = attrs.get(ENTITY_NAME)
    out[semconv.OPERATION_NAME] = op
    if op == semconv.OP_EXECUTE_TOOL:
        out.setdefault(semconv.TOOL_NAME, entity)
        if ENTITY_INPUT in attrs and semconv.TOOL_CALL_ARGUMENTS not in attrs:
            out[semconv.TOOL_CALL_ARGUMENTS] = _tool_arguments(attrs[ENTITY_INPUT])
        if ENTITY_OUTPUT in attrs and semconv.TOOL_CALL_RESULT not in attrs:
            out[semconv.TOOL_CALL_RESULT] = _tool_result(attrs[ENTITY_OUTPUT])
        target = out.get(semconv.TOOL_NAME)
    else:
        out.setdefault(semconv.AGENT_NAME, entity)
        target = out.get(semconv.AGENT_NAME)
    return semconv.span_name(op, str(target) if target is not None else None), out


def rewrite(record: SpanRecord) -> tuple[str, dict[str, Any]] | None:
    """An OpenLLMetry / traceloop span in the contract's name and attributes; None for any other span."""
    attrs = record.attributes
    kind = attrs.get(SPAN_KIND)
    if isinstance(kind, str):
        return _entity(kind, attrs)
    request = attrs.get(REQUEST_TYPE)
    if request is None or semconv.OPERATION_NAME in attrs:
        return None
    return _model(attrs) if request in MODEL_REQUESTS else None

"""Dialect: the Vercel AI SDK's spans (``experimental_telemetry: {isEnabled: true}``, Node apps exporting OTLP to
``spanfold serve``), recognised by ``ai.operationId`` (one lookup).

``ai.generateText.doGenerate`` / ``ai.streamText.doStream`` (and the ``*Object`` twins): one model call
    ``ai.prompt.messages`` (the SDK's messages: ``content`` a string or parts ``text`` / ``image`` / ``file`` /
    ``tool-call`` ``{toolCallId, toolName, input}`` (``args`` before AI SDK 5) / ``tool-result``
    ``{toolCallId, toolName, output: {type, value}}`` (``result`` before 5)), ``ai.response.text``,
    ``ai.response.toolCalls`` (``[{toolCallId, toolName, input | args}]``), ``ai.response.finishReason``,
    ``ai.response.id`` / ``.model``, ``ai.model.id`` / ``.provider`` (``openai.chat`` -> ``openai``), usage as
    ``ai.usage.inputTokens`` / ``outputTokens`` (``promptTokens`` / ``completionTokens`` before 5).
``ai.toolCall``: one tool run
    ``ai.toolCall.name`` / ``.id`` / ``.args`` / ``.result`` (the JSON of the returned value).
``ai.generateText`` / ``ai.streamText`` ...: the call that ran the steps
    an agent span named after ``ai.telemetry.functionId`` (the trace's name).

Never imports :mod:`spanfold.instrumentation`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from spanfold import semconv
from spanfold.exporter.dialects.shapes import dumps, loads, tool_call
from spanfold.exporter.records import SpanRecord

OPERATION_ID: Final = semconv.VERCEL_OPERATION_ID


#: The AI SDK's attribute -> the contract's, copied when the contract's is not set already.
_MODEL_ATTRIBUTES = (
    (semconv.VERCEL_MODEL_ID, semconv.REQUEST_MODEL),
    (semconv.VERCEL_RESPONSE_ID, semconv.RESPONSE_ID),
    (semconv.VERCEL_RESPONSE_MODEL, semconv.RESPONSE_MODEL),
)
_TOOL_ATTRIBUTES = (
    (semconv.VERCEL_TOOL_NAME, semconv.TOOL_NAME),
    (semconv.VERCEL_TOOL_ID, semconv.TOOL_CALL_ID),
    (semconv.VERCEL_TOOL_ARGS, semconv.TOOL_CALL_ARGUMENTS),
)


def _renamed(attrs: Mapping[str, Any], out: dict[str, Any], pairs: Iterable[tuple[str, str]]) -> None:
    """Each ``(old, new)`` pair: ``out[new]`` from ``attrs[old]``, unless ``out`` has ``new`` already."""
    for old, new in pairs:
        if old in attrs:
            out.setdefault(new, attrs[old])


def _output(part: Mapping[str, Any]) -> Any:
    """A ``tool-result`` part's result: ``output.value`` (AI SDK 5+), else ``result``."""
    output = part.get("output")
    if isinstance(output, Mapping) and "value" in output:
        value = output["value"]
        return value if isinstance(value, str) else dumps(value)
    result = part.get("result")
    return result if isinstance(result, str) or result is None else dumps(result)


def _call(part: Mapping[str, Any]) -> dict[str, Any]:
    arguments = part.get("input", part.get("args"))
    return tool_call(part.get("toolCallId"), part.get("toolName"), arguments)


def _part(part: Any) -> dict[str, Any] | None:
    if not isinstance(part, Mapping):
        return None
    kind = part.get("type")
    if kind == "text":
        return {"type": semconv.PART_TEXT, "content": part.get("text")}
    if kind == "tool-call":
        return _call(part)
    if kind == "image":
        image = part.get("image")
        return {"type": semconv.PART_URI, "modality": "image", "uri": image} if isinstance(image, str) else None
    return None


def message(msg: Any) -> list[dict[str, Any]]:
    """One AI SDK message as contract messages (each ``tool-result`` part a ``tool`` message of its own)."""
    if not isinstance(msg, Mapping):
        return []
    role = str(msg.get("role") or "user")
    content = msg.get("content")
    if isinstance(content, str):
        return [{"role": role, "parts": [{"type": semconv.PART_TEXT, "content": content}]}]
    parts: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for raw in content if isinstance(content, list) else ():
        if isinstance(raw, Mapping) and raw.get("type") == "tool-result":
            response = {"type": semconv.PART_TOOL_CALL_RESPONSE, "id": raw.get("toolCallId"), "response": _output(raw)}
            results.append({"role": "tool", "parts": [response]})
        elif (part := _part(raw)) is not None:
            parts.append(part)
    return ([{"role": role, "parts": parts}] if parts or not results else []) + results


def _model(attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    out = dict(attrs)
    out[semconv.OPERATION_NAME] = semconv.OP_CHAT
    prompt = loads(attrs.get(semconv.VERCEL_PROMPT_MESSAGES))
    if isinstance(prompt, list):
        out[semconv.INPUT_MESSAGES] = dumps([m for raw in prompt for m in message(raw)])
    reason = attrs.get(semconv.VERCEL_RESPONSE_FINISH_REASON)
    parts: list[dict[str, Any]] = []
    text = attrs.get(semconv.VERCEL_RESPONSE_TEXT)
    if isinstance(text, str) and text:
        parts.append({"type": semconv.PART_TEXT, "content": text})
    calls = loads(attrs.get(semconv.VERCEL_RESPONSE_TOOL_CALLS))
    parts.extend(_call(c) for c in (calls if isinstance(calls, list) else ()) if isinstance(c, Mapping))
    if parts:
        extra = {"finish_reason": str(reason)} if reason is not None else {}
        out[semconv.OUTPUT_MESSAGES] = dumps([{"role": "assistant", "parts": parts, **extra}])
    if reason is not None:
        out.setdefault(semconv.RESPONSE_FINISH_REASONS, [str(reason)])
    _renamed(attrs, out, semconv.VERCEL_USAGE.items())
    _renamed(attrs, out, _MODEL_ATTRIBUTES)
    provider = attrs.get(semconv.VERCEL_MODEL_PROVIDER)
    if isinstance(provider, str):
        out.setdefault(semconv.PROVIDER_NAME, provider.partition(".")[0])
    model = out.get(semconv.REQUEST_MODEL)
    return semconv.span_name(semconv.OP_CHAT, str(model) if model is not None else None), out


def _tool(attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    out = dict(attrs)
    out[semconv.OPERATION_NAME] = semconv.OP_EXECUTE_TOOL
    name = attrs.get(semconv.VERCEL_TOOL_NAME)
    _renamed(attrs, out, _TOOL_ATTRIBUTES)
    raw = attrs.get(semconv.VERCEL_TOOL_RESULT)
    if raw is not None:
        value = loads(raw)
        out.setdefault(semconv.TOOL_CALL_RESULT, value if isinstance(value, str) else raw)
    return semconv.span_name(semconv.OP_EXECUTE_TOOL, str(name) if name is not None else None), out


def _agent(attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    out = dict(attrs)
    out[semconv.OPERATION_NAME] = semconv.OP_INVOKE_AGENT
    name = attrs.get(semconv.VERCEL_FUNCTION_ID)
    if name is not None:
        out.setdefault(semconv.AGENT_NAME, name)
    return semconv.span_name(semconv.OP_INVOKE_AGENT, str(name) if name is not None else None), out


def rewrite(record: SpanRecord) -> tuple[str, dict[str, Any]] | None:
    """A Vercel AI SDK span in the contract's name and attributes; None for other spans."""
    op = record.attributes.get(OPERATION_ID)
    if op is None:
        return None
    if op in semconv.VERCEL_MODEL_OPERATIONS:
        return _model(record.attributes)
    if op == semconv.VERCEL_TOOL_OPERATION:
        return _tool(record.attributes)
    if op in semconv.VERCEL_AGENT_OPERATIONS:
        return _agent(record.attributes)
    return None

"""Dialect: the ``anthropic`` SDK's own spans (instrumentation scope ``com.anthropic.sdk.python``).

anthropic 2.x traces itself. A user who never calls ``spanfold.init()`` but sends those spans to spanfold's fold (a
``FoldingSpanProcessor`` on their provider, ``spanfold serve``, OTLP-JSON files) gets flat traces through this
module, which rewrites each native span into the standard GenAI semconv attributes spanfold's contract uses
(:mod:`spanfold.semconv`), so the generic semconv dialect makes the step. What the SDK writes (2.12):

``anthropic.messages.create`` (CLIENT, one per API call; ``gen_ai.operation.name=chat``)
    always: ``gen_ai.request.model``, ``gen_ai.request.max_tokens``, ``gen_ai.response.id`` / ``.model``,
    ``gen_ai.usage.input_tokens`` (already input + cache read + cache write), ``gen_ai.usage.output_tokens``,
    ``gen_ai.usage.cache_read.input_tokens``, ``gen_ai.usage.cache_write.input_tokens`` (the contract's names),
    ``anthropic.message.stop_reason`` (no ``gen_ai.response.finish_reasons``), ``error.type``
    (the API's error type, e.g. ``overloaded_error``, or ``connection_error`` / a status code) with status ERROR.
    content mode only: ``gen_ai.system_instructions``, ``gen_ai.input.messages`` (``tool_result`` blocks stay
    ``tool_call_response`` parts *inside the user message*, their response a list of ``{"type":"text","text"}``
    blocks; images and documents reduced to ``{"type":"anthropic_image"}`` / ``anthropic_document``),
    ``gen_ai.output.messages`` (no ``finish_reason``; absent for a raw ``stream=True`` read without the helper).
``anthropic.custom_tool_use {name}`` / ``anthropic.tool_use {name}`` / ``anthropic.mcp_tool_use {name}`` (INTERNAL,
``execute_tool``)
    ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type``; content mode only:
    ``gen_ai.tool.call.arguments`` (JSON) and ``anthropic.tool_result.content`` (JSON list of blocks); an error
    result sets status ERROR with ``error.type=tool_error``.
``anthropic.messages.tool_runner`` (INTERNAL, ``invoke_agent``)
    one tool-runner loop: groups its model and tool spans like an agent run.

Rewritten here: tool results split into their own ``{"role": "tool"}`` messages (one per result, in order, the user
message keeping its other parts); block-list responses joined into their text; ``finish_reason`` (semconv enum) on
output messages and ``gen_ai.response.finish_reasons`` from ``anthropic.message.stop_reason``;
``anthropic.tool_result.content`` -> ``gen_ai.tool.call.result``; media placeholders -> content-less
``blob`` parts; model spans renamed ``chat {model}``. With content mode off the step keeps model, usage, ids, timing
and errors, and the tool spans keep names and call ids.

Never imports :mod:`spanfold.instrumentation`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from spanfold import semconv
from spanfold.semconv import shapes

SCOPE: Final = semconv.ANTHROPIC_NATIVE_SCOPE
MODEL_SPAN: Final = semconv.ANTHROPIC_NATIVE_MODEL_SPAN
TOOL_RUNNER_SPAN: Final = semconv.ANTHROPIC_NATIVE_TOOL_RUNNER_SPAN
TOOL_SPAN_PREFIXES: Final = semconv.ANTHROPIC_NATIVE_TOOL_SPAN_PREFIXES

STOP_REASON: Final = semconv.ANTHROPIC_NATIVE_STOP_REASON
TOOL_RESULT_CONTENT: Final = semconv.ANTHROPIC_NATIVE_TOOL_RESULT_CONTENT

FINISH_REASONS: Final = shapes.ANTHROPIC_FINISH_REASONS
#: The SDK's placeholders for media it leaves out -> content-less parts of the contract.
_MEDIA: Final = {"anthropic_image": "image", "anthropic_document": "document"}


def loads(value: Any) -> Any:
    """A JSON string parsed (None when it is not JSON); other values as they are."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return None


def is_native(scope: str | None, name: str) -> bool:
    """Whether a span is one of the anthropic SDK's own (by scope; by span name when the scope is unknown)."""
    if scope:
        return scope == SCOPE or scope.startswith(SCOPE + ".")
    return name in (MODEL_SPAN, TOOL_RUNNER_SPAN) or name.startswith(TOOL_SPAN_PREFIXES)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def blocks_text(blocks: Any) -> Any:
    """A tool result as the SDK records it (a list of content blocks): their text when all are text, else the
    blocks with text blocks as ``text`` parts."""
    if not isinstance(blocks, list):
        return blocks
    if all(isinstance(b, dict) and b.get("type") == "text" for b in blocks):
        return "".join(str(b.get("text") or "") for b in blocks)
    return [
        {"type": "text", "content": b.get("text")} if isinstance(b, dict) and b.get("type") == "text" else b
        for b in blocks
    ]


def _part(part: Any) -> Any:
    if not isinstance(part, dict):
        return part
    kind = part.get("type")
    if kind in _MEDIA:
        return {"type": semconv.PART_BLOB, "modality": _MEDIA[kind]}
    if kind == semconv.PART_TOOL_CALL_RESPONSE and "response" in part:
        return {**part, "response": blocks_text(part["response"])}
    return part


def split_messages(messages: Any, **extra: Any) -> list[dict[str, Any]]:
    """Each ``tool_call_response`` part in a message of its own with role ``tool``; the other parts stay in their
    message around them, in order (the contract's shape for tool results, :func:`.shapes.split_tool_responses`).
    ``extra`` goes on every message."""
    out: list[dict[str, Any]] = []

    def make(role: Any, parts: list[Any]) -> dict[str, Any]:
        return {"role": role, "parts": parts, **extra}

    for msg in messages if isinstance(messages, list) else []:
        if isinstance(msg, dict):
            parts = [_part(p) for p in msg.get("parts") or []]
            out.extend(shapes.split_tool_responses(msg.get("role") or "user", parts, make))
    return out


def _model_attributes(attrs: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(attrs)
    stop_reason = attrs.get(STOP_REASON)
    if isinstance(stop_reason, str) and semconv.RESPONSE_FINISH_REASONS not in attrs:
        out[semconv.RESPONSE_FINISH_REASONS] = [stop_reason]
    inputs = loads(attrs.get(semconv.INPUT_MESSAGES))
    if inputs is not None:
        out[semconv.INPUT_MESSAGES] = _dumps(split_messages(inputs))
    outputs = loads(attrs.get(semconv.OUTPUT_MESSAGES))
    if outputs is not None:
        reason = shapes.finish_reason(FINISH_REASONS, stop_reason) if isinstance(stop_reason, str) else ""
        out[semconv.OUTPUT_MESSAGES] = _dumps(split_messages(outputs, finish_reason=reason))
    system = loads(attrs.get(semconv.SYSTEM_INSTRUCTIONS))
    if isinstance(system, list):
        out[semconv.SYSTEM_INSTRUCTIONS] = _dumps([_part(p) for p in system])
    out.setdefault(semconv.OPERATION_NAME, semconv.OP_CHAT)
    return out


def _tool_attributes(attrs: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(attrs)
    content = out.pop(TOOL_RESULT_CONTENT, None)
    if content is not None and semconv.TOOL_CALL_RESULT not in out:
        result = blocks_text(loads(content))
        out[semconv.TOOL_CALL_RESULT] = result if isinstance(result, str) else _dumps(result)
    out.setdefault(semconv.OPERATION_NAME, semconv.OP_EXECUTE_TOOL)
    return out


def normalize(name: str, attributes: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A native span's name and attributes rewritten into the contract's (other spans come back unchanged)."""
    if name == MODEL_SPAN:
        attrs = _model_attributes(attributes)
        return semconv.span_name(semconv.OP_CHAT, attrs.get(semconv.REQUEST_MODEL)), attrs
    if name.startswith(TOOL_SPAN_PREFIXES):
        attrs = _tool_attributes(attributes)
        return semconv.span_name(semconv.OP_EXECUTE_TOOL, attrs.get(semconv.TOOL_NAME)), attrs
    if name == TOOL_RUNNER_SPAN:
        attrs = dict(attributes)
        attrs.setdefault(semconv.OPERATION_NAME, semconv.OP_INVOKE_AGENT)
        return name, attrs
    return name, dict(attributes)

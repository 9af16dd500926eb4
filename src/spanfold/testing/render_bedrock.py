"""Amazon Bedrock Runtime: Converse JSON and its event stream, and the ``invoke`` bodies of two model families.

* ``POST /model/{modelId}/converse`` -> ``{"output": {"message": ...}, "stopReason", "usage", "metrics"}``;
  ``/converse-stream`` -> event-stream messages ``messageStart``, per block (``contentBlockStart`` for a tool use)
  ``contentBlockDelta`` ... ``contentBlockStop``, ``messageStop``, ``metadata``;
* ``/invoke`` -> the model's own body: Anthropic Claude (``anthropic_version`` in the request) the Messages
  ``message``, any other (Amazon Nova) ``{"output": {"message": ...}, "stopReason", "usage"}``; usage also in the
  ``X-Amzn-Bedrock-*-Token-Count`` headers; ``/invoke-with-response-stream`` -> ``chunk`` events whose ``bytes`` are
  the family's own stream events (base64 JSON), the last with ``amazon-bedrock-invocationMetrics``;
* errors: the status, ``x-amzn-ErrorType`` naming the exception, ``{"message": ...}``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any, Final

from spanfold.testing.eventstream import EVENTSTREAM_CONTENT_TYPE, EventMessage
from spanfold.testing.render_anthropic import MessagesRenderer
from spanfold.testing.render_base import RenderContext
from spanfold.testing.replies import Reply, compact_json
from spanfold.testing.sse import split_json, split_text

#: The exception botocore raises for a status (``x-amzn-ErrorType``).
ERROR_TYPES: Final = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    503: "ServiceUnavailableException",
}
LATENCY_MS: Final = 100
_EVENT_KEYS: Final = ("messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop")


def _usage(reply: Reply, ctx: RenderContext, **extra: int) -> dict[str, int]:
    usage = ctx.usage(reply)
    return {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "totalTokens": usage.total_tokens,
        **extra,
    }


def converse_body(reply: Reply, ctx: RenderContext, **usage_extra: int) -> dict[str, Any]:
    calls = ctx.calls(reply, "tooluse_mock_")
    content: list[dict[str, Any]] = []
    if reply.content or (reply.content is not None and not calls):
        content.append({"text": reply.content})
    content.extend(
        {"toolUse": {"toolUseId": call_id, "name": call.name, "input": call.arguments}} for call_id, call in calls
    )
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use" if calls else "end_turn",
        "usage": _usage(reply, ctx, **usage_extra),
        "metrics": {"latencyMs": LATENCY_MS},
    }


def converse_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A Converse body as its ConverseStream events (each a one-key dict)."""
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    for index, block in enumerate(body["output"]["message"]["content"]):
        if "toolUse" in block:
            use = block["toolUse"]
            start: dict[str, Any] = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            events.append({"contentBlockStart": {"start": start, "contentBlockIndex": index}})
            pieces = split_json(compact_json(use["input"]))
            deltas: list[dict[str, Any]] = [{"toolUse": {"input": piece}} for piece in pieces]
        else:
            deltas = [{"text": piece} for piece in split_text(block["text"])]
        events.extend({"contentBlockDelta": {"delta": delta, "contentBlockIndex": index}} for delta in deltas)
        events.append({"contentBlockStop": {"contentBlockIndex": index}})
    events.append({"messageStop": {"stopReason": body["stopReason"]}})
    events.append({"metadata": {"usage": body["usage"], "metrics": {"latencyMs": LATENCY_MS}}})
    return events


def _event_message(event: dict[str, Any]) -> EventMessage:
    ((kind, payload),) = event.items()
    return EventMessage(kind, payload)


def _chunk(payload: dict[str, Any]) -> EventMessage:
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return EventMessage("chunk", {"bytes": base64.b64encode(data).decode("ascii")})


class _BedrockRenderer:
    stream_content_type = EVENTSTREAM_CONTENT_TYPE

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        return {"message": reply.message}

    def error_headers(self, reply: Reply) -> dict[str, str]:
        default = ERROR_TYPES.get(reply.status, "InternalServerException")
        return {
            "x-amzn-ErrorType": f"{reply.error_type or default}:http://internal.amazon.com/coral/com.amazon.bedrock/"
        }


class ConverseRenderer(_BedrockRenderer):
    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        return converse_body(reply, ctx)

    def events(self, body: dict[str, Any], ctx: RenderContext) -> Sequence[EventMessage]:
        return [_event_message(event) for event in converse_events(body)]

    def body_headers(self, body: dict[str, Any], ctx: RenderContext) -> dict[str, str]:
        return {}


def _is_claude(ctx: RenderContext) -> bool:
    return "anthropic_version" in ctx.request.body


class InvokeRenderer(_BedrockRenderer):
    """The Claude Messages body for a Claude request, the Nova body for any other."""

    _messages = MessagesRenderer()

    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        if _is_claude(ctx):
            return self._messages.body(reply, ctx)
        return converse_body(reply, ctx, cacheReadInputTokenCount=0, cacheWriteInputTokenCount=0)

    def _tokens(self, body: dict[str, Any]) -> tuple[int, int]:
        usage = body["usage"]
        if "inputTokens" in usage:
            return usage["inputTokens"], usage["outputTokens"]
        return usage["input_tokens"], usage["output_tokens"]

    def events(self, body: dict[str, Any], ctx: RenderContext) -> Sequence[EventMessage]:
        if _is_claude(ctx):
            payloads = [json.loads(event.data) for event in self._messages.events(body, ctx)]
        else:
            payloads = [event for event in converse_events(body) if not set(event).isdisjoint(_EVENT_KEYS)]
            payloads.append({"metadata": {"usage": body["usage"], "metrics": {}, "trace": {}}})
        input_tokens, output_tokens = self._tokens(body)
        payloads[-1]["amazon-bedrock-invocationMetrics"] = {
            "inputTokenCount": input_tokens,
            "outputTokenCount": output_tokens,
            "invocationLatency": LATENCY_MS,
            "firstByteLatency": LATENCY_MS // 2,
        }
        return [_chunk(payload) for payload in payloads]

    def body_headers(self, body: dict[str, Any], ctx: RenderContext) -> dict[str, str]:
        input_tokens, output_tokens = self._tokens(body)
        return {
            "X-Amzn-Bedrock-Input-Token-Count": str(input_tokens),
            "X-Amzn-Bedrock-Output-Token-Count": str(output_tokens),
            "X-Amzn-Bedrock-Invocation-Latency": str(LATENCY_MS),
        }

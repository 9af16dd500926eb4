"""Amazon Bedrock Runtime: Converse JSON and its event stream, and the ``invoke`` bodies of two model families.

* ``POST /model/{modelId}/converse`` -> ``{"output": {"message": ...}, "stopReason", "usage", "metrics"}``;
  ``/converse-stream`` -> event-stream messages ``messageStart``, per block (``contentBlockStart`` for a tool use)
  ``contentBlockDelta`` ... ``contentBlockStop``, ``messageStop``, ``metadata``;
* ``/invoke`` -> the model's own body: Anthropic Claude (``anthropic_version`` in the request) the Messages
  ``message``, Meta Llama (a ``prompt`` body) ``{"generation", "prompt_token_count", "generation_token_count",
  "stop_reason"}``, any other (Amazon Nova) ``{"output": {"message": ...}, "stopReason", "usage"}``; usage also in the
  ``X-Amzn-Bedrock-*-Token-Count`` headers; ``/invoke-with-response-stream`` -> ``chunk`` events whose ``bytes`` are
  the family's own stream events (base64 JSON), the last with ``amazon-bedrock-invocationMetrics``;
* errors: the status, ``x-amzn-ErrorType`` naming the exception, ``{"message": ...}``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any, Final

from spanfold.testing.replies import Reply, compact_json
from spanfold.testing.wire.anthropic import MessagesRenderer
from spanfold.testing.wire.base import RenderContext
from spanfold.testing.wire.eventstream import EVENTSTREAM_CONTENT_TYPE, EventMessage
from spanfold.testing.wire.sse import split_json, split_text

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


def _block_stream(block: dict[str, Any]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """What ``contentBlockStart`` carries for a block (None: the first delta starts it) and its deltas, as
    ConverseStream sends each kind: text, tool input JSON and reasoning in fragments (a reasoning's signature, or its
    redacted bytes, in a delta of their own), a server tool's result items, an image's source, cited text as text
    followed by its citations."""
    if "toolUse" in block:
        use = block["toolUse"]
        pieces = split_json(compact_json(use["input"]))
        return {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}, [
            {"toolUse": {"input": piece}} for piece in pieces
        ]
    if "toolResult" in block:
        result = block["toolResult"]
        start = {"toolResult": {"toolUseId": result["toolUseId"], "status": result.get("status", "success")}}
        return start, [{"toolResult": [item]} for item in result.get("content", [])]
    if "image" in block:
        image = block["image"]
        return {"image": {"format": image["format"]}}, [{"image": {"source": image["source"]}}]
    if "reasoningContent" in block:
        reasoning = block["reasoningContent"]
        if "redactedContent" in reasoning:
            return None, [{"reasoningContent": {"redactedContent": reasoning["redactedContent"]}}]
        text = reasoning["reasoningText"]
        deltas = [{"reasoningContent": {"text": piece}} for piece in split_text(text["text"])]
        if "signature" in text:
            deltas.append({"reasoningContent": {"signature": text["signature"]}})
        return None, deltas
    if "citationsContent" in block:
        cited = block["citationsContent"]
        texts = [{"text": piece} for item in cited["content"] for piece in split_text(item["text"])]
        return None, texts + [{"citation": citation} for citation in cited.get("citations", [])]
    return None, [{"text": piece} for piece in split_text(block["text"])]


def converse_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A Converse body as its ConverseStream events (each a one-key dict)."""
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    for index, block in enumerate(body["output"]["message"]["content"]):
        start, deltas = _block_stream(block)
        if start is not None:
            events.append({"contentBlockStart": {"start": start, "contentBlockIndex": index}})
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


def _is_llama(ctx: RenderContext) -> bool:
    """Meta Llama (and the other families with a ``prompt`` body): text in, ``generation`` out."""
    return "prompt" in ctx.request.body and "messages" not in ctx.request.body


def llama_body(reply: Reply, ctx: RenderContext) -> dict[str, Any]:
    usage = ctx.usage(reply)
    return {
        "generation": reply.content or "",
        "prompt_token_count": usage.input_tokens,
        "generation_token_count": usage.output_tokens,
        "stop_reason": "stop",
    }


def llama_chunks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A Llama body streamed: a ``generation`` fragment per chunk; the counts ride along (the prompt's in the
    first, a running count of generated tokens), the stop reason in the last; no usage object."""
    pieces = split_text(body["generation"]) or [""]
    return [
        {
            "generation": piece,
            "prompt_token_count": body["prompt_token_count"] if i == 0 else None,
            "generation_token_count": i + 1,
            "stop_reason": body["stop_reason"] if i == len(pieces) - 1 else None,
        }
        for i, piece in enumerate(pieces)
    ]


class InvokeRenderer(_BedrockRenderer):
    """The Claude Messages body for a Claude request, the Llama body for a ``prompt`` one, the Nova body for any
    other."""

    _messages = MessagesRenderer()

    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        if _is_claude(ctx):
            return self._messages.body(reply, ctx)
        if _is_llama(ctx):
            return llama_body(reply, ctx)
        return converse_body(reply, ctx, cacheReadInputTokenCount=0, cacheWriteInputTokenCount=0)

    def _tokens(self, body: dict[str, Any]) -> tuple[int, int]:
        if "generation" in body:
            return body["prompt_token_count"], body["generation_token_count"]
        usage = body["usage"]
        if "inputTokens" in usage:
            return usage["inputTokens"], usage["outputTokens"]
        return usage["input_tokens"], usage["output_tokens"]

    def events(self, body: dict[str, Any], ctx: RenderContext) -> Sequence[EventMessage]:
        if _is_claude(ctx):
            payloads = [json.loads(event.data) for event in self._messages.events(body, ctx)]
        elif _is_llama(ctx):
            payloads = llama_chunks(body)
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

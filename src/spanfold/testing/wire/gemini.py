"""Gemini ``generateContent``: ``GenerateContentResponse`` JSON and the ``streamGenerateContent?alt=sse`` stream.

The wire format of the Gemini Developer API and Vertex AI (the same JSON, camelCase): ``candidates[].content.parts[]``
(``{"text"}``, ``{"functionCall": {"name", "args"}}``), ``finishReason``, ``usageMetadata``, ``modelVersion``,
``responseId``. Function calls carry no ``id`` (as the Developer API sends them) unless the reply's
:class:`~spanfold.testing.replies.ToolCallSpec` names one. The stream is ``data: {...}`` events, each a whole
``GenerateContentResponse``: the text word by word, each function call in a chunk of its own, the finish reason and
the complete usage in the last chunk (the others carry the prompt count only). Errors are Google API errors:
``{"error": {"code", "message", "status"}}``.
"""

from __future__ import annotations

from typing import Any

from spanfold.testing.replies import Reply
from spanfold.testing.wire.base import RenderContext
from spanfold.testing.wire.sse import SSEEvent, json_event, split_text

#: HTTP status -> the Google API error status (``google.rpc.Code`` name).
_STATUS: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _chunk(body: dict[str, Any], parts: list[dict[str, Any]], usage: dict[str, Any], last: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if last:
        candidate["finishReason"] = body["candidates"][0]["finishReason"]
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": body["modelVersion"],
        "responseId": body["responseId"],
    }


class GeminiRenderer:
    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        if reply.content or (reply.content is not None and not reply.tool_calls):
            parts.append({"text": reply.content})
        for call in reply.tool_calls:
            function_call: dict[str, Any] = {"name": call.name, "args": call.arguments}
            if call.id is not None:
                function_call["id"] = call.id
            parts.append({"functionCall": function_call})
        usage = ctx.usage(reply)
        return {
            "candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {
                "promptTokenCount": usage.input_tokens,
                "candidatesTokenCount": usage.output_tokens,
                "totalTokenCount": usage.total_tokens,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": usage.input_tokens}],
            },
            "modelVersion": ctx.request.model,
            "responseId": ctx.ids.next("gemini_mock_"),
        }

    def events(self, body: dict[str, Any], ctx: RenderContext) -> list[SSEEvent]:
        parts = body["candidates"][0]["content"]["parts"]
        pieces: list[dict[str, Any]] = []
        for part in parts:
            if "text" in part:
                pieces.extend({**part, "text": word} for word in split_text(part["text"]) or [""])
            else:
                pieces.append(part)
        usage = body["usageMetadata"]
        running = {"promptTokenCount": usage["promptTokenCount"], "totalTokenCount": usage["promptTokenCount"]}
        if not pieces:
            pieces = [{"text": ""}]
        last = len(pieces) - 1
        return [
            json_event(_chunk(body, [piece], usage if i == last else running, i == last))
            for i, piece in enumerate(pieces)
        ]

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        status = reply.error_type or _STATUS.get(reply.status, "INTERNAL" if reply.status >= 500 else "UNKNOWN")
        return {"error": {"code": reply.status, "message": reply.message, "status": status}}

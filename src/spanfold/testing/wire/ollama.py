"""Ollama ``POST /api/chat`` and ``/api/generate``: one JSON object, or NDJSON (one object per line) when streaming.

Each streamed object holds a fragment (``message.content`` for chat, ``response`` for generate) and ``done: false``;
tool calls come whole (arguments as objects, no ids); the last object has ``done: true``, ``done_reason`` and the
counts and durations (``prompt_eval_count``, ``eval_count``, nanoseconds). Errors are ``{"error": "..."}``.
"""

from __future__ import annotations

import json
from typing import Any

from spanfold.testing.replies import Reply
from spanfold.testing.wire.base import RenderContext
from spanfold.testing.wire.sse import SSEEvent, split_text

NDJSON_CONTENT_TYPE = "application/x-ndjson"
#: Every ``created_at`` the mock writes (traces stay reproducible).
CREATED_AT = "2025-01-01T00:00:00.000000Z"


class NDJSONLine(SSEEvent):
    """One JSON object on its own line (the server frames a stream's pieces the same way, whatever they are)."""

    def encode(self) -> bytes:
        return (self.data + "\n").encode("utf-8")


def _line(payload: dict[str, Any]) -> NDJSONLine:
    return NDJSONLine(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))


class OllamaRenderer:
    """Chat (``generate=False``) or generate."""

    stream_content_type = NDJSON_CONTENT_TYPE

    def __init__(self, generate: bool = False) -> None:
        self.generate = generate

    def _fragment(self, text: str, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        if self.generate:
            return {"response": text}
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = calls
        return {"message": message}

    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        usage = ctx.usage(reply)
        calls = [{"function": {"name": c.name, "arguments": c.arguments}} for c in reply.tool_calls]
        return {
            "model": ctx.request.model,
            "created_at": CREATED_AT,
            **self._fragment(reply.content or "", calls),
            "done": True,
            "done_reason": "stop",
            "total_duration": 5_191_566_416,
            "load_duration": 2_154_458,
            "prompt_eval_count": usage.input_tokens,
            "prompt_eval_duration": 383_809_000,
            "eval_count": usage.output_tokens,
            "eval_duration": 4_799_921_000,
        }

    def events(self, body: dict[str, Any], ctx: RenderContext) -> list[SSEEvent]:
        head = {"model": body["model"], "created_at": body["created_at"]}
        text = body["response"] if self.generate else body["message"]["content"]
        calls = [] if self.generate else body["message"].get("tool_calls", [])
        lines: list[SSEEvent] = [_line({**head, **self._fragment(piece), "done": False}) for piece in split_text(text)]
        if calls:
            lines.append(_line({**head, **self._fragment("", calls), "done": False}))
        last = {key: value for key, value in body.items() if key not in ("message", "response")}
        lines.append(_line({**last, **self._fragment(""), "done": True}))
        return lines

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        return {"error": reply.message}

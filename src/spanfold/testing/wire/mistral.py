"""Mistral chat and agents completions (``POST /v1/chat/completions``, ``/v1/agents/completions``): the JSON body and
the SSE stream of ``chat.completion.chunk``s ending in ``[DONE]``.

Mistral's own details: tool calls carry an ``index`` and 9-character ids, the message has ``prefix: false``, a stream
sends each tool call whole in one delta and the usage in the chunk with the finish reason, and errors are
``{"object": "error", "message", "type", "param", "code"}``.
"""

from __future__ import annotations

from typing import Any

from spanfold.testing.replies import Reply
from spanfold.testing.wire.base import RenderContext
from spanfold.testing.wire.sse import DONE, SSEEvent, json_event, split_text

#: ``mockcall1``, ``mockcall2``...: Mistral's tool-call ids are nine letters and digits.
CALL_PREFIX = "mockcall"


class MistralRenderer:
    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        calls = ctx.calls(reply, CALL_PREFIX)
        usage = ctx.usage(reply)
        message: dict[str, Any] = {
            "role": "assistant",
            "content": reply.content or "",
            "tool_calls": None,
            "prefix": False,
        }
        if calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json},
                    "index": index,
                }
                for index, (call_id, call) in enumerate(calls)
            ]
        return {
            "id": ctx.ids.next("cmpl-mock"),
            "object": "chat.completion",
            "model": ctx.request.model,
            "usage": {
                "prompt_tokens": usage.input_tokens,
                "completion_tokens": usage.output_tokens,
                "total_tokens": usage.total_tokens,
            },
            "created": ctx.created,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        }

    def events(self, body: dict[str, Any], ctx: RenderContext) -> list[SSEEvent]:
        """Role chunk, text deltas, then the last chunk: the tool calls (if any), the finish reason and the usage."""
        choice = body["choices"][0]
        message = choice["message"]

        def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> SSEEvent:
            choices = [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
            payload = {"id": body["id"], "object": "chat.completion.chunk", "created": body["created"]}
            return json_event({**payload, "model": body["model"], "choices": choices, **extra})

        events = [chunk({"role": "assistant", "content": ""})]
        events.extend(chunk({"content": piece}) for piece in split_text(message["content"]))
        last: dict[str, Any] = {"content": ""}
        if message["tool_calls"]:
            last["tool_calls"] = message["tool_calls"]
        events.append(chunk(last, choice["finish_reason"], usage=body["usage"]))
        events.append(DONE)
        return events

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        kind = reply.error_type or ("internal_server_error" if reply.status >= 500 else "invalid_request_error")
        return {"object": "error", "message": reply.message, "type": kind, "param": None, "code": reply.error_code}

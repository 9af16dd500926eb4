"""Groq Chat Completions (``POST /openai/v1/chat/completions``): OpenAI's shapes plus Groq's own fields.

A body carries ``x_groq.id`` (the request id) and Groq's timing fields in ``usage``. A stream sends each tool call whole
in one delta (never argument fragments), and its last chunk, the one with the finish reason, carries the usage in
``x_groq.usage`` whether or not ``stream_options.include_usage`` was asked for (which adds OpenAI's usage chunk too).
"""

from __future__ import annotations

from typing import Any

from spanfold.testing.replies import Reply
from spanfold.testing.wire.base import RenderContext
from spanfold.testing.wire.chat import ChatRenderer
from spanfold.testing.wire.sse import DONE, SSEEvent, json_event, split_text


def _usage(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "queue_time": 0.0125,
        "prompt_tokens": prompt,
        "prompt_time": 0.0031,
        "completion_tokens": completion,
        "completion_time": 0.0452,
        "total_tokens": prompt + completion,
        "total_time": 0.0483,
    }


class GroqChatRenderer(ChatRenderer):
    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        body = super().body(reply, ctx)
        usage = ctx.usage(reply)
        for choice in body["choices"]:
            message = choice["message"]
            choice["message"] = {"role": "assistant", "content": message["content"]}
            if "tool_calls" in message:
                choice["message"]["tool_calls"] = message["tool_calls"]
        body["usage"] = _usage(usage.input_tokens, usage.output_tokens)
        body["system_fingerprint"] = "fp_mock0groq"
        body["service_tier"] = "on_demand"
        body["x_groq"] = {"id": ctx.ids.next("req_mock_")}
        return body

    def events(self, body: dict[str, Any], ctx: RenderContext) -> list[SSEEvent]:
        request_id = body["x_groq"]["id"]
        choice = body["choices"][0]
        message = choice["message"]

        def chunk(choices: list[dict[str, Any]], **extra: Any) -> SSEEvent:
            payload = {
                "id": body["id"],
                "object": "chat.completion.chunk",
                "created": body["created"],
                "model": body["model"],
                "system_fingerprint": body["system_fingerprint"],
                "choices": choices,
                **extra,
            }
            return json_event(payload)

        def delta(fields: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> SSEEvent:
            return chunk([{"index": 0, "delta": fields, "logprobs": None, "finish_reason": finish_reason}], **extra)

        events = [delta({"role": "assistant", "content": ""}, x_groq={"id": request_id})]
        events.extend(delta({"content": piece}) for piece in split_text(message["content"] or ""))
        for index, call in enumerate(message.get("tool_calls", [])):
            events.append(delta({"tool_calls": [{**call, "index": index}]}))
        events.append(delta({}, choice["finish_reason"], x_groq={"id": request_id, "usage": body["usage"]}))
        if ctx.request.include_usage:
            events.append(chunk([], usage=body["usage"], x_groq={"id": request_id}))
        events.append(DONE)
        return events

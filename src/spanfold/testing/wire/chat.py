"""OpenAI Chat Completions: ``chat.completion`` JSON and ``chat.completion.chunk`` streams ending in ``[DONE]``."""

from __future__ import annotations

from typing import Any

from spanfold.testing.errors import openai_error
from spanfold.testing.replies import Reply, Usage
from spanfold.testing.wire.base import RenderContext
from spanfold.testing.wire.sse import DONE, SSEEvent, json_event, split_json, split_text


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


class ChatRenderer:
    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        completion_id = ctx.ids.next("chatcmpl-mock-")
        calls = ctx.calls(reply, "call_mock_")
        message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None, "annotations": []}
        if calls:
            message["tool_calls"] = [
                {"id": call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments_json}}
                for call_id, call in calls
            ]
        return {
            "id": completion_id,
            "object": "chat.completion",
            "created": ctx.created,
            "model": ctx.request.model,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls" if calls else "stop"}
            ],
            "usage": _usage(ctx.usage(reply)),
            "service_tier": "default",
            "system_fingerprint": None,
        }

    def events(self, body: dict[str, Any], ctx: RenderContext) -> list[SSEEvent]:
        """Role chunk, text deltas, each tool call (id and name first, then its arguments in fragments), the finish
        chunk, the usage chunk when ``stream_options.include_usage`` is set, ``[DONE]``."""
        include_usage = ctx.request.include_usage
        choice = body["choices"][0]
        message = choice["message"]

        def chunk(choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> SSEEvent:
            payload: dict[str, Any] = {
                "id": body["id"],
                "object": "chat.completion.chunk",
                "created": body["created"],
                "model": body["model"],
                "service_tier": body["service_tier"],
                "system_fingerprint": None,
                "choices": choices,
            }
            if include_usage:
                payload["usage"] = usage
            return json_event(payload)

        def delta(fields: dict[str, Any], finish_reason: str | None = None) -> SSEEvent:
            return chunk([{"index": 0, "delta": fields, "logprobs": None, "finish_reason": finish_reason}])

        text = message["content"]
        events = [delta({"role": "assistant", "content": None if text is None else "", "refusal": None})]
        events.extend(delta({"content": piece}) for piece in split_text(text or ""))
        for index, call in enumerate(message.get("tool_calls", [])):
            function = call["function"]
            first = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": function["name"], "arguments": ""},
            }
            events.append(delta({"tool_calls": [first]}))
            events.extend(
                delta({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                for piece in split_json(function["arguments"])
            )
        events.append(delta({}, choice["finish_reason"]))
        if include_usage:
            events.append(chunk([], body["usage"]))
        events.append(DONE)
        return events

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        return openai_error(reply)

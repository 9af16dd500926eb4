"""Cohere v2 chat (``POST /v2/chat``): the JSON body and the typed SSE event stream.

The body: ``id``, ``finish_reason`` (``COMPLETE``, ``TOOL_CALL``...), ``message`` (``role``, ``content`` items,
``tool_plan`` and ``tool_calls`` with string arguments), ``usage`` (``billed_units`` and ``tokens``). The stream, each
event named by ``event:`` and its ``type``: ``message-start``; per text block ``content-start`` / ``content-delta`` /
``content-end``; for tool calls ``tool-plan-delta``s, then per call ``tool-call-start`` (id, name, empty arguments) /
``tool-call-delta``s / ``tool-call-end``; ``message-end`` (finish reason, usage). Errors are ``{"id", "message"}``.
"""

from __future__ import annotations

from typing import Any

from spanfold.testing.replies import Reply
from spanfold.testing.wire.base import RenderContext
from spanfold.testing.wire.sse import SSEEvent, json_event, split_json, split_text

CALL_PREFIX = "toolcall_mock_"


def _event(payload: dict[str, Any]) -> SSEEvent:
    return json_event(payload, str(payload["type"]))


def tool_plan(reply: Reply) -> str:
    """The plan Cohere's models state before calling tools."""
    names = ", ".join(call.name for call in reply.tool_calls)
    return f"I will call {names} to answer."


class CohereRenderer:
    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        calls = ctx.calls(reply, CALL_PREFIX)
        usage = ctx.usage(reply)
        message: dict[str, Any] = {"role": "assistant"}
        if calls:
            message["tool_plan"] = tool_plan(reply)
            message["tool_calls"] = [
                {"id": call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments_json}}
                for call_id, call in calls
            ]
        if reply.content:
            message["content"] = [{"type": "text", "text": reply.content}]
        counts = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
        return {
            "id": ctx.ids.next("mock-cohere-"),
            "message": message,
            "finish_reason": "TOOL_CALL" if calls else "COMPLETE",
            "usage": {"billed_units": counts, "tokens": counts},
        }

    def events(self, body: dict[str, Any], ctx: RenderContext) -> list[SSEEvent]:
        message = body["message"]
        start = {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}
        events = [_event({"id": body["id"], "type": "message-start", "delta": {"message": start}})]
        for index, item in enumerate(message.get("content", [])):
            empty = {"message": {"content": {"type": "text", "text": ""}}}
            events.append(_event({"type": "content-start", "index": index, "delta": empty}))
            events.extend(
                _event({"type": "content-delta", "index": index, "delta": {"message": {"content": {"text": piece}}}})
                for piece in split_text(item["text"])
            )
            events.append(_event({"type": "content-end", "index": index}))
        events.extend(
            _event({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": piece}}})
            for piece in split_text(message.get("tool_plan", ""))
        )
        for index, call in enumerate(message.get("tool_calls", [])):
            function = call["function"]
            first = {**call, "function": {"name": function["name"], "arguments": ""}}
            events.append(
                _event({"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": first}}})
            )
            events.extend(
                _event(
                    {
                        "type": "tool-call-delta",
                        "index": index,
                        "delta": {"message": {"tool_calls": {"function": {"arguments": piece}}}},
                    }
                )
                for piece in split_json(function["arguments"])
            )
            events.append(_event({"type": "tool-call-end", "index": index}))
        end = {"finish_reason": body["finish_reason"], "usage": body["usage"]}
        events.append(_event({"type": "message-end", "delta": end}))
        return events

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        return {"id": ctx.ids.next("mock-cohere-error-"), "message": reply.message}

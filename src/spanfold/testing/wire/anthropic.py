"""Anthropic Messages: ``message`` JSON and the ``message_start`` ... ``message_stop`` event stream."""

from __future__ import annotations

from typing import Any

from spanfold.testing.errors import anthropic_error
from spanfold.testing.replies import Reply, compact_json
from spanfold.testing.wire.base import RenderContext
from spanfold.testing.wire.sse import SSEEvent, json_event, split_json, split_text


def _event(payload: dict[str, Any]) -> SSEEvent:
    return json_event(payload, str(payload["type"]))


#: Blocks whose ``input`` streams as JSON fragments.
_CALLS = ("tool_use", "server_tool_use", "mcp_tool_use")


def _block_deltas(index: int, block: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The block as ``content_block_start`` announces it (empty) and the deltas that fill it: a call's input as
    JSON fragments, text and thinking word by word (a thinking's signature in a delta of its own), a compaction's
    summary in one delta; any other block (``redacted_thinking``, a server tool's result) whole in its start."""
    kind = block["type"]
    empty: dict[str, Any]
    deltas: list[dict[str, Any]]
    if kind in _CALLS:
        empty = {**block, "input": {}}
        pieces = ["", *split_json(compact_json(block["input"]))]
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
    elif kind == "text":
        empty = {**block, "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in split_text(block["text"])]
    elif kind == "thinking":
        empty = {**block, "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": piece} for piece in split_text(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block.get("signature", "")})
    elif kind == "compaction":
        empty = {**block, "content": None}
        deltas = [{"type": "compaction_delta", "content": block.get("content")}]
    else:
        empty, deltas = block, []
    return empty, [{"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas]


class MessagesRenderer:
    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        message_id = ctx.ids.next("msg_mock_")
        calls = ctx.calls(reply, "toolu_mock_")
        content: list[dict[str, Any]] = []
        if reply.content or (reply.content is not None and not calls):
            content.append({"type": "text", "text": reply.content})
        content.extend(
            {"type": "tool_use", "id": call_id, "name": call.name, "input": call.arguments} for call_id, call in calls
        )
        usage = ctx.usage(reply)
        return {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": ctx.request.model,
            "content": content,
            "stop_reason": "tool_use" if calls else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage.input_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                "output_tokens": usage.output_tokens,
                "service_tier": "standard",
            },
        }

    def events(self, body: dict[str, Any], ctx: RenderContext) -> list[SSEEvent]:
        """``message_start``, per block ``content_block_start`` / deltas / ``content_block_stop`` (a ``ping`` after
        the first start), ``message_delta`` with the stop reason and usage, ``message_stop``."""
        usage = body["usage"]
        start = {**body, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        events = [_event({"type": "message_start", "message": start})]
        for index, block in enumerate(body["content"]):
            empty, deltas = _block_deltas(index, block)
            events.append(_event({"type": "content_block_start", "index": index, "content_block": empty}))
            if index == 0:
                events.append(_event({"type": "ping"}))
            events.extend(_event(delta) for delta in deltas)
            events.append(_event({"type": "content_block_stop", "index": index}))
        if not body["content"]:
            events.append(_event({"type": "ping"}))
        final_usage = {
            key: usage[key]
            for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
        }
        events.append(
            _event(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
                    "usage": final_usage,
                }
            )
        )
        events.append(_event({"type": "message_stop"}))
        return events

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        return anthropic_error(reply)

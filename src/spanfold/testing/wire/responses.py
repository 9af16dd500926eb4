"""OpenAI Responses API: ``response`` JSON and the ``response.created`` ... ``response.completed`` event stream."""

from __future__ import annotations

import itertools
from typing import Any

from spanfold.testing.errors import openai_error
from spanfold.testing.replies import Reply, Usage
from spanfold.testing.wire.base import RenderContext
from spanfold.testing.wire.sse import SSEEvent, json_event, split_json, split_text


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.total_tokens,
    }


def _output(reply: Reply, ctx: RenderContext) -> list[dict[str, Any]]:
    calls = ctx.calls(reply, "call_mock_")
    output: list[dict[str, Any]] = []
    if reply.content or (reply.content is not None and not calls):
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": reply.content}
        output.append(
            {
                "id": ctx.ids.next("msg_mock_"),
                "type": "message",
                "status": "completed",
                "content": [part],
                "role": "assistant",
            }
        )
    output.extend(
        {
            "id": ctx.ids.next("fc_mock_"),
            "type": "function_call",
            "status": "completed",
            "arguments": call.arguments_json,
            "call_id": call_id,
            "name": call.name,
        }
        for call_id, call in calls
    )
    return output


def _item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    """``output_item.added``, the item's content / argument events, ``output_item.done`` (without sequence numbers)."""
    where = {"item_id": item["id"], "output_index": index}
    events: list[dict[str, Any]] = []
    if item["type"] == "function_call":
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "status": "in_progress", "arguments": ""},
            }
        )
        events.extend(
            {"type": "response.function_call_arguments.delta", **where, "delta": piece}
            for piece in split_json(item["arguments"])
        )
        events.append(
            {
                "type": "response.function_call_arguments.done",
                **where,
                "name": item["name"],
                "arguments": item["arguments"],
            }
        )
    else:
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "status": "in_progress", "content": []},
            }
        )
        for content_index, part in enumerate(item["content"]):
            at = {**where, "content_index": content_index}
            events.append({"type": "response.content_part.added", **at, "part": {**part, "text": ""}})
            events.extend(
                {"type": "response.output_text.delta", **at, "delta": piece, "logprobs": []}
                for piece in split_text(part["text"])
            )
            events.append({"type": "response.output_text.done", **at, "text": part["text"], "logprobs": []})
            events.append({"type": "response.content_part.done", **at, "part": part})
    events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return events


class ResponsesRenderer:
    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        """The ``response`` object; also remembered for later requests naming it as ``previous_response_id``."""
        request = ctx.request.body
        response_id = ctx.ids.next("resp_mock_")
        output = _output(reply, ctx)
        ctx.store.save(response_id, [*ctx.request.history, *ctx.request.input_items, *output])
        return {
            "id": response_id,
            "object": "response",
            "created_at": ctx.created,
            "status": "completed",
            "background": False,
            "completed_at": ctx.created,
            "error": None,
            "incomplete_details": None,
            "instructions": request.get("instructions"),
            "max_output_tokens": request.get("max_output_tokens"),
            "max_tool_calls": request.get("max_tool_calls"),
            "model": ctx.request.model,
            "output": output,
            "parallel_tool_calls": request.get("parallel_tool_calls", True),
            "previous_response_id": request.get("previous_response_id"),
            "prompt_cache_key": request.get("prompt_cache_key"),
            "reasoning": {"effort": None, "summary": None},
            "safety_identifier": None,
            "service_tier": "default",
            "store": request.get("store", True),
            "temperature": request.get("temperature", 1.0),
            "text": request.get("text", {"format": {"type": "text"}, "verbosity": "medium"}),
            "tool_choice": request.get("tool_choice", "auto"),
            "tools": request.get("tools", []),
            "top_logprobs": request.get("top_logprobs", 0),
            "top_p": request.get("top_p", 1.0),
            "truncation": request.get("truncation", "disabled"),
            "usage": _usage(ctx.usage(reply)),
            "user": None,
            "metadata": request.get("metadata", {}),
        }

    def events(self, body: dict[str, Any], ctx: RenderContext) -> list[SSEEvent]:
        """Lifecycle events around each output item's events, numbered by ``sequence_number`` from 0."""
        in_progress = {**body, "status": "in_progress", "completed_at": None, "output": [], "usage": None}
        payloads: list[dict[str, Any]] = [
            {"type": "response.created", "response": in_progress},
            {"type": "response.in_progress", "response": in_progress},
        ]
        for index, item in enumerate(body["output"]):
            payloads.extend(_item_events(index, item))
        payloads.append({"type": "response.completed", "response": body})
        numbers = itertools.count()
        return [json_event({**payload, "sequence_number": next(numbers)}, str(payload["type"])) for payload in payloads]

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        param = "previous_response_id" if reply.error_code == "previous_response_not_found" else None
        return openai_error(reply, param)

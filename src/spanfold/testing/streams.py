"""One streamed reply read to its end into the assistant message it spells out, for the SDKs whose streams have no
helper that does it: a raw Chat Completions stream (groq, mistralai, litellm), Cohere v2's events, Bedrock's
``converse_stream``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


def chat_message(chunks: Iterable[Any]) -> dict[str, Any]:
    """The assistant message (a dict, as the request sends it back) a raw Chat Completions stream spells out."""
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            delta = choice.delta
            text.append(delta.content or "")
            for call in delta.tool_calls or []:
                entry = calls.setdefault(
                    call.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                )
                entry["id"] = call.id or entry["id"]
                if call.function is not None:
                    entry["function"]["name"] += call.function.name or ""
                    entry["function"]["arguments"] += call.function.arguments or ""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def cohere_message(events: Iterable[Any]) -> dict[str, Any]:
    """The assistant message a Cohere v2 event stream spells out: text, ``tool_plan``, tool calls."""
    text: list[str] = []
    plan: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for event in events:
        delta = getattr(event, "delta", None)
        message: Any = getattr(delta, "message", None)
        if event.type == "content-delta":
            text.append(message.content.text or "")
        elif event.type == "tool-plan-delta":
            plan.append(message.tool_plan or "")
        elif event.type == "tool-call-start":
            call = message.tool_calls
            calls[event.index] = {"id": call.id, "type": "function", "function": call.function.model_dump()}
        elif event.type == "tool-call-delta":
            calls[event.index]["function"]["arguments"] += message.tool_calls.function.arguments or ""
    out: dict[str, Any] = {"role": "assistant"}
    if calls:
        out.update(tool_plan="".join(plan), tool_calls=[calls[i] for i in sorted(calls)])
    if text:
        out["content"] = "".join(text)
    return out


def converse_message(client: Any, request: dict[str, Any]) -> dict[str, Any]:
    """The assistant message a Bedrock ``converse_stream`` call streams, assembled from its events."""
    blocks: dict[int, dict[str, Any]] = {}
    for event in client.converse_stream(**request)["stream"]:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            blocks[start["contentBlockIndex"]] = {"toolUse": {**start["start"]["toolUse"], "input": ""}}
        elif "contentBlockDelta" in event:
            delta = event["contentBlockDelta"]
            block = blocks.setdefault(delta["contentBlockIndex"], {"text": ""})
            if "text" in delta["delta"]:
                block["text"] += delta["delta"]["text"]
            elif "toolUse" in delta["delta"]:
                block["toolUse"]["input"] += delta["delta"]["toolUse"]["input"]
    for block in blocks.values():
        if "toolUse" in block:
            block["toolUse"]["input"] = json.loads(block["toolUse"]["input"] or "{}")
    return {"role": "assistant", "content": [blocks[index] for index in sorted(blocks)]}

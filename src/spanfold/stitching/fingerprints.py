"""Fingerprints of GenAI semconv messages: which later call's history a call's inputs and outputs are the start of.

A model call's inputs are the messages it was sent; the next call of the same run re-sends them, followed by this
call's output (as the provider takes it back) and what came after (tool results, a user turn). The fingerprints are
per *part*, so they do not depend on how a provider groups parts into messages (the Responses API and Gemini merge
or split turns differently on the way in and on the way out):

* a text part: role and text (an empty one is left out); a media part (blob, uri, file): role and what identifies it;
* a tool call: its id and name (without an id: its name and canonical arguments);
* a tool result: its call id (without one: its canonical response): a result's text may be re-encoded on the way back;
* reasoning and parts of unknown types are left out: a provider is not bound to send them back.

They are hashable tuples of what the messages hold, computed in the process (never written anywhere).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from spanfold.stitching.pairing import args_key

Fingerprint = Hashable


def _part(role: Any, part: dict[str, Any]) -> Fingerprint | None:
    kind = part.get("type")
    if kind == "text":
        content = part.get("content")
        return ("t", role, content) if content else None  # an empty text is sent back as none, or the other way
    if kind == "tool_call":
        call_id = part.get("id")
        if call_id:
            return ("c", call_id, part.get("name"))
        return ("c", None, part.get("name"), args_key(part.get("arguments")))
    if kind == "tool_call_response":
        call_id = part.get("id")
        return ("r", call_id) if call_id else ("r", None, args_key(part.get("response")))
    if kind in ("blob", "uri", "file"):
        return ("m", role, kind, part.get("content") or part.get("uri") or part.get("file_id"))
    return None


def message_prints(message: Any) -> tuple[Fingerprint, ...]:
    """The fingerprints of one semconv message (a parsed ``gen_ai.input.messages`` / ``output.messages`` element:
    JSON, so its objects are dicts)."""
    if not isinstance(message, dict):
        return ()
    role = message.get("role")
    parts = message.get("parts")
    if not isinstance(parts, list):
        return ()
    out = []
    for part in parts:
        if isinstance(part, dict):
            fp = _part(role, part)
            if fp is not None:
                out.append(fp)
    return tuple(out)


def tool_calls(messages: Iterable[Any]) -> list[tuple[Any, Any, Any]]:
    """``(id, name, arguments)`` of the tool calls in ``messages`` (parsed semconv messages), in order."""
    out = []
    for message in messages:
        parts = message.get("parts") if isinstance(message, dict) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict) and part.get("type") == "tool_call":
                out.append((part.get("id"), part.get("name"), part.get("arguments")))
    return out

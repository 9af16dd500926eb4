"""The message shapes foreign producers share, rewritten into the contract's messages (:mod:`spanfold.semconv`).

Used by the dialect modules (OpenLLMetry, OpenInference, the official instrumentation's log events):

* **chat-shaped** messages, as the OpenAI Chat Completions API takes them: a role, ``content`` (a string, or a list
  of OpenAI content parts ``text`` / ``image_url``, or of Anthropic blocks ``text`` / ``image`` / ``tool_use`` /
  ``tool_result``; OpenLLMetry writes such a list as its JSON string), tool calls and a ``tool_call_id``
  (:func:`chat_message`). ``tool_result`` blocks become messages of their own with role ``tool``, as the contract
  has them;
* the same messages **flattened into indexed span attributes** (``gen_ai.prompt.0.role``,
  ``llm.input_messages.0.message.tool_calls.1.tool_call.id``): :func:`indexed` groups them back in one pass over
  the attributes; :func:`messages_in_order` counts the messages a span lost to the SDK's attribute count limit.

Linear in the attribute count; never imports :mod:`spanfold.instrumentation`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias

from spanfold import counters, semconv
from spanfold.exporter.dialects.anthropic_native import blocks_text
from spanfold.exporter.dialects.anthropic_native import loads as loads  # the dialects share one lenient JSON reader
from spanfold.semconv import shapes

Part: TypeAlias = dict[str, Any]
Message: TypeAlias = dict[str, Any]
#: index -> {the rest of the key after ``PREFIX.N.`` -> value}
Indexed: TypeAlias = dict[int, dict[str, Any]]


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def indexed(attrs: Mapping[str, Any], prefixes: tuple[str, ...]) -> dict[str, Indexed]:
    """``{prefix: {N: {rest: value}}}`` of the keys ``{prefix}{N}.{rest}`` (each prefix ends with ``.``): one pass."""
    out: dict[str, Indexed] = {p: {} for p in prefixes}
    for key, value in attrs.items():
        for prefix in prefixes:
            if key.startswith(prefix):
                index, _, rest = key[len(prefix) :].partition(".")
                if index.isdigit() and rest:
                    out[prefix].setdefault(int(index), {})[rest] = value
                break
    return out


def in_order(groups: Indexed) -> list[dict[str, Any]]:
    return [groups[i] for i in sorted(groups)]


def messages_in_order(groups: Indexed) -> list[dict[str, Any]]:
    """Flattened messages in order. Indexes missing from ``0..N`` are messages the span lost, mostly to the SDK's
    attribute count limit (``OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT``, 128 by default, drops the oldest attributes): counted
    as ``dialect_messages_missing``, and the fold goes on with the messages that are there."""
    if groups:
        missing = max(groups) + 1 - len(groups)
        if missing:
            counters.incr("dialect_messages_missing", missing)
    return in_order(groups)


def tool_call(call_id: Any, name: Any, arguments: Any) -> Part:
    """A ``tool_call`` part (JSON-object arguments parsed)."""
    args = loads(arguments) if isinstance(arguments, str) else arguments
    return {
        "type": semconv.PART_TOOL_CALL,
        "id": call_id,
        "name": name,
        "arguments": args if isinstance(args, dict) or arguments is None else arguments,
    }


def indexed_tool_calls(fields: Mapping[str, Any], prefix: str, keys: tuple[str, str, str]) -> list[Part]:
    """The tool calls flattened under ``{prefix}{M}.`` in one message's fields; ``keys``: (id, name, arguments)."""
    calls = indexed(fields, (prefix,))[prefix]
    id_key, name_key, args_key = keys
    return [tool_call(c.get(id_key), c.get(name_key), c.get(args_key)) for c in in_order(calls)]


# --- content parts ----------------------------------------------------------------------------------------------


def _text(block: Mapping[str, Any]) -> Part | None:
    return {"type": semconv.PART_TEXT, "content": block.get("text")}


def _image_url(block: Mapping[str, Any]) -> Part | None:
    image = block.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else image
    return {"type": semconv.PART_URI, "modality": "image", "uri": url}


def _image(block: Mapping[str, Any]) -> Part | None:
    source = block.get("source")
    if not isinstance(source, Mapping):
        return {"type": semconv.PART_BLOB, "modality": "image"}
    if source.get("type") == "url":
        return {"type": semconv.PART_URI, "modality": "image", "uri": source.get("url")}
    return {
        "type": semconv.PART_BLOB,
        "modality": "image",
        "mime_type": source.get("media_type"),
        "content": source.get("data"),
    }


def _tool_use(block: Mapping[str, Any]) -> Part | None:
    return tool_call(block.get("id"), block.get("name"), block.get("input"))


def _tool_result(block: Mapping[str, Any]) -> Part | None:
    return {
        "type": semconv.PART_TOOL_CALL_RESPONSE,
        "id": block.get("tool_use_id"),
        "response": blocks_text(block.get("content")),
    }


#: A content block's ``type`` -> its part (OpenAI content parts and Anthropic blocks; others are kept as they come).
BLOCKS: dict[str, Callable[[Mapping[str, Any]], Part | None]] = {
    "text": _text,
    "input_text": _text,
    "output_text": _text,
    "image_url": _image_url,
    "image": _image,
    "tool_use": _tool_use,
    "tool_result": _tool_result,
}


def _blocks(content: Any, json_lists: bool) -> list[Any] | None:
    """Content as a list of blocks, when it is one (with ``json_lists``, a JSON string of such a list counts)."""
    if isinstance(content, str):
        if not (json_lists and content.startswith("[{")):
            return None
        content = loads(content)
    if isinstance(content, (list, tuple)) and all(isinstance(b, Mapping) and "type" in b for b in content):
        return list(content)
    return None


def content_parts(content: Any, *, with_tool_uses: bool = True, json_lists: bool = False) -> list[Part]:
    """The parts of a chat-shaped ``content``. ``with_tool_uses=False`` drops ``tool_use`` blocks (for producers that
    also list the same calls as tool-call attributes); ``json_lists``: the producer writes a content list as the
    JSON string of it (a text that is such JSON is then read as the list)."""
    if content is None:
        return []
    blocks = _blocks(content, json_lists)
    if blocks is None:
        return [{"type": semconv.PART_TEXT, "content": content if isinstance(content, str) else dumps(content)}]
    parts: list[Part] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "tool_use" and not with_tool_uses:
            continue
        handler = BLOCKS.get(kind)
        part = handler(block) if handler is not None else dict(block)
        if part is not None:
            parts.append(part)
    return parts


def _response(content: Any, json_lists: bool) -> Any:
    """A tool message's content as the result: text joined from text parts, anything else as it is."""
    blocks = _blocks(content, json_lists)
    if blocks is None:
        return content
    return blocks_text(blocks)


def chat_message(
    role: Any,
    content: Any = None,
    tool_calls: Iterable[Part] = (),
    tool_call_id: Any = None,
    *,
    finish_reason: str | None = None,
    json_lists: bool = False,
) -> list[Message]:
    """One chat-shaped message as contract messages (a ``tool_result`` block splits off as a ``tool`` message).
    ``finish_reason`` (of an output) goes on each; ``json_lists``: see :func:`content_parts`."""
    role = str(role) if role else "user"
    calls = list(tool_calls)
    extra = {"finish_reason": finish_reason} if finish_reason is not None else {}
    if role == "tool":
        response = _response(content, json_lists)
        part = {"type": semconv.PART_TOOL_CALL_RESPONSE, "id": tool_call_id, "response": response}
        return [{"role": role, "parts": [part], **extra}]
    parts = content_parts(content, with_tool_uses=not calls, json_lists=json_lists) + calls

    def make(role: Any, parts: list[Any]) -> Message:
        return {"role": role, "parts": parts, **extra}

    return shapes.split_tool_responses(role, parts, make)

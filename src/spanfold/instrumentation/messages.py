"""Shared helpers that turn provider message shapes into GenAI semconv parts (see :mod:`spanfold.semconv`).

Provider modules describe their shapes with these helpers; nothing here knows a provider. With content
capture off, parts keep their structure (type, tool-call id and name) and lose every piece of content.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from spanfold import semconv

try:  # the SDKs' response objects are pydantic models
    from pydantic import BaseModel as _PydanticModel
except ImportError:  # pragma: no cover - no SDK installed

    class _PydanticModel:  # type: ignore[no-redef]
        __pydantic_extra__: dict[str, Any] | None

Part = dict[str, Any]
SemconvMessage = dict[str, Any]


def get(obj: Any, key: str, default: Any = None) -> Any:
    """``obj[key]`` for mappings, the field or extra ``key`` of SDK (pydantic) objects, else ``obj.key``.

    Hot path: a missing attribute on a pydantic model costs microseconds (its ``__getattr__`` raises), so
    pydantic objects are read from their ``__dict__`` (fields) and ``__pydantic_extra__`` (extras).
    """
    if isinstance(obj, dict):
        return obj.get(key, default)
    if isinstance(obj, _PydanticModel):
        fields = obj.__dict__
        if key in fields:
            return fields[key]
        extra = obj.__pydantic_extra__
        return extra.get(key, default) if extra else default
    return getattr(obj, key, default)


def dumps(value: Any) -> str:
    """Compact JSON for span attributes; objects JSON cannot encode become their ``str``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_default)


def _default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)  # pydantic models (SDK objects) in user-built messages
    if callable(dump):
        return dump(mode="json", exclude_unset=True)
    return str(value)


def parse_json_arguments(raw: Any) -> Any:
    """Tool-call arguments as an object when they are JSON text; unparseable text is kept as it is."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def text_part(text: Any, capture: bool) -> Part:
    return {"type": semconv.PART_TEXT, "content": text} if capture else {"type": semconv.PART_TEXT}


def reasoning_part(text: Any, capture: bool) -> Part:
    return {"type": semconv.PART_REASONING, "content": text} if capture else {"type": semconv.PART_REASONING}


def tool_call_part(call_id: Any, name: Any, arguments: Any, capture: bool) -> Part:
    part: Part = {"type": semconv.PART_TOOL_CALL, "id": call_id, "name": name}
    if capture:
        part["arguments"] = parse_json_arguments(arguments)
    return part


def tool_response_part(call_id: Any, response: Any, capture: bool) -> Part:
    part: Part = {"type": semconv.PART_TOOL_CALL_RESPONSE, "id": call_id}
    if capture:
        part["response"] = response
    return part


def media_part(url: str, modality: str, capture: bool) -> Part:
    """A ``data:`` URL becomes a blob part, any other URL a uri part."""
    if url.startswith("data:") and ";base64," in url:
        header, _, data = url.partition(";base64,")
        part: Part = {"type": semconv.PART_BLOB, "modality": modality, "mime_type": header[5:] or None}
        if capture:
            part["content"] = data
        return part
    part = {"type": semconv.PART_URI, "modality": modality}
    if capture:
        part["uri"] = url
    return part


def blob_part(data: Any, mime_type: Any, modality: str, capture: bool) -> Part:
    part: Part = {"type": semconv.PART_BLOB, "modality": modality, "mime_type": mime_type}
    if capture:
        part["content"] = data
    return part


def message(role: Any, parts: list[Part], **extra: Any) -> SemconvMessage:
    out: SemconvMessage = {"role": role, "parts": parts}
    for key, value in extra.items():
        if value is not None:
            out[key] = value
    return out


class FragmentCache:
    """JSON fragments of messages already converted, by object identity: per-call work follows what is new.

    An agent re-sends its whole history on every call, mostly the very same message objects. A message is
    re-converted when it is a different object, or (for dicts) when any of its top-level values changed
    (by identity or equality). In-place mutation of a nested value of a dict already sent is not detected.
    Bounded: cleared when ``limit`` entries are held (entries hold the message alive, so ids stay unique).
    """

    __slots__ = ("_entries", "limit")

    def __init__(self, limit: int = 8192) -> None:
        self._entries: dict[int, tuple[Any, Any, str]] = {}
        self.limit = limit

    def json_list(self, items: list[Any], convert: Callable[[Any], Any]) -> str:
        entries = self._entries
        out = []
        for item in items:
            signature = tuple(item.values()) if isinstance(item, dict) else None
            entry = entries.get(id(item))
            if entry is not None and entry[0] is item and entry[1] == signature:
                out.append(entry[2])
                continue
            fragment = dumps(convert(item))
            if len(entries) >= self.limit:
                entries.clear()
            entries[id(item)] = (item, signature, fragment)
            out.append(fragment)
        return "[" + ",".join(out) + "]"

    def clear(self) -> None:
        self._entries.clear()


def as_list(value: Any) -> list[Any]:
    """A list from a list, tuple or any other iterable the user passed (generators included); None -> []."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, (str, bytes, dict)):
        return [value]
    if isinstance(value, Iterable):
        return list(value)
    return [value]

"""Shared helpers that turn provider message shapes into GenAI semconv parts (see :mod:`spanfold.semconv`).

Provider modules describe their shapes with these helpers; nothing here knows a provider. With content
capture off, parts keep their structure (type, tool-call id and name) and lose every piece of content.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from spanfold import semconv

Part = dict[str, Any]
SemconvMessage = dict[str, Any]


def get(obj: Any, key: str, default: Any = None) -> Any:
    """``obj[key]`` for mappings, ``obj.key`` for SDK objects (pydantic models), else ``default``."""
    if isinstance(obj, dict):
        return obj.get(key, default)
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

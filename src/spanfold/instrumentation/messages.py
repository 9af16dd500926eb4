"""Shared helpers that turn provider message shapes into GenAI semconv parts (see :mod:`spanfold.semconv`).

Provider modules describe their shapes with these helpers; nothing here knows a provider. With content
capture off, parts keep their structure (type, tool-call id and name) and lose every piece of content.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from spanfold import counters, semconv
from spanfold.instrumentation.redact import content as redacted

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


def _default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)  # pydantic models (SDK objects) in user-built messages
    if callable(dump):
        return dump(mode="json", exclude_unset=True)
    return str(value)


#: Built once: ``json.dumps`` with options builds an encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_default)


def dumps(value: Any) -> str:
    """Compact JSON for span attributes; objects JSON cannot encode become their ``str``."""
    return _ENCODER.encode(value)


def parse_json_arguments(raw: Any) -> Any:
    """Tool-call arguments as an object when they are JSON text; unparseable text is kept as it is."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


# Content enters parts only through ``redacted`` (the redaction hook, :mod:`.redact`; itself when none is configured).


def text_part(text: Any, capture: bool) -> Part:
    return {"type": semconv.PART_TEXT, "content": redacted(text)} if capture else {"type": semconv.PART_TEXT}


def reasoning_part(text: Any, capture: bool) -> Part:
    return {"type": semconv.PART_REASONING, "content": redacted(text)} if capture else {"type": semconv.PART_REASONING}


def tool_call_part(call_id: Any, name: Any, arguments: Any, capture: bool) -> Part:
    part: Part = {"type": semconv.PART_TOOL_CALL, "id": call_id, "name": name}
    if capture:
        part["arguments"] = redacted(parse_json_arguments(arguments))
    return part


def tool_response_part(call_id: Any, response: Any, capture: bool) -> Part:
    part: Part = {"type": semconv.PART_TOOL_CALL_RESPONSE, "id": call_id}
    if capture:
        part["response"] = redacted(response)
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
        part["uri"] = redacted(url)
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
        self._entries: dict[int, tuple[Any, Any, Any]] = {}
        self.limit = limit
        _CACHES.append(self)

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

    def cached(self, item: Any, build: Callable[[Any], Any]) -> Any:
        """``build(item)``, remembered by identity like :meth:`json_list` (any value, e.g. several JSON fragments).

        For providers whose history items do not map one-to-one onto messages (an Anthropic user message holding
        tool results, Responses API items that merge into one assistant message). Share one cache per ``build``.
        """
        entries = self._entries
        signature = tuple(item.values()) if isinstance(item, dict) else None
        entry = entries.get(id(item))
        if entry is not None and entry[0] is item and entry[1] == signature:
            return entry[2]
        value = build(item)
        if len(entries) >= self.limit:
            entries.clear()
        entries[id(item)] = (item, signature, value)
        return value

    def json_flat_list(self, items: list[Any], convert: Callable[[Any], list[Any]]) -> str:
        """Like :meth:`json_list` where ``convert`` maps one item onto any number of messages (zero included)."""
        fragments: list[str] = []
        for item in items:
            fragments.extend(self.cached(item, lambda x: [dumps(msg) for msg in convert(x)]))
        return "[" + ",".join(fragments) + "]"

    def clear(self) -> None:
        self._entries.clear()


#: Every FragmentCache (module-level ones, made at import): emptied when what conversion produces changes (redaction).
_CACHES: list[FragmentCache] = []


def clear_caches() -> None:
    for cache in _CACHES:
        cache.clear()


def result_attributes(
    response_id: Any, model: Any, finish_reasons: list[Any] | None, output_messages_json: str, usage: dict[str, Any]
) -> dict[str, Any]:
    """The attributes of a completed call, for every provider: response id and model, finish reasons (None when
    there are none), the output messages as JSON, then the provider's usage attributes."""
    attrs: dict[str, Any] = {
        semconv.RESPONSE_ID: response_id,
        semconv.RESPONSE_MODEL: model,
        semconv.RESPONSE_FINISH_REASONS: finish_reasons,
        semconv.OUTPUT_MESSAGES: output_messages_json,
    }
    attrs.update(usage)
    return attrs


def given(value: Any) -> bool:
    """True for a value the caller passed (the SDKs mark absent ones with ``omit`` / ``NOT_GIVEN``)."""
    return value is not None and type(value).__name__ not in ("Omit", "NotGiven")


def numbers(kwargs: dict[str, Any], table: dict[str, str]) -> dict[str, Any]:
    """Request keyword -> attribute, for the numeric keywords of ``table`` the caller passed."""
    out: dict[str, Any] = {}
    for key, attr in table.items():
        value = kwargs.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[attr] = value
    return out


def materialize(kwargs: dict[str, Any], *keys: str) -> None:
    """Replace one-shot iterators the caller passed under ``keys`` by lists, in place, before spanfold reads them,
    so that recording them does not exhaust what the SDK is about to send."""
    for key in keys:
        value = kwargs.get(key)
        if isinstance(value, Iterator):
            kwargs[key] = list(value)


def as_list(value: Any) -> list[Any]:
    """A list from a list, tuple or any other re-iterable value; None -> [].

    Never consumes a one-shot iterator (a generator, ``map``, ``iter(...)``): the SDK reads it after spanfold, so it
    gives ``[]`` here. Request fields that may hold one are read through :func:`field` (nested) or made lists in the
    call's own keyword arguments first (:func:`materialize`).
    """
    if value is None:
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, (str, bytes, dict)):
        return [value]
    if isinstance(value, Iterator):
        counters.incr("request.one_shot_unread")
        return []
    if isinstance(value, Iterable):
        return list(value)
    return [value]


def field(obj: Any, key: str) -> Any:
    """``get(obj, key)`` for a field of a request object that the SDK reads after spanfold (message content,
    tool calls, content blocks, tool results, item content).

    The SDKs accept any iterable there. A one-shot iterator found in a plain dict is replaced, in that dict, by a list
    of the same items before the SDK sees it: the SDK then reads the same items and sends the same bytes. One found
    anywhere else (an object spanfold cannot safely change) is left alone and read as nothing (the field's content is
    missing from the span, the request is untouched).
    """
    value = get(obj, key)
    if isinstance(value, Iterator) and not isinstance(value, (str, bytes)):
        if type(obj) is dict:
            value = obj[key] = list(value)
        else:
            counters.incr("request.one_shot_unread")
            return None
    return value

"""Reading SDK shapes, for every provider: fields of dicts and SDK objects alike, lists without consuming what the SDK
will read, compact JSON for attributes, and the result attributes every provider sets.

Parts and messages are made by :mod:`spanfold.semconv.parts` (content capture and redaction live there); nothing here
knows a provider.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from spanfold import counters, semconv
from spanfold.codecs import jsonio

try:  # the SDKs' response objects are pydantic models
    from pydantic import BaseModel as _PydanticModel
except ImportError:  # pragma: no cover - no SDK installed

    class _PydanticModel:  # type: ignore[no-redef]
        __pydantic_extra__: dict[str, Any] | None


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


def dumps(value: Any) -> str:
    """Compact JSON for span attributes; objects JSON cannot encode become their ``str``."""
    return jsonio.dumps(value, _default)


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

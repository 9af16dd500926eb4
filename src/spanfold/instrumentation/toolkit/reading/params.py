"""Request parameters, from a table: which keyword (or config field) fills which parameter of the typed request.

A provider lists its parameters once (``{"max_completion_tokens": "max_tokens", ...}``: the SDK's name -> the typed
request's); :func:`numbers` reads them from the call's keyword arguments or from a config object the call was given
(google-genai's ``config=GenerateContentConfig(...)``, Bedrock's ``inferenceConfig`` dict), whichever the provider
hands it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from spanfold.instrumentation.toolkit.reading.fields import as_list, get

K = TypeVar("K", bound=str)


def given(value: Any) -> bool:
    """True for a value the caller passed (the SDKs mark absent ones with ``omit`` / ``NOT_GIVEN``; speakeasy-generated
    ones, mistralai, with ``UNSET``)."""
    return value is not None and type(value).__name__ not in ("Omit", "NotGiven", "Unset")


def listed(kwargs: dict[str, Any], key: str) -> list[Any] | None:
    """The request's ``key`` (messages, tools) as a list; None when not given. A one-shot iterator is made a list in
    ``kwargs`` first, so the SDK sends the very items spanfold read
    (:func:`~spanfold.instrumentation.toolkit.reading.fields.materialize`); a list, nearly always, comes back as it
    is, with no other check."""
    value = kwargs.get(key)
    if type(value) is list:
        return value
    if isinstance(value, Iterator):
        value = kwargs[key] = list(value)
    return as_list(value) if given(value) else None


def numbers(source: Any, table: Mapping[str, K]) -> dict[K, int | float]:
    """``table``'s name (a :data:`~spanfold.instrumentation.toolkit.invocation.Param`) -> value for the numeric
    parameters ``source`` (keyword arguments, a dict or a config object) holds; booleans and anything not a number are
    left out."""
    out: dict[K, int | float] = {}
    if source is None:
        return out
    read = source.get if type(source) is dict else lambda key: get(source, key)  # keyword arguments: a dict
    for key, attr in table.items():
        value = read(key)
        if value is not None and isinstance(value, (int, float)) and value.__class__ is not bool:
            out[attr] = value
    return out


def model_name(value: Any) -> str | None:
    """The model a request names, when it is a string."""
    return value if isinstance(value, str) else None


def string_list(value: Any) -> list[str] | None:
    """A parameter that is one string or several (stop sequences) as a list of strings; None when not given."""
    if not given(value):
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return None

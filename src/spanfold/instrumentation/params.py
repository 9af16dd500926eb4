"""Request parameters -> span attributes, from a table: which keyword (or config field) fills which attribute.

A provider lists its parameters once (``{"temperature": semconv.REQUEST_TEMPERATURE, ...}``); :func:`numbers` reads
them from the call's keyword arguments or from a config object the call was given (google-genai's
``config=GenerateContentConfig(...)``, Bedrock's ``inferenceConfig`` dict), whichever the provider hands it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spanfold.instrumentation.messages import get


def given(value: Any) -> bool:
    """True for a value the caller passed (the SDKs mark absent ones with ``omit`` / ``NOT_GIVEN``; speakeasy-generated
    ones, mistralai, with ``UNSET``)."""
    return value is not None and type(value).__name__ not in ("Omit", "NotGiven", "Unset")


def numbers(source: Any, table: Mapping[str, str]) -> dict[str, Any]:
    """Attribute -> value for the numeric parameters of ``table`` that ``source`` (keyword arguments, a dict or a
    config object) holds; booleans and anything not a number are left out."""
    out: dict[str, Any] = {}
    if source is None:
        return out
    for key, attr in table.items():
        value = get(source, key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
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

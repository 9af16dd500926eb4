"""The one place spanfold's hot paths encode and parse JSON: fast libraries, the standard library's exact output.

* :func:`loads`: ``json.loads(text)``, the same value. Parsed by msgspec, which gives exactly the values the standard
  library gives for the JSON it accepts (integers of any size included; orjson turns integers beyond 64 bits into
  floats, so it is not used here); what msgspec rejects (``NaN``/``Infinity``, numbers that overflow a float, escaped
  lone surrogates, invalid JSON) goes to ``json.loads``, which accepts it or raises its own error.
* :func:`dumps`: ``json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=default)``, the same text.
  Encoded by orjson (it keeps ``default`` for dataclasses and datetimes, as the standard library does, through its
  pass-through options); the standard library encodes what orjson rejects (integers beyond 64 bits, lone surrogates,
  keys that are not strings, circular values) and what orjson renders differently: floats below 1e-4 (``1e-05``
  against orjson's ``0.00001``, ``1e-07`` against ``1e-7``, found in orjson's output by :func:`_float_differs`; a
  string that merely looks like one costs the slower path, never a different text) and non-finite floats (orjson
  writes ``null``). Non-finite floats cannot be seen in orjson's output, so :func:`dumps` takes the standard library
  for values that may hold them: ``finite=False`` (values from anywhere), and in every case once this process has
  parsed or been handed one (:func:`saw_non_finite`, set by :func:`loads` and by the fold's attribute reader). The
  only type orjson renders in its own way that this cannot see is a plain :class:`enum.Enum` member (its value,
  where the standard library calls ``default``): :func:`dumps` is for values spanfold builds from JSON and span
  attributes, which hold none; the calling thread's arbitrary request objects go through :func:`pure` first.
* :func:`pure`: a private copy of a value made only of what JSON round-trips exactly (dicts with string keys, lists,
  tuples as lists, strings, integers, finite floats, booleans, None), or :data:`NOT_PURE`.

Nothing else in spanfold imports orjson or msgspec.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, Final

import orjson

#: JSON text the standard library parses to a non-finite float: its names, or an exponent of three digits.
_NON_FINITE_TEXT: Final = re.compile(r"NaN|Infinity|[eE][+-]?[0-9]{3}")
_OPTIONS: Final = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_DECODER: Any = None
_DECODE_ERROR: type[Exception] = ValueError  # msgspec.DecodeError once imported (a ValueError too)
_STDLIB: dict[Callable[[Any], Any] | None, json.JSONEncoder] = {}
_non_finite = False


def saw_non_finite() -> None:
    """A non-finite float may be in values this process encodes from now on: :func:`dumps` takes the standard library
    (which writes ``NaN``, ``Infinity``) for good."""
    global _non_finite
    _non_finite = True


def non_finite_seen() -> bool:
    return _non_finite


def _decoder() -> Any:
    """msgspec's decoder, imported on the first parse (not at ``init()``: start-up time)."""
    global _DECODER, _DECODE_ERROR
    import msgspec

    _DECODE_ERROR = msgspec.DecodeError
    _DECODER = msgspec.json.Decoder()
    return _DECODER


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``: the same value, or the same error."""
    try:
        return (_DECODER or _decoder()).decode(text)
    except (_DECODE_ERROR, UnicodeEncodeError):  # a str holding a lone surrogate cannot reach msgspec as UTF-8
        value = json.loads(text)
        if _NON_FINITE_TEXT.search(text if isinstance(text, str) else text.decode("utf-8", "replace")):
            saw_non_finite()
        return value


_DIGITS: Final = frozenset(b"0123456789")


def _float_differs(out: bytes) -> bool:
    """Whether orjson's text may hold a float the standard library writes otherwise: every such float is below 1e-4,
    where orjson writes ``0.00001`` (the standard library ``1e-05``) or a one-digit exponent (``1e-7`` against
    ``1e-07``). Found by plain substring searches (a regular expression costs ~50x more on long lines); a string that
    merely looks like one only costs the standard library's slower encoding."""
    if b"0.0000" in out:
        return True
    size = len(out)
    at = out.find(b"e-")
    while at != -1:
        if (
            0 < at < size - 2
            and out[at - 1] in _DIGITS
            and out[at + 2] in _DIGITS
            and (at + 3 == size or out[at + 3] not in _DIGITS)
        ):
            return True
        at = out.find(b"e-", at + 2)
    return False


def stdlib_dumps(value: Any, default: Callable[[Any], Any] | None = None) -> str:
    """The standard library's compact text (the reference :func:`dumps` reproduces)."""
    encoder = _STDLIB.get(default)
    if encoder is None:
        encoder = _STDLIB[default] = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=default)
    return encoder.encode(value)


def dumps(value: Any, default: Callable[[Any], Any] | None = None, *, finite: bool = True) -> str:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=default)``, the same text (see the
    module docstring). ``finite=False``: ``value`` may hold non-finite floats (the standard library encodes it)."""
    if finite and not _non_finite:
        try:
            out = orjson.dumps(value, default=default, option=_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError: what orjson cannot encode, or ``default`` raised
            pass
        else:
            if not _float_differs(out):
                return out.decode("utf-8")
    return stdlib_dumps(value, default)


def encode(value: Any, default: Callable[[Any], Any] | None = None) -> tuple[str, Any]:
    """``(dumps(value, default), pure(value))`` for any value (the calling thread's request and response objects):
    a value :func:`pure` copies is encoded by orjson from the copy, anything else by the standard library."""
    copy = pure(value)
    if copy is NOT_PURE:
        return stdlib_dumps(value, default), NOT_PURE
    return dumps(copy), copy


def note_attributes(values: Any) -> None:
    """Span attribute values the fold may copy into a trace: a non-finite float among them makes :func:`dumps` take
    the standard library from now on."""
    if _non_finite:
        return
    isfinite = math.isfinite
    for value in values:
        kind = type(value)
        if kind is float:
            if not isfinite(value):
                saw_non_finite()
                return
        elif kind is tuple or kind is list:
            for item in value:
                if type(item) is float and not isfinite(item):
                    saw_non_finite()
                    return


class _NotPure:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_PURE"


NOT_PURE: Final = _NotPure()
_ATOMS: Final = frozenset({str, int, bool, type(None)})


def pure(value: Any) -> Any:
    """A private copy of ``value`` equal to ``loads(dumps(value))`` (tuples become lists), or :data:`NOT_PURE` when
    it holds anything else (objects, subclasses, keys that are not strings, non-finite floats)."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                return NOT_PURE
            kind = type(item)
            if kind is str or item is None or kind is int or kind is bool:
                out[key] = item
                continue
            copy = pure(item)
            if copy is NOT_PURE:
                return NOT_PURE
            out[key] = copy
        return out
    if kind is list or kind is tuple:
        items = []
        for item in value:
            copy = pure(item)
            if copy is NOT_PURE:
                return NOT_PURE
            items.append(copy)
        return items
    if kind is float:
        return value if math.isfinite(value) else NOT_PURE
    return NOT_PURE

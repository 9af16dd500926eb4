"""Matching values: tool arguments (exact / superset / subset / ignore) and text (exact / contains / regex).

Every matcher answers with the first difference it finds, as text, or None when the values match: one
function serves both the verdict and the reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from spanfold.checks.errors import SpecError, SpecPath
from spanfold.text import clip as clip  # re-exported: the checks' reasons clip with it

ArgsMatch = Literal["exact", "superset", "subset", "ignore"]
ARGS_MATCH_MODES: tuple[ArgsMatch, ...] = ("exact", "superset", "subset", "ignore")

#: Longest rendering of one value inside a reason.
VALUE_LIMIT = 60
#: Longest rendering of a call's argument list inside a reason.
ARGS_LIMIT = 120


def show(value: Any, limit: int = VALUE_LIMIT) -> str:
    """A value as JSON, cut to ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:  # circular
        text = repr(value)
    return clip(text, limit)


def show_call(name: str, args: Any) -> str:
    """``search(query="x", limit=3)``."""
    if isinstance(args, Mapping):
        inner = ", ".join(f"{k}={show(v)}" for k, v in args.items())
    elif args is None:
        inner = ""
    else:
        inner = show(args)
    return f"{name}({clip(inner, ARGS_LIMIT)})"


def _key(where: str, key: Any) -> str:
    return f"{where}.{key}" if where else str(key)


def _same(expected: Any, actual: Any) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    return bool(expected == actual)


def _diff(expected: Any, actual: Any, mode: ArgsMatch, where: str) -> str | None:
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        if mode in ("superset", "exact"):
            for k, v in expected.items():
                if k not in actual:
                    return f"{_key(where, k)}: missing (expected {show(v)})"
        if mode in ("subset", "exact"):
            for k, v in actual.items():
                if k not in expected:
                    return f"{_key(where, k)}: not expected (got {show(v)})"
        for k, v in expected.items():
            if k in actual:
                found = _diff(v, actual[k], mode, _key(where, k))
                if found is not None:
                    return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return f"{where or 'value'}: expected {len(expected)} items, got {len(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            found = _diff(e, a, mode, f"{where}[{i}]")
            if found is not None:
                return found
        return None
    if _same(expected, actual):
        return None
    prefix = f"{where}: " if where else ""
    return f"{prefix}expected {show(expected)}, got {show(actual)}"


def args_diff(expected: Any, actual: Any, mode: ArgsMatch) -> str | None:
    """How ``actual`` call arguments fail ``expected`` under ``mode``; None when they match.

    ``superset``: the actual arguments hold every expected key with a matching value (recursively; lists
    match item by item); ``subset``: every actual key is expected; ``exact``: equal; ``ignore``: anything.
    Expected ``None`` ignores the arguments.
    """
    if mode == "ignore" or expected is None:
        return None
    if actual is None:
        actual = {}
    if isinstance(expected, Mapping) and not isinstance(actual, Mapping):
        return f"arguments are not a JSON object: {show(actual)}"
    return _diff(expected, actual, mode, "")


def parse_args_match(raw: Any, path: SpecPath) -> ArgsMatch:
    for mode in ARGS_MATCH_MODES:
        if raw == mode:
            return mode
    raise SpecError(f"args_match must be one of {', '.join(ARGS_MATCH_MODES)} (got {show(raw)})", path)


# ---- text: content and tool outputs -------------------------------------------------------------------------


def as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _as_data(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


@dataclass(frozen=True, slots=True)
class TextMatch:
    """How a content or output is expected: ``exact`` text, ``contains`` a substring, ``regex`` (re.search),
    ``data`` (a JSON value the actual, parsed, must contain, as arguments do under ``superset``) or ``any``."""

    kind: Literal["any", "exact", "contains", "regex", "data"]
    value: Any = None

    def describe(self) -> str:
        return _DESCRIBE[self.kind](self.value)

    def diff(self, actual: Any) -> str | None:
        """Why ``actual`` fails this expectation, or None."""
        if self.kind == "any":
            return None
        if self.kind == "data":
            return _diff(self.value, _as_data(actual), "superset", "")
        text = as_text(actual)
        if text is None:
            return f"expected {self.describe()}, got none"
        if _TEXT_TESTS[self.kind](self.value, text):
            return None
        return f"expected {self.describe()}, got {show(text)}"


_DESCRIBE: dict[str, Callable[[Any], str]] = {
    "any": lambda v: "anything",
    "exact": lambda v: show(v),
    "contains": lambda v: f"text containing {show(v)}",
    "regex": lambda v: f"text matching /{v.pattern}/",
    "data": lambda v: show(v),
}

_TEXT_TESTS: dict[str, Callable[[Any, str], bool]] = {
    "exact": lambda v, t: bool(v == t),
    "contains": lambda v, t: bool(v in t),
    "regex": lambda v, t: v.search(t) is not None,
}

ANY = TextMatch("any")
_MATCHER_KEYS = ("contains", "regex")


def parse_text_match(raw: Any, path: SpecPath, *, data: bool) -> TextMatch:
    """A content/output expectation: absent or null (skip), a string (exact), ``{contains: s}``, ``{regex: s}``;
    with ``data`` also any other JSON value, matched against the parsed output like ``superset`` arguments."""
    field = str(path[-1]) if path else "value"
    if raw is None:
        return ANY
    if isinstance(raw, str):
        return TextMatch("exact", raw)
    if isinstance(raw, Mapping) and len(raw) == 1 and next(iter(raw)) in _MATCHER_KEYS:
        kind, value = next(iter(raw.items()))
        if not isinstance(value, str):
            raise SpecError(f"{kind} must be a string (got {show(value)})", (*path, kind))
        if kind == "contains":
            return TextMatch("contains", value)
        try:
            return TextMatch("regex", re.compile(value))
        except re.error as exc:
            raise SpecError(f"regex is not a valid regular expression: {exc}", (*path, kind)) from None
    if data:
        return TextMatch("data", raw)
    raise SpecError(f"{field} must be a string, {{contains: ...}}, {{regex: ...}} or null (got {show(raw)})", path)

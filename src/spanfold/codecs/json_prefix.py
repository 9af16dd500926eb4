"""Parse a JSON array that extends one parsed before: only the new tail is parsed.

An agent re-sends its whole history on every model call, so step k's ``gen_ai.input.messages`` is, as text, step
k-1's text with more messages appended (a producer writes the same messages the same way each time). Parsing each
attribute whole costs O(N²) bytes over an N-step run; :class:`ArrayPrefixCache` parses only what follows the
earlier text it extends, and the elements parsed before are shared (by identity) between the two results, which
lets the fold recognise history it has already converted at the cost of a dict lookup.

Why it is exact: if ``old`` is the JSON array ``[X]`` and ``new`` is ``[X`` followed by ``,Y]``, then ``new`` is an
array whose elements are those of ``old`` followed by those of ``[Y]`` (after ``[X`` a parser is between two
top-level elements either way). Anything else (a different prefix, whitespace before the comma, a tail that does not
parse) is parsed whole, as without the cache.

An optional ``element`` function checks or normalises each element once, when it is parsed (None drops it): an
array's result is its elements through ``element``, the earlier elements taken from the earlier result.

The results share their elements: callers must not mutate the parsed values. Bounded: texts shorter than the key are
not kept (they are cheap), a text replaces the one it extends, and the cache is emptied once the texts it took in
since it was last emptied pass ``max_chars`` characters (2M by default: the histories of some 30 long agent runs at
once; their parsed messages take a few times the text's size).
Thread-safe without a lock: entries are immutable tuples, replaced whole.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spanfold.codecs import jsonio

#: The first characters of a text are its key: every extension of a text shares them.
KEY_CHARS = 64
#: Texts remembered per key (runs that began the same way, e.g. one system prompt, in parallel).
PER_KEY = 8

_Entry = tuple[str, list[Any]]  # (the text without its closing "]", its elements, through ``element``)


class ArrayPrefixCache:
    """``loads(text)`` for JSON arrays, reusing the parse of an earlier text that ``text`` extends or equals."""

    __slots__ = ("_chars", "_element", "_entries", "hits", "max_chars")

    def __init__(self, element: Callable[[Any], Any] | None = None, max_chars: int = 2_000_000) -> None:
        self._element = element
        self._entries: dict[str, tuple[_Entry, ...]] = {}
        self._chars = 0
        self.max_chars = max_chars
        self.hits = 0

    def loads(self, text: str) -> Any:
        """``jsonio.loads(text)``; an array as a new list of its elements through ``element`` (possibly shared)."""
        if len(text) <= KEY_CHARS or text[-1] != "]":
            return self._elements(jsonio.loads(text))
        key = text[:KEY_CHARS]
        entries = self._entries.get(key, ())
        for i, (body, elements) in enumerate(entries):
            if not text.startswith(body):
                continue
            end = len(body)
            if end == len(text) - 1:  # the same text
                self.hits += 1
                if i:  # first under its key from now on
                    self._keep(key, entries, i, (body, elements))
                return list(elements)
            if text[end] != ",":
                continue
            try:
                tail = jsonio.loads("[" + text[end + 1 :])
            except ValueError:
                break  # not an extension after all: parse whole (and raise what json.loads raises)
            if not isinstance(tail, list):
                break
            self.hits += 1
            value = elements + self._elements(tail)
            self._keep(key, entries, i, (text[:-1], value))
            return list(value)
        parsed = jsonio.loads(text)
        value = self._elements(parsed)
        if isinstance(parsed, list) and parsed:  # kept texts end with a whole element: "[X" of a non-empty "[X]"
            self._keep(key, entries, None, (text[:-1], value))
            return list(value)
        return value

    def _elements(self, value: Any) -> Any:
        element = self._element
        if element is None or not isinstance(value, list):
            return value
        return [e for e in map(element, value) if e is not None]

    def _keep(self, key: str, entries: tuple[_Entry, ...], replaced: int | None, entry: _Entry) -> None:
        """Put ``entry`` first under ``key``, in place of entry ``replaced`` (the text it extends) if given."""
        rest = [e for j, e in enumerate(entries) if j != replaced][: PER_KEY - 1]
        self._chars += len(entry[0]) - (len(entries[replaced][0]) if replaced is not None else 0)
        if self._chars > self.max_chars:
            self.clear()
            rest = []
            self._chars = len(entry[0])
        self._entries[key] = (entry, *rest)

    def clear(self) -> None:
        self._entries = {}
        self._chars = 0

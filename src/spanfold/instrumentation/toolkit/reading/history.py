"""Request lists converted item by item, remembered by object identity: per-call work follows what is new.

An agent re-sends its whole history on every call, mostly the very same message objects. A provider declares the
converter of each such list once per API (:class:`History`: ``History(convert)``, ``convert(item)`` giving a message,
or several with ``flat=True``) and hands a request's list over as ``history.of(items)`` (a :class:`Listed`). When the
span is written, :meth:`Listed.json` converts each item not seen before, applies the
:class:`~spanfold.content.runtime.Runtime` to what it gives and remembers the JSON fragment, per Runtime, so content
recorded under one capture or redaction setting is never reused under another. :class:`FragmentCache` is the identity
cache underneath.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit.reading.messages import encode
from spanfold.semconv import parts as p


class FragmentCache:
    """JSON fragments of messages already converted, by object identity: per-call work follows what is new.

    An agent re-sends its whole history on every call, mostly the very same message objects. A message is
    re-converted when it is a different object, or (for dicts) when any of its top-level values changed
    (by identity or equality). In-place mutation of a nested value of a dict already sent is not detected.
    Bounded: cleared when ``limit`` entries are held (entries hold the message alive, so ids stay unique).

    The list's text extends the last one's when its messages begin with the last list's (an agent's next call):
    only the new fragments are joined.
    """

    __slots__ = ("_entries", "_last", "limit")

    def __init__(self, limit: int = 8192) -> None:
        self._entries: dict[int, tuple[Any, Any, Any]] = {}
        #: The last list joined: its (fragment, structure) pairs and its text. Replaced whole (thread-safe without a
        #: lock).
        self._last: tuple[list[tuple[str, Any]], str] | None = None
        self.limit = limit

    def json_list(self, items: list[Any], convert: Callable[[Any], Any]) -> str:
        def build(item: Any) -> tuple[str, Any]:
            return encode(convert(item))

        return self._joined(self.each(items, build))

    def cached(self, item: Any, build: Callable[[Any], Any]) -> Any:
        """``build(item)``, remembered by identity like :meth:`json_list` (any value, e.g. several JSON fragments).

        For providers whose history items do not map one-to-one onto messages (an Anthropic user message holding
        tool results, Responses API items that merge into one assistant message). Share one cache per ``build``.
        """
        return self.each([item], build)[0]

    def each(self, items: Iterable[Any], build: Callable[[Any], Any]) -> list[Any]:
        """:meth:`cached` of each item, in one loop (this runs for every message of every call's history)."""
        entries = self._entries
        out: list[Any] = []
        for item in items:
            signature = tuple(item.values()) if isinstance(item, dict) else None
            entry = entries.get(id(item))
            if entry is not None and entry[0] is item and entry[1] == signature:
                out.append(entry[2])
                continue
            value = build(item)
            if len(entries) >= self.limit:
                entries.clear()
            entries[id(item)] = (item, signature, value)
            out.append(value)
        return out

    def json_flat_list(self, items: list[Any], convert: Callable[[Any], list[Any]]) -> str:
        """Like :meth:`json_list` where ``convert`` maps one item onto any number of messages (zero included)."""

        def build(item: Any) -> list[tuple[str, Any]]:
            return [encode(msg) for msg in convert(item)]

        return self._joined([pair for pairs in self.each(items, build) for pair in pairs])

    def _joined(self, pairs: list[tuple[str, Any]]) -> str:
        """The JSON list of the messages' fragments (a list that begins with the last one's joins only its new
        fragments onto the last text)."""
        last = self._last
        n = len(last[0]) if last is not None else 0
        if last is not None and n and len(pairs) >= n and pairs[:n] == last[0]:
            text = last[1]
            if len(pairs) > n:
                text = text[:-1] + "," + ",".join([fragment for fragment, _ in pairs[n:]]) + "]"
        else:
            text = "[" + ",".join([fragment for fragment, _ in pairs]) + "]"
        self._last = (pairs, text)
        return text

    def clear(self) -> None:
        self._entries.clear()
        self._last = None


#: Runtimes whose caches a HistoryCache keeps (a new init() makes a new Runtime; the previous one may still be in use
#: by a call in flight).
RUNTIMES_KEPT = 2


class HistoryCache:
    """Converted history items of one API, per runtime: ``json_list`` (one message per item), ``json_flat_list`` (any
    number per item) and ``cached`` (any value per item)."""

    __slots__ = ("_convert", "_limit", "_per_runtime")

    def __init__(self, convert: Callable[[Any, Runtime], Any], limit: int = 8192) -> None:
        self._convert = convert
        self._limit = limit
        self._per_runtime: dict[Runtime, tuple[FragmentCache, Callable[[Any], Any]]] = {}

    def _for(self, rt: Runtime) -> tuple[FragmentCache, Callable[[Any], Any]]:
        entry = self._per_runtime.get(rt)
        if entry is None:
            if len(self._per_runtime) >= RUNTIMES_KEPT:
                self._per_runtime.pop(next(iter(self._per_runtime)))
            convert = self._convert

            def bound(item: Any) -> Any:
                return convert(item, rt)

            entry = self._per_runtime[rt] = (FragmentCache(self._limit), bound)
        return entry

    def json_list(self, items: list[Any], rt: Runtime) -> str:
        cache, convert = self._for(rt)
        return cache.json_list(items, convert)

    def json_flat_list(self, items: list[Any], rt: Runtime) -> str:
        cache, convert = self._for(rt)
        return cache.json_flat_list(items, convert)

    def each(self, items: Iterable[Any], rt: Runtime) -> list[Any]:
        """``convert(item, rt)`` of each item, remembered."""
        cache, convert = self._for(rt)
        return cache.each(items, convert)


def _message_fragments(messages: Any, rt: Runtime) -> list[tuple[str, Any]]:
    if isinstance(messages, dict):  # one message
        messages = [messages]
    return [encode(p.applied_message(message, rt)) for message in messages]


def _merge_pieces(messages: Any, rt: Runtime) -> list[tuple[Any, str]]:
    if isinstance(messages, dict):
        messages = [messages]
    pieces: list[tuple[Any, str]] = []
    for message in messages:
        applied = p.applied_message(message, rt)
        pieces.append((applied.get("role"), ",".join([encode(part)[0] for part in applied.get("parts", ())])))
    return pieces


def _merged_json(pieces: Iterable[tuple[Any, str]]) -> str:
    """The messages of (role, parts JSON) pieces as a JSON list, consecutive assistant pieces one message."""
    out: list[str] = []
    run: list[str] | None = None  # the open assistant message's parts
    for role, inner in pieces:
        if role == "assistant":
            if run is None:
                run = []
            if inner:
                run.append(inner)
            continue
        if run is not None:
            out.append('{"role":"assistant","parts":[' + ",".join(run) + "]}")
            run = None
        out.append('{"role":' + encode(role)[0] + ',"parts":[' + inner + "]}")
    if run is not None:
        out.append('{"role":"assistant","parts":[' + ",".join(run) + "]}")
    return "[" + ",".join(out) + "]"


class History:
    """The converter of one API's request list, declared once: ``convert(item)`` gives the item's message, or a list
    of any number of messages; ``merge``: consecutive assistant messages are one (the Responses API's model-side
    items, google-genai's streamed model turns; its messages have a role and parts only); ``messages=False``: the items
    are tool definitions (each item one, or a list of any number), of which the Runtime keeps all or the required
    fields."""

    __slots__ = ("_convert", "_limit", "_merge", "_messages", "_per_runtime")

    def __init__(
        self,
        convert: Callable[[Any], Any],
        *,
        merge: bool = False,
        messages: bool = True,
        limit: int = 8192,
    ) -> None:
        self._convert = convert
        self._merge = merge
        self._messages = messages
        self._limit = limit
        self._per_runtime: dict[Runtime, tuple[FragmentCache, Callable[[Any], Any]]] = {}

    def of(self, items: list[Any]) -> Listed:
        """A request's list, to convert when its span is written."""
        return Listed(self, items)

    def _for(self, rt: Runtime) -> tuple[FragmentCache, Callable[[Any], Any]]:
        entry = self._per_runtime.get(rt)
        if entry is None:
            if len(self._per_runtime) >= RUNTIMES_KEPT:
                self._per_runtime.pop(next(iter(self._per_runtime)))
            convert = self._convert
            build: Callable[[Any], Any]
            if self._merge:

                def build(item: Any) -> Any:
                    return _merge_pieces(convert(item), rt)

            elif not self._messages:

                def build(item: Any) -> Any:
                    values = convert(item)
                    if not isinstance(values, list):  # one value
                        values = [values]
                    return [encode(p.applied_definition(value, rt)) for value in values]

            else:

                def build(item: Any) -> Any:
                    return _message_fragments(convert(item), rt)

            entry = self._per_runtime[rt] = (FragmentCache(self._limit), build)
        return entry

    def json(self, items: list[Any], rt: Runtime) -> str:
        """The items as a JSON list of messages (or of values), the Runtime applied."""
        cache, build = self._for(rt)
        if self._merge:
            return _merged_json([piece for pieces in cache.each(items, build) for piece in pieces])
        return cache._joined([pair for pairs in cache.each(items, build) for pair in pairs])


class Listed:
    """A request's list and the :class:`History` that converts it."""

    __slots__ = ("history", "items")

    def __init__(self, history: History, items: list[Any]) -> None:
        self.history = history
        self.items = items

    def json(self, rt: Runtime) -> str:
        return self.history.json(self.items, rt)

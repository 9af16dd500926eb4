"""A run opened in ``spanfold ui``, sent as it is shown: a page of events at a time, each long text cut to its
first :data:`CLIP` characters (the rest sent a slice at a time when asked for), the raw record and the spec built only
when asked for. A run is decoded once and kept while the page reads it (:class:`OpenRuns`: the last few opened).

A cut is told beside the event, never in its text: ``cut`` maps the path of each shortened string (keys and list
positions joined by ``/``) to its full length.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from spanfold.trace.compact import compact_messages
from spanfold.trace.formats import meta_dict
from spanfold.trace.model import Message, Trace
from spanfold.ui.steps import waterfall

#: Characters of a string sent with its event (the rest on request).
CLIP = 2000
#: An inline image (``data:image/...``) is sent whole up to this many characters (a cut image would not show).
IMAGE_CHARS = 4 * 1024 * 1024
#: Events per page (a page ends after the tool outputs of its last calls, so a call and its output arrive together).
PAGE = 200
#: Characters per slice of a long text, the raw record or the spec.
SLICE = 200_000
#: Runs kept decoded, and the bytes of their records together (the run opened last is always kept).
KEEP_RUNS = 4
KEEP_BYTES = 256 * 1024 * 1024


def clip(value: Any, limit: int = CLIP) -> tuple[Any, dict[str, int]]:
    """``value`` with each string longer than ``limit`` cut to ``limit`` characters, and the cuts: path -> length."""
    cuts: dict[str, int] = {}

    def walk(item: Any, path: str) -> Any:
        if isinstance(item, str):
            if len(item) <= limit or (item.startswith("data:image/") and len(item) <= IMAGE_CHARS):
                return item
            cuts[path] = len(item)
            return item[:limit]
        if isinstance(item, dict):
            return {k: walk(v, f"{path}/{k}" if path else str(k)) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v, f"{path}/{i}" if path else str(i)) for i, v in enumerate(item)]
        return item

    return walk(value, ""), cuts


def at_path(value: Any, path: str) -> Any:
    """The part of ``value`` at ``path`` (as :func:`clip` writes it); KeyError when there is none."""
    for part in path.split("/") if path else []:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise KeyError(path)
    return value


def text_of(value: Any) -> str:
    """A string as it is; anything else as indented JSON."""
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)


def event_json(n: int, ev: Message) -> dict[str, Any]:
    """An event as the page reads it: the Invariant event with its timestamp, ``n`` (from 1), its tool's name and its
    metadata."""
    out: dict[str, Any] = ev.to_invariant(timestamps=True)
    out["n"] = n
    if ev.name is not None:
        out["name"] = ev.name
    if ev.metadata:
        out["metadata"] = ev.metadata
    return out


@dataclass(slots=True)
class Opened:
    """One run decoded: its trace, metadata, waterfall, and the texts built from it on request."""

    key: tuple[Any, ...]
    size: int
    trace: Trace | None
    raw: Callable[[], Any]  # the record as it was read (read again when asked for)
    meta: dict[str, Any] = field(default_factory=dict)
    waterfall: dict[str, Any] | None = None
    answered: dict[str, int] = field(default_factory=dict)  # tool call id -> its output's event (from 1)
    _texts: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def of(cls, key: tuple[Any, ...], size: int, trace: Trace | None, raw: Callable[[], Any]) -> Opened:
        opened = cls(key, size, trace, raw)
        if trace is not None:
            opened.meta = meta_dict(trace)
            opened.waterfall = waterfall(trace)
            for n, ev in enumerate(trace.events, 1):
                if ev.role == "tool" and ev.tool_call_id is not None:
                    opened.answered.setdefault(ev.tool_call_id, n)
        return opened

    @property
    def count(self) -> int:
        return len(self.trace.events) if self.trace is not None else 0

    def page_end(self, start: int, count: int = PAGE) -> int:
        """Where a page from ``start`` ends: ``count`` events on, then past the tool outputs that follow."""
        events = self.trace.events if self.trace is not None else []
        end = min(len(events), start + max(1, count))
        while end < len(events) and events[end].role == "tool":
            end += 1
        return end

    def events(self, start: int, end: int) -> list[dict[str, Any]]:
        """Events ``start`` to ``end`` (from 0) as sent: long strings cut (``cut``), each call's output event named
        (``outputs``: call id -> event, from 1)."""
        out: list[dict[str, Any]] = []
        if self.trace is None:
            return out
        for n in range(start + 1, min(end, self.count) + 1):
            ev = self.trace.events[n - 1]
            sent, cuts = clip(event_json(n, ev))
            if cuts:
                sent["cut"] = cuts
            outputs = {c.id: self.answered[c.id] for c in ev.tool_calls if c.id and c.id in self.answered}
            if outputs:
                sent["outputs"] = outputs
            out.append(sent)
        return out

    def part(self, n: int, path: str) -> str:
        """The whole text of event ``n``'s part at ``path`` (a string as it is, anything else as indented JSON)."""
        if self.trace is None or not 1 <= n <= self.count:
            raise KeyError(n)
        return text_of(at_path(event_json(n, self.trace.events[n - 1]), path))

    def text(self, name: str) -> str:
        """The raw record as indented JSON (``raw``) or the spec (``spec``), built on the first request."""
        with self._lock:
            if name not in self._texts:
                if name == "raw":
                    self._texts[name] = text_of(self.raw())
                elif self.trace is not None:
                    self._texts[name] = _spec(self.trace)
                else:
                    self._texts[name] = ""
            return self._texts[name]


def _spec(trace: Trace) -> str:
    """The trace as expected messages for ``spanfold check`` (YAML; libyaml's emitter when it is there)."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text: str = yaml.dump(compact_messages(trace), Dumper=dumper, sort_keys=False, allow_unicode=True, width=120)
    return text


def slice_of(text: str, start: int, chars: int = SLICE) -> dict[str, Any]:
    """``chars`` characters of ``text`` from ``start``, with the text's length."""
    start = max(0, min(start, len(text)))
    return {"text": text[start : start + max(1, min(chars, SLICE))], "from": start, "total": len(text)}


class OpenRuns:
    """The runs opened last, decoded once: a run is looked up by its key (its place in its file, which changes when
    the file is written again)."""

    def __init__(self, keep: int = KEEP_RUNS, keep_bytes: int = KEEP_BYTES) -> None:
        self.keep = keep
        self.keep_bytes = keep_bytes
        self._runs: OrderedDict[tuple[Any, ...], Opened] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], load: Callable[[], Opened]) -> Opened:
        with self._lock:
            found = self._runs.get(key)
            if found is not None:
                self._runs.move_to_end(key)
                return found
        opened = load()
        with self._lock:
            self._runs[key] = opened
            self._runs.move_to_end(key)
            while len(self._runs) > 1 and (
                len(self._runs) > self.keep or sum(o.size for o in self._runs.values()) > self.keep_bytes
            ):
                self._runs.popitem(last=False)
        return opened

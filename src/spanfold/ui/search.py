"""Full-text search over the content of runs (messages, tool arguments and outputs): which runs hold a text.

A JSONL file is searched in its bytes, a chunk at a time, lowercased (ASCII letters: ``é`` and ``É`` differ), for
the text as a JSON string writes it (raw UTF-8, and ``\\u`` escapes for files written ASCII-only); a hit inside a key
(``"role":``) is no hit. What a file held is searched once per text: a grown file is searched from where the last
search stopped. A run read whole (a JSON or YAML document, a span file's folded run) is searched in its events' text.
"""

from __future__ import annotations

import json
import os
import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spanfold.trace.model import Trace
from spanfold.ui.index import Row

#: Bytes read per step.
CHUNK = 4 * 1024 * 1024
#: Texts whose hits are kept (per file), and runs whose text is kept (read whole).
KEEP_TEXTS = 8
KEEP_RUN_TEXTS = 20_000


def variants(text: str) -> list[bytes]:
    """The lowercased bytes ``text`` can be in a JSON file: as written by a UTF-8 writer, and ASCII-only."""
    plain = json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass").lower()
    ascii_only = json.dumps(text, ensure_ascii=True)[1:-1].encode("ascii").lower()
    return [plain] if plain == ascii_only else [plain, ascii_only]


def _in_key(chunk: bytes, end: int) -> bool:
    """Whether the hit ending at ``end`` is inside an object key: its string is followed by ``:``."""
    i = end
    while True:
        i = chunk.find(b'"', i)
        if i < 0:
            return False  # not closed in this chunk: taken for a value
        slashes = 0
        while i - slashes - 1 >= 0 and chunk[i - slashes - 1] == 0x5C:
            slashes += 1
        if slashes % 2 == 0:
            break
        i += 1
    rest = chunk[i + 1 : i + 64].lstrip()
    return rest.startswith(b":")


@dataclass(slots=True)
class _Scan:
    """What one text's search of one file found so far."""

    inode: int
    done: int = 0  # bytes searched
    hits: set[int] = field(default_factory=set)  # offsets of the runs (lines) that hold the text


def run_text(trace: Trace) -> str:
    """A run's searchable text: its messages, tool calls (names and arguments) and outputs, lowercased."""
    parts: list[str] = []
    for ev in trace.events:
        parts.append(ev.text() if not isinstance(ev.content, list) else json.dumps(ev.content, ensure_ascii=False))
        for call in ev.tool_calls:
            parts.append(call.name)
            parts.append(json.dumps(call.arguments, ensure_ascii=False, default=str))
        if ev.error:
            parts.append(json.dumps(ev.error, ensure_ascii=False, default=str))
    return "\n".join(parts).lower()


class ContentSearch:
    """Which rows hold a text in their content; ``load(row)`` gives the trace of a row read whole."""

    def __init__(self, load: Callable[[Row], Trace | None]) -> None:
        self.load = load
        self._scans: OrderedDict[tuple[str, str], _Scan] = OrderedDict()
        self._texts: OrderedDict[tuple[str, int], str] = OrderedDict()
        self._lock = threading.Lock()

    def matching(self, text: str, rows: list[Row]) -> set[int]:
        """``id()`` of every row in ``rows`` whose content holds ``text`` (lowercased)."""
        needle = text.lower()
        found: set[int] = set()
        by_file: dict[str, list[Row]] = {}
        for row in rows:
            if row.offset >= 0:
                by_file.setdefault(row.file, []).append(row)
            elif needle in (self._whole_text(row) or ""):
                found.add(id(row))
        with self._lock:
            for path, in_file in by_file.items():
                in_file.sort(key=lambda r: r.offset)
                hits = self._scan(needle, path, in_file)
                found.update(id(r) for r in in_file if r.offset in hits)
            while len(self._scans) > KEEP_TEXTS * max(1, len(by_file)):
                self._scans.popitem(last=False)
        return found

    def _whole_text(self, row: Row) -> str | None:
        key = (row.id, row.seq)
        with self._lock:
            cached = self._texts.get(key)
        if cached is not None:
            return cached
        try:
            trace = self.load(row)
        except Exception:  # gone since it was indexed: not found
            return None
        text = run_text(trace) if trace is not None else ""
        with self._lock:
            self._texts[key] = text
            while len(self._texts) > KEEP_RUN_TEXTS:
                self._texts.popitem(last=False)
        return text

    def _scan(self, needle: str, path: str, rows: list[Row]) -> set[int]:
        """The offsets of ``rows`` (one file's, by offset) that hold ``needle``, searching only what is new."""
        try:
            inode = os.stat(path).st_ino
        except OSError:
            return set()
        key = (needle, path)
        scan = self._scans.get(key)
        if scan is None or scan.inode != inode:
            scan = _Scan(inode)
        self._scans[key] = scan
        self._scans.move_to_end(key)
        end = max(r.offset + r.length for r in rows)
        if end <= scan.done:
            return scan.hits
        starts = [r.offset for r in rows]
        ends = {r.offset: r.offset + r.length for r in rows}
        patterns = variants(needle)
        longest = max(len(p) for p in patterns)
        try:
            with open(path, "rb") as handle:
                at = scan.done
                while at < end:
                    handle.seek(at)
                    chunk = handle.read(min(CHUNK, end - at) + longest + 64).lower()
                    if not chunk:
                        break
                    limit = min(CHUNK, end - at)
                    for pattern in patterns:
                        self._find(chunk, pattern, at, limit, starts, ends, scan.hits)
                    at += limit
        except OSError:
            return scan.hits
        scan.done = end
        return scan.hits

    @staticmethod
    def _find(
        chunk: bytes, pattern: bytes, base: int, limit: int, starts: list[int], ends: dict[int, int], hits: set[int]
    ) -> None:
        """Add to ``hits`` the rows that hold ``pattern`` starting within ``chunk[:limit]`` (at ``base`` in the file);
        after a hit, the search goes on from the next row."""
        i = chunk.find(pattern)
        while 0 <= i < limit:
            where = bisect_right(starts, base + i) - 1
            row = starts[where] if where >= 0 else -1
            if row < 0 or base + i + len(pattern) > ends[row] or _in_key(chunk, i + len(pattern)):
                i = chunk.find(pattern, i + 1)
                continue
            hits.add(row)
            following = where + 1
            i = chunk.find(pattern, starts[following] - base) if following < len(starts) else -1


def load_trace(index: Any) -> Callable[[Row], Trace | None]:
    """How a run read whole (a document's, a span file's folded run) is decoded, through ``index``."""

    def load(row: Row) -> Trace | None:
        if row.offset >= 0:
            return None  # a line of a JSONL file: searched in the file's bytes
        return index.trace(row)[1]  # type: ignore[no-any-return]

    return load

"""An OTLP JSON span file under watch (``serve --format otlp-json --ui``, a Collector file exporter's output): each
look reads only the lines appended since the last, and folds again only the traces those lines touched.

The traces come out exactly as a fold of the whole file (:func:`spanfold.exporter.pipeline.span_files.fold_spans`) gives
them:

* a trace whose spans hold an agent span, or whose run the source decided (``spanfold.stitched``: its trace id says
  which run it is), is folded on its own: a line of its spans folds it again, alone;
* traces that may be stitched into one run (another producer's un-parented calls of no agent:
  :mod:`spanfold.exporter.runs.stitch`) are folded together whenever one of them is touched, since a later call may
  continue any of them.

Where each trace's spans are is kept (the offset and length of each line holding some), never the spans: a trace is
folded again from its lines, read again. A line that cannot be read is a problem, counted, and left out. A file that
is not JSON lines (gzip, one document, a list of requests) is folded whole again when it changes; so is a file that
was replaced or shrank. A file's last line is read once it ends with a newline, or once the file has been left
alone for :data:`SETTLE_S` seconds.

What a look changed is a :class:`Update`: the runs to drop and the runs to add, applied by the index in one step,
so the list never shows fewer runs while a file is folded.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from spanfold.exporter.otlp.common import OtlpError
from spanfold.exporter.otlp.json_in import decode_body
from spanfold.exporter.pipeline.span_files import SpanFileError, fold_records, fold_spans
from spanfold.exporter.records import SpanRecord
from spanfold.exporter.runs.stitch import placed_at_source
from spanfold.trace.model import Trace

#: Seconds a span file whose last line has no newline yet is left alone (a writer is appending to it).
SETTLE_S: Final = 2.0
#: Bytes read per look (bounds the time one look takes and the memory it holds; the rest is read at the next).
CHUNK: Final = 8 * 1024 * 1024
_GZIP_MAGIC: Final = b"\x1f\x8b"


@dataclass(slots=True)
class Run:
    """One folded trace of the file: the OTel trace ids it was folded from, the line its first span is on."""

    key: int  # its first trace id: the same at every look
    trace_ids: frozenset[int]
    line: int
    trace: Trace
    free: bool = False  # a run another trace's calls may be stitched into


@dataclass(slots=True)
class Update:
    """What one look changed: the runs (by key) no longer there or folded again, and the runs folded now."""

    dropped: list[int] = field(default_factory=list)
    added: list[Run] = field(default_factory=list)
    problems: int = 0  # lines found bad at this look
    spans: int = 0  # spans folded at this look
    whole: bool = False  # the file was read and folded whole (every earlier run dropped)


def _trace_ids(trace: Trace) -> frozenset[int]:
    stitched = trace.meta.extra.get("otel_trace_ids")
    ids = stitched if isinstance(stitched, list) and stitched else [trace.meta.trace_id]
    return frozenset(int(t, 16) for t in ids if isinstance(t, str) and t)


def _stitched(trace: Trace) -> bool:
    """Folded through the stitcher (a run of un-parented calls), not as a trace of its own."""
    return "otel_trace_ids" in trace.meta.extra


def _placed(records: Iterable[SpanRecord]) -> set[int]:
    """The traces whose run the source decided: their first local root carries ``spanfold.stitched`` (the stitcher
    joins nothing else to such a run, nor it to another)."""
    roots: dict[int, SpanRecord] = {}
    for r in records:
        known = roots.get(r.trace_id)
        if r.is_local_root and (known is None or (r.start_ns, r.span_id) < (known.start_ns, known.span_id)):
            roots[r.trace_id] = r
    return {trace_id for trace_id, root in roots.items() if placed_at_source(root)}


@dataclass(slots=True)
class _Line:
    number: int
    offset: int
    length: int


class SpanFile:
    """One span file: where each trace's spans are, and the runs folded from them (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._reset()

    def _reset(self) -> None:
        self.done = 0  # bytes read (whole lines)
        self.lines = 0
        self.inode = -1
        self.stamp: tuple[int, int] = (-1, -1)
        self.whole: bool | None = None  # None: not known yet (nothing read)
        self.open_end = False  # the last line read had no newline (a file that grows after it is read again)
        self.pending = False  # more lines than one look reads were there at the last look
        self.where: dict[int, list[_Line]] = {}  # trace id -> the lines holding its spans
        self.first: dict[int, int] = {}  # trace id -> the line its first span is on
        self.runs: dict[int, Run] = {}  # key -> run
        self.member: dict[int, int] = {}  # trace id -> the key of the run it is folded into

    # --- looking --------------------------------------------------------------------------------------------

    def refresh(self) -> Update | None:
        """Read what changed; None when nothing did. Raises OSError when the file cannot be read."""
        st = self.path.stat()
        replaced = (self.inode != -1 and st.st_ino != self.inode) or st.st_size < self.done
        if replaced or (self.open_end and st.st_size > self.done):
            dropped = list(self.runs)
            self._reset()
            update = self.refresh() or Update()
            update.dropped = dropped + [k for k in update.dropped if k not in dropped]
            return update
        self.inode = st.st_ino
        if self.whole is None:
            self.whole = self._is_whole()
        self.pending = False
        if self.whole:
            return self._refresh_whole(st)
        if st.st_size == self.done:
            return None
        return self._refresh_lines(st)

    def _is_whole(self) -> bool:
        """Whether the file is not JSON lines (gzip, or a first line that is no JSON object)."""
        with self.path.open("rb") as handle:
            head = handle.read(2)
            if head.startswith(_GZIP_MAGIC):
                return True
            handle.seek(0)
            first = handle.readline(CHUNK)
            while first and not first.strip():
                first = handle.readline(CHUNK)
        try:
            return not isinstance(json.loads(first), dict)
        except (ValueError, RecursionError):
            return True

    def _refresh_whole(self, st: os.stat_result) -> Update | None:
        stamp = (st.st_size, st.st_mtime_ns)
        if stamp == self.stamp or not self._settled(st):
            return None
        self.stamp = stamp
        update = Update(dropped=list(self.runs), whole=True)
        self.runs, self.member = {}, {}
        try:
            folded = fold_spans([self.path])
        except SpanFileError:
            update.problems = 1
            return update
        update.spans = folded.spans
        for trace, _, line in folded.traces:
            self._keep(trace, line, update)
        return update

    def _settled(self, st: os.stat_result) -> bool:
        """Whether the file ends with a newline, or was left alone long enough to be read as it is."""
        if st.st_size == 0:
            return False
        with self.path.open("rb") as handle:
            handle.seek(st.st_size - 1)
            if handle.read(1) == b"\n":
                return True
        return time.time() - st.st_mtime >= SETTLE_S

    def _refresh_lines(self, st: os.stat_result) -> Update | None:
        update = Update()
        touched: set[int] = set()
        settled = self._settled(st)
        with self.path.open("rb") as handle:
            handle.seek(self.done)
            budget = CHUNK
            while True:
                if budget <= 0:
                    self.pending = True
                    break
                offset = handle.tell()
                raw = handle.readline(CHUNK)
                if not raw or (not raw.endswith(b"\n") and not settled):
                    break  # the end, or a line still being written
                self.lines += 1
                self.done = handle.tell()
                budget -= len(raw)
                self.open_end = not raw.endswith(b"\n")
                if not raw.strip():
                    continue
                records = self._decode(raw, update)
                line = _Line(self.lines, offset, len(raw))
                for trace_id in {r.trace_id for r in records}:
                    self.where.setdefault(trace_id, []).append(line)
                    self.first.setdefault(trace_id, line.number)
                    touched.add(trace_id)
        if not touched:
            return update if update.problems else None
        self._fold(touched, update)
        return update

    @staticmethod
    def _decode(raw: bytes, update: Update) -> list[SpanRecord]:
        try:
            decoded = decode_body(raw)
        except OtlpError:
            update.problems += 1
            return []
        if decoded.rejected:
            update.problems += 1
            return []
        return decoded.records

    # --- folding --------------------------------------------------------------------------------------------

    def _fold(self, touched: set[int], update: Update) -> None:
        """Fold the touched traces again, with the runs they belong to (and, when one of them may be stitched, with
        every run that may be)."""
        keys = {self.member[t] for t in touched if t in self.member}
        trace_ids = set(touched).union(*(self.runs[k].trace_ids for k in keys))
        traces, placed = self._fold_ids(trace_ids, update)
        free = [_stitched(t) and not _trace_ids(t) <= placed for t in traces]
        if any(free) or any(self.runs[k].free for k in keys):
            others = {k for k, run in self.runs.items() if run.free} - keys
            if others:  # runs a stitched call may continue: fold them all together again
                keys |= others
                trace_ids = trace_ids.union(*(self.runs[k].trace_ids for k in others))
                traces, placed = self._fold_ids(trace_ids, update)
                free = [_stitched(t) and not _trace_ids(t) <= placed for t in traces]
        for key in keys:
            run = self.runs.pop(key)
            for trace_id in run.trace_ids:
                self.member.pop(trace_id, None)
            update.dropped.append(key)
        for trace, is_free in zip(traces, free, strict=True):
            first = min((self.first[t] for t in _trace_ids(trace) if t in self.first), default=1)
            self._keep(trace, first, update).free = is_free

    def _fold_ids(self, trace_ids: set[int], update: Update) -> tuple[list[Trace], set[int]]:
        """Read again the lines holding these traces' spans, and fold their spans (theirs only); and which of these
        traces' runs the source decided."""
        lines = sorted({id(x): x for t in trace_ids for x in self.where.get(t, ())}.values(), key=lambda x: x.offset)
        records: list[SpanRecord] = []
        with self.path.open("rb") as handle:
            for line in lines:
                handle.seek(line.offset)
                try:
                    decoded = decode_body(handle.read(line.length))
                except OtlpError:
                    continue  # changed since it was read: the next look reads the file again
                records.extend(r for r in decoded.records if r.trace_id in trace_ids)
        update.spans += len(records)
        return fold_records(records), _placed(records)

    def _keep(self, trace: Trace, line: int, update: Update) -> Run:
        ids = _trace_ids(trace)
        key = min(ids, key=lambda t: (self.first.get(t, line), t)) if ids else -len(self.runs) - 1
        run = Run(key, ids, line, trace)
        self.runs[key] = run
        for trace_id in ids:
            self.member[trace_id] = key
        update.added.append(run)
        return run


def runs_in_order(runs: Iterable[Run]) -> list[Run]:
    """Runs by the line their first span is on."""
    return sorted(runs, key=lambda r: (r.line, r.key))

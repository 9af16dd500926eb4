"""A run: what the fold folds into one flat trace. The spans of one trace, or of the traces a stitched conversation
joined (:mod:`.stitch`), their steps, and how complete it is.

A run's status says how complete what was written is: ``truncated`` (spans were dropped) over ``incomplete`` (written
before it was done) over ``complete`` (:func:`status`); the fold may find an ``error`` too (a root agent or the last
step failed), and a trace's status is the less complete of the two (:func:`worst`: a stitched run is as complete as
its least complete member).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from spanfold import semconv
from spanfold.exporter.records import SpanRecord

if TYPE_CHECKING:  # the assembler imports status() at init(): the steps and the trace model load with the fold
    from spanfold.exporter.steps import Steps
    from spanfold.trace.model import TraceStatus

#: Less complete ranks higher: an error is told even when the run was written early; dropped spans say the most.
_STATUS_RANK: Final[dict[TraceStatus, int]] = {"complete": 0, "incomplete": 1, "error": 2, "truncated": 3}


def status(*, truncated: bool, incomplete: bool) -> TraceStatus:
    """A trace's status: ``truncated`` (spans were dropped) over ``incomplete`` (written before it was done)."""
    return "truncated" if truncated else ("incomplete" if incomplete else "complete")


def worst(a: TraceStatus, b: TraceStatus) -> TraceStatus:
    """The less complete of two statuses."""
    return b if _STATUS_RANK[b] > _STATUS_RANK[a] else a


@dataclass(slots=True)
class Run:
    """One run, finished: its spans, each one's step by span id (read once, by the dialects), its OTel trace ids (the
    first names the folded trace) and its status. ``stitched``: a conversation of un-parented traces (its metadata
    lists them all)."""

    trace_ids: list[int]
    records: list[SpanRecord]
    steps: Steps
    status: TraceStatus = "complete"
    stitched: bool = False
    #: The run's own id within a trace other runs share (``spanfold.run.id``: runs under a caller's TRACEPARENT);
    #: None: the trace is the run's.
    run_id: str | None = None


def part_key(trace_id: int, run_id: str | None) -> Hashable:
    """What names a run's part of a trace: its trace id, with its run's id when the trace holds several runs."""
    return trace_id if run_id is None else (trace_id, run_id)


def run_parts(trace_id: int, records: list[SpanRecord]) -> list[tuple[str | None, list[SpanRecord]]]:
    """The runs one trace's spans belong to, by ``spanfold.run.id``: a span names its run, else its nearest ancestor
    here that names one does; the spans no run names are one part (``None``). A trace whose spans name no run is one
    part: the common case costs one lookup per span."""
    for record in records:
        if semconv.SPANFOLD_RUN_ID in record.attributes:
            break
    else:
        return [(None, records)]
    by_span = {r.span_id: r for r in records}
    known: dict[int, str | None] = {}
    parts: dict[str | None, list[SpanRecord]] = {}
    for record in records:
        path: list[int] = []
        current: SpanRecord | None = record
        found: str | None = None
        while current is not None and len(path) <= len(records):  # a parent loop in foreign data ends here
            if current.span_id in known:
                found = known[current.span_id]
                break
            path.append(current.span_id)
            value = current.attributes.get(semconv.SPANFOLD_RUN_ID)
            if isinstance(value, str) and value:
                found = value
                break
            parent = current.parent_id
            current = by_span.get(parent) if parent is not None and not current.parent_is_remote else None
        for span_id in path:
            known[span_id] = found
        parts.setdefault(found, []).append(record)
    return list(parts.items())

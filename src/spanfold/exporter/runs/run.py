"""A run: what the fold folds into one flat trace. The spans of one trace, or of the traces a stitched conversation
joined (:mod:`.stitch`), their steps, and how complete it is.

A run's status says how complete what was written is: ``truncated`` (spans were dropped) over ``incomplete`` (written
before it was done) over ``complete`` (:func:`status`); the fold may find an ``error`` too (a root agent or the last
step failed), and a trace's status is the less complete of the two (:func:`worst`: a stitched run is as complete as
its least complete member).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from spanfold.exporter.records import SpanRecord
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

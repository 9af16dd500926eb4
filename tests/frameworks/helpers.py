"""Shared by the framework tests: the spans of a run folded in memory (events keep their metadata: which span each
came from), and spanfold initialised with content capture off."""

from __future__ import annotations

from typing import Any

from spanfold.exporter.fold.folding import fold
from spanfold.exporter.records import from_readable
from spanfold.trace.model import Trace


def folded(exporter: Any) -> list[Trace]:
    """Each trace among the finished spans of ``exporter`` (an in-memory exporter) that folds to some event, in start
    order (an MCP session's set-up requests are traces of their own, with no event)."""
    by_trace: dict[int, list[Any]] = {}
    for span in exporter.get_finished_spans():
        by_trace.setdefault(span.context.trace_id, []).append(from_readable(span))
    traces = [fold(records, trace_id=format(tid, "032x")) for tid, records in by_trace.items()]
    return sorted((t for t in traces if t.events), key=lambda t: t.meta.start or "")


def span_ids(exporter: Any, name_prefix: str) -> set[str]:
    """The hex ids of the finished spans whose name starts with ``name_prefix``."""
    return {format(s.context.span_id, "016x") for s in exporter.get_finished_spans() if s.name.startswith(name_prefix)}

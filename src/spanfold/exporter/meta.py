"""Trace metadata, beside the events (DESIGN "Export formats"): the models a trace used, its token totals, start,
end and duration, its service and name, its status; and the metadata an event gets from its model step.

Shared by the fold (:class:`Tally` over a trace's steps, :func:`trace_meta`), the stitcher (:func:`worst`: a
stitched run is as complete as its least complete member) and the assembler (:func:`status`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Final

from spanfold import semconv
from spanfold.exporter.records import SpanRecord
from spanfold.exporter.steps import AgentSpan, ModelStep
from spanfold.trace.model import TraceMeta, TraceStatus, Usage

_STATUS_RANK: Final[dict[TraceStatus, int]] = {"complete": 0, "incomplete": 1, "truncated": 2}


@lru_cache(maxsize=4096)  # the events of one step share its timestamp
def iso(ns: int) -> str:
    """ISO 8601 UTC with milliseconds: ``2025-01-31T12:00:00.123Z``."""
    sec, rem = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + f".{rem // 1_000_000:03d}Z"


@lru_cache(maxsize=4096)  # every event of a step names its span
def span_hex(span_id: int) -> str:
    return format(span_id, "016x")


def trace_hex(trace_id: int) -> str:
    return format(trace_id, "032x")


def status(*, truncated: bool, incomplete: bool) -> TraceStatus:
    """A trace's status: ``truncated`` (spans were dropped) over ``incomplete`` (written before it was done)."""
    return "truncated" if truncated else ("incomplete" if incomplete else "complete")


def worst(a: TraceStatus, b: TraceStatus) -> TraceStatus:
    """The less complete of two statuses."""
    return b if _STATUS_RANK[b] > _STATUS_RANK[a] else a


def step_metadata(step: ModelStep) -> dict[str, Any]:
    """What a model step's first output event (and its error event) carries: span, model, provider, response id,
    finish reasons, usage."""
    meta: dict[str, Any] = {"span_id": span_hex(step.span_id)}
    if step.model:
        meta["model"] = step.model
    if step.provider:
        meta["provider"] = step.provider
    if step.response_id:
        meta["response_id"] = step.response_id
    if step.finish_reasons:
        meta["finish_reasons"] = step.finish_reasons
    if step.usage is not None:
        meta["usage"] = {"input_tokens": step.usage.input_tokens, "output_tokens": step.usage.output_tokens}
    return meta


class Tally:
    """The models and token totals of a trace's model steps, as the fold takes them."""

    __slots__ = ("models", "usage")

    def __init__(self) -> None:
        self.models: set[str] = set()
        self.usage = Usage()

    def add(self, step: ModelStep) -> None:
        if step.model:
            self.models.add(step.model)
        if step.usage is not None:
            self.usage.add(step.usage)


def trace_meta(trace_id: str, records: Sequence[SpanRecord], roots: Sequence[AgentSpan], tally: Tally) -> TraceMeta:
    """A trace's metadata: span count, start, end and duration, service (of its first span's resource), name (the
    earliest root agent's), models and token totals."""
    meta = TraceMeta(trace_id=trace_id, span_count=len(records))
    if records:
        start = min(r.start_ns for r in records)
        end = max(r.end_ns for r in records)
        meta.start, meta.end, meta.duration_ms = iso(start), iso(end), (end - start) / 1e6
        service = records[0].resource.get(semconv.SERVICE_NAME)
        meta.service = str(service) if service is not None else None
    if roots:
        meta.name = min(roots, key=lambda a: (a.start_ns, a.span_id)).name
    meta.models = sorted(tally.models)
    meta.usage = tally.usage
    return meta

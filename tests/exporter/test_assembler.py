"""The Assembler every span path shares: when a trace is done under each policy, the bounds, the clock. Fed the
real spans of one weather-agent run (openai SDK against the mock server, spanfold's instrumentation), the clock
passed in, so nothing sleeps."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from spanfold import config, counters
from spanfold.exporter.files.writers import MemoryWriter
from spanfold.exporter.fold.folding import fold
from spanfold.exporter.pipeline.assembler import Assembler, Policy, trace_root
from spanfold.exporter.records import SpanRecord, from_readable

from ..bridge.conftest import run_weather_agent


@pytest.fixture
def records(_global_provider: Any, global_spans: Any) -> Iterator[list[SpanRecord]]:
    """One run's spans, in the order they ended (the root last)."""
    run_weather_agent(_global_provider, "unit")
    spans = [from_readable(s) for s in global_spans.get_finished_spans()]
    assert len(spans) == 7 and spans[-1].parent_id is None
    yield spans


def assembler(policy: Policy | None = None, **limits: Any) -> tuple[Assembler, MemoryWriter]:
    writer = MemoryWriter()
    return Assembler([writer], config.load(limits), policy), writer


def moved(records: list[SpanRecord], trace_id: int) -> list[SpanRecord]:
    return [dataclasses.replace(r, trace_id=trace_id) for r in records]


def test_ended_policy_waits_for_every_started_span(records: list[SpanRecord]) -> None:
    a, writer = assembler()
    for r in records:
        a.started(r.trace_id, r.span_id, 0.0)
    late = records[0]  # a child that ends after its root
    for r in records[1:]:
        a.add(r, 1.0)
    assert writer.traces == [] and a.spans == 6
    a.add(late, 2.0)
    (trace,) = writer.traces
    assert trace.meta.status == "complete" and a.spans == 0
    assert trace.to_invariant() == fold(records, trace_id=trace.meta.trace_id).to_invariant()


def test_flush_writes_rooted_traces_and_final_flush_everything(records: list[SpanRecord]) -> None:
    a, writer = assembler()
    a.started(records[0].trace_id, 99, 0.0)  # a span that never ends
    for r in records:
        a.add(r, 1.0)
    other = moved(records[:-1], 7)  # no root
    for r in other:
        a.add(r, 1.0)
    a.flush(2.0, final=False)
    assert [t.meta.status for t in writer.traces] == ["incomplete"]  # rooted, one span still open
    a.flush(3.0, final=True)
    assert [t.meta.status for t in writer.traces] == ["incomplete", "incomplete"]
    assert counters.snapshot()["traces_incomplete"] == 2


def test_quiet_policy_folds_once_the_root_came_and_the_trace_went_quiet(records: list[SpanRecord]) -> None:
    a, writer = assembler(Policy(quiet=5.0, root=trace_root))
    for r in records[:-1]:
        a.add(r, 10.0)
    a.expire(100.0)
    assert writer.traces == []  # quiet for long, but no root
    a.add(records[-1], 100.0)
    assert a.next_deadline() == 105.0
    a.expire(104.9)
    assert writer.traces == []
    a.expire(105.0)
    (trace,) = writer.traces
    assert trace.meta.status == "complete" and trace.meta.span_count == 7


def test_a_late_span_postpones_a_quiet_trace(records: list[SpanRecord]) -> None:
    a, writer = assembler(Policy(quiet=5.0, root=trace_root))
    for r in records[1:]:
        a.add(r, 0.0)
    a.add(records[0], 4.0)
    a.expire(5.0)
    assert writer.traces == []
    a.expire(9.0)
    assert writer.traces[0].meta.span_count == 7


def test_a_remote_parent_is_a_root_in_process_not_for_the_whole_trace(records: list[SpanRecord]) -> None:
    remote = [*records[:-1], dataclasses.replace(records[-1], parent_id=12345, parent_is_remote=True)]
    local, local_writer = assembler(Policy(quiet=0.0))
    whole, whole_writer = assembler(Policy(quiet=0.0, root=trace_root))
    for r in remote:
        local.add(r, 0.0)
        whole.add(r, 0.0)
    local.expire(1.0)
    whole.expire(1.0)
    assert len(local_writer.traces) == 1 and whole_writer.traces == []


def test_trace_timeout_cuts_a_trace_whose_root_never_comes(records: list[SpanRecord]) -> None:
    a, writer = assembler(Policy(quiet=5.0, root=trace_root), trace_timeout=60.0)
    for r in records[:-1]:
        a.add(r, 0.0)
    assert a.next_deadline() == 60.0
    a.expire(59.0)
    assert writer.traces == []
    a.expire(60.0)
    assert [t.meta.status for t in writer.traces] == ["incomplete"]


def test_traces_in_flight_are_bounded(records: list[SpanRecord]) -> None:
    a, writer = assembler(Policy(quiet=60.0), max_traces_in_flight=2)
    for trace_id in (1, 2, 3):
        for r in moved(records[:-1], trace_id):
            a.add(r, float(trace_id))
    assert [t.meta.trace_id for t in writer.traces] == [format(1, "032x")]  # the least recently active, cut
    assert writer.traces[0].meta.status == "incomplete"
    assert a.stats()["traces_in_flight"] == 2 and a.spans == 12


def test_spans_per_trace_are_bounded_and_the_root_always_kept(records: list[SpanRecord]) -> None:
    a, writer = assembler(max_spans_per_trace=3)
    for r in records:
        a.add(r, 0.0)
    (trace,) = writer.traces
    assert trace.meta.status == "truncated" and trace.meta.span_count == 4  # three children and the root
    assert trace.meta.name == "unit"
    assert counters.snapshot()["dropped_spans"] == 3 and counters.snapshot()["traces_truncated"] == 1

"""Bounded memory: spans streamed through ``FoldingSpanProcessor`` hold memory flat once the in-flight limit is
reached (the workload of ``bench/memory_1m.py``, which runs a million spans under ``tracemalloc``), and each limit's
overflow is counted and marked on the trace."""

from __future__ import annotations

import gc
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from spanfold import config, counters
from spanfold.exporter.pipeline.processor import FoldingSpanProcessor

_BENCH = Path(__file__).resolve().parents[2] / "bench" / "memory_1m.py"
_spec = importlib.util.spec_from_file_location("spanfold_bench_memory_1m", _BENCH)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench
_spec.loader.exec_module(bench)

IN_FLIGHT = 100
SPANS = 20_000
CHECKPOINT = 5_000  # by then the stuck runs have filled the in-flight limit


def _processor(writer: Any, **options: Any) -> FoldingSpanProcessor:
    return FoldingSpanProcessor([writer], config.load({"trace_timeout": 3600.0, **options}))


def test_memory_stays_flat_as_spans_stream_through() -> None:
    """20,000 spans (5,000 agent runs, every tenth never ending) in batches of 2,500: live allocated blocks after
    5,000 spans and after 20,000 are the same within 1 %, while every finished run is written."""
    writer = bench.CountingWriter()
    processor = _processor(writer, max_traces_in_flight=IN_FLIGHT)
    blocks: dict[int, int] = {}
    fed = run = 0
    try:
        while fed < SPANS:
            for ctx, span in bench.run_spans(run):
                processor.on_start(bench._Started(ctx))
                if span is not None:
                    processor.on_end(span)
                fed += 1
            run += 1
            if fed % 2_500 == 0:
                assert processor.force_flush(60_000)
                if fed in (CHECKPOINT, SPANS):
                    gc.collect()
                    blocks[fed] = sys.getallocatedblocks()
        stats = counters.snapshot()
        in_flight = processor.stats()["traces_in_flight"]
    finally:
        processor.shutdown()
    assert blocks[SPANS] - blocks[CHECKPOINT] < blocks[CHECKPOINT] // 100, blocks
    runs = SPANS // bench.SPANS_PER_RUN
    stuck = runs // bench.STUCK_EVERY
    assert in_flight == IN_FLIGHT  # the newest stuck runs, still waiting
    assert writer.by_status == {"complete": runs - stuck, "incomplete": stuck}  # the last IN_FLIGHT at shutdown
    assert stats["traces_incomplete"] == stuck - IN_FLIGHT
    assert stats["spans_received"] == SPANS - stuck
    assert stats.get("dropped_spans", 0) == 0


def _wide_trace(spans: int) -> list[ReadableSpan]:
    """One agent run with ``spans`` tool spans under its root (root last, as it ends last)."""
    root = bench._ctx(7, 1)
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t", "gen_ai.tool.call.result": "ok"}
    out = [
        bench._span(
            "execute_tool t", bench._ctx(7, k + 2), root, {**tool, "gen_ai.tool.call.id": f"c{k}"}, bench.T0 + k
        )
        for k in range(spans)
    ]
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "wide"}
    return [*out, bench._span("invoke_agent wide", root, None, agent, bench.T0)]


def test_spans_over_the_per_trace_limit_are_dropped_counted_and_the_trace_marked_truncated() -> None:
    writer = bench.CountingWriter()
    written: list[Any] = []
    writer.write = written.append  # type: ignore[method-assign]
    processor = _processor(writer, max_spans_per_trace=100)
    try:
        for span in _wide_trace(1_000):
            processor.on_end(span)
        assert processor.force_flush(30_000)
    finally:
        processor.shutdown()
    assert len(written) == 1
    trace = written[0]
    assert trace.meta.status == "truncated"
    assert [e.tool_call_id for e in trace.events] == [f"c{k}" for k in range(100)]  # the first 100; the root too
    stats = counters.snapshot()
    assert stats["traces_truncated"] == 1
    assert stats["dropped_spans"] == 1_000 - 100


def test_traces_over_the_in_flight_limit_are_cut_oldest_first_and_counted() -> None:
    writer = bench.CountingWriter()
    written: list[Any] = []
    writer.write = written.append  # type: ignore[method-assign]
    processor = _processor(writer, max_traces_in_flight=10)
    try:
        for run in range(25):  # roots never end
            for _, span in list(bench.run_spans(run))[:3]:
                assert span is not None
                processor.on_end(span)
        assert processor.force_flush(30_000)
        in_flight = processor.stats()["traces_in_flight"]
    finally:
        processor.shutdown()
    assert in_flight == 10
    assert counters.snapshot()["traces_incomplete"] == 15 + 10  # 15 cut on the way, 10 at shutdown
    cut = written[:15]
    assert [t.meta.status for t in cut] == ["incomplete"] * 15
    assert [json.loads(json.dumps(t.to_invariant()))[0]["content"] for t in cut] == [
        f"Weather in city {run}?" for run in range(15)
    ]


def test_attribute_bytes_over_the_per_trace_limit_are_counted_and_the_trace_marked_truncated() -> None:
    assert config.load({}, {"SPANFOLD_MAX_ATTRIBUTE_BYTES_PER_TRACE": "1000"}).max_attribute_bytes_per_trace == 1000
    writer = bench.CountingWriter()
    written: list[Any] = []
    writer.write = written.append  # type: ignore[method-assign]
    spans = _wide_trace(100)
    sizes = [sum(len(v) for v in (span.attributes or {}).values() if isinstance(v, str)) for span in spans]
    processor = _processor(writer, max_attribute_bytes_per_trace=sum(sizes[:30]))  # room for 30 tool spans
    try:
        for span in spans:
            processor.on_end(span)
        assert processor.force_flush(30_000)
    finally:
        processor.shutdown()
    (trace,) = written
    assert trace.meta.status == "truncated"
    assert [e.tool_call_id for e in trace.events] == [f"c{k}" for k in range(30)]  # what fits; the root is kept
    stats = counters.snapshot()
    assert stats["traces_truncated"] == 1
    assert stats["dropped_spans"] == 100 - 30

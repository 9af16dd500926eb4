"""The fold worker's queue: starts and ends dropped over the limit are counted, batches too; one depth."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider

import spanfold
from spanfold import config, counters
from spanfold.exporter.files.writers import MemoryWriter
from spanfold.exporter.pipeline.assembler import Policy
from spanfold.exporter.pipeline.processor import FoldingSpanProcessor
from spanfold.exporter.pipeline.worker import FoldWorker
from spanfold.exporter.records import SpanRecord


def test_span_starts_dropped_over_the_queue_limit_are_counted_in_stats() -> None:
    """A full queue drops the start markers of spans (their traces then no longer wait for them): counted, and
    reported by ``spanfold.stats()``, like dropped ends."""
    counters.reset()
    writer = MemoryWriter()
    # Two items at most (start markers and spans); the worker sleeps a minute unless a span's end wakes it.
    processor = FoldingSpanProcessor([writer], config.load({"max_queue_size": 1}), poll_interval=60.0)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("test")
    try:
        spans = [tracer.start_span(f"s{i}") for i in range(5)]
        assert processor.stats()["queue_depth"] == 2
        stats = spanfold.stats()
        assert stats["dropped_span_starts"] == 3
        assert "dropped_spans" not in stats
        for span in spans:
            span.end()
    finally:
        provider.shutdown()


def test_a_batch_offered_to_a_full_queue_is_dropped_whole_and_counted() -> None:
    """The exporter's path: a batch is queued whole or dropped whole (its spans counted); the receiver's ``submit``
    is never refused (it answers 503 itself). Depth counts every item: start markers and spans alike."""
    counters.reset()
    writer = MemoryWriter()
    worker = FoldWorker([writer], config.load({"max_queue_size": 3}), Policy(quiet=0.0), poll_interval=60.0)
    records = [_record(i) for i in range(1, 4)]
    try:
        for i in range(3):
            worker.start(7, 100 + i)  # start markers never wake the worker: the queue stays full
        assert worker.depth == worker.pending == 3
        assert worker.offer(records) is False
        assert counters.snapshot()["dropped_spans"] == 3
        worker.submit(records)  # unbounded
        assert worker.flush(30)
        assert worker.depth == 0
        assert worker.offer(records[:1]) is True
    finally:
        worker.flush(30, final=True)
    assert worker.offer(records) is False  # shut: refused, not counted as a drop
    assert counters.snapshot()["dropped_spans"] == 3


def _record(span_id: int) -> SpanRecord:
    return SpanRecord(trace_id=7, span_id=span_id, parent_id=None, name="chat m", start_ns=1, end_ns=2)

"""FoldingSpanExporter behind the SDK's standard BatchSpanProcessor: the same flat traces as the in-process
processor, un-parented calls stitched, options from SPANFOLD_*, bounded, quiet after shutdown."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import openai
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

from spanfold import config, counters
from spanfold.content.runtime import Runtime
from spanfold.exporter.files.writers import MemoryWriter
from spanfold.exporter.pipeline.span_exporter import FoldingSpanExporter
from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor
from spanfold.testing import MockLLMServer, run_agent, scenarios
from spanfold.trace.model import Trace

from .conftest import WEATHER_ROLES, folded_in_process


def test_a_whole_trace_folds_as_in_process(weather_spans: list[ReadableSpan]) -> None:
    writer = MemoryWriter()
    exporter = FoldingSpanExporter(writers=[writer])
    assert exporter.export(weather_spans[:4]) is SpanExportResult.SUCCESS  # two batches, in the order spans ended
    assert exporter.export(weather_spans[4:]) is SpanExportResult.SUCCESS
    assert exporter.force_flush()
    (trace,) = writer.traces
    assert trace.to_invariant() == folded_in_process(weather_spans)
    assert trace.meta.status == "complete" and trace.meta.name == "bridge-bot"
    exporter.shutdown()
    assert exporter.export(weather_spans) is SpanExportResult.FAILURE


def test_unparented_calls_are_stitched_behind_the_batch_processor() -> None:
    """Zero-code shape: no agent span; the calls share one trace id (stitched at the source), each a local root that
    reaches the exporter in its own batch; the exporter joins them."""
    writer = MemoryWriter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(FoldingSpanExporter(writers=[writer]), schedule_delay_millis=50))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider, runtime=Runtime(capture_content=True))
    try:
        with MockLLMServer(scenarios.weather_agent) as server:
            client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
            answer = run_agent("openai", client)
    finally:
        instrumentor.uninstrument()
    provider.shutdown()  # flushes the batch processor, then the exporter writes the open conversation
    (trace,) = writer.traces
    assert [e.role for e in trace.events] == WEATHER_ROLES
    assert trace.events[-1].content == answer
    assert len(trace.meta.extra["otel_trace_ids"]) == 1  # one trace id from the source; its parts arrive apart


def test_output_and_format_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, weather_spans: list[ReadableSpan]
) -> None:
    monkeypatch.setenv("SPANFOLD_OUTPUT", str(tmp_path / "out"))
    monkeypatch.setenv("SPANFOLD_FORMAT", "agentv")
    exporter = FoldingSpanExporter()
    exporter.export(weather_spans)
    exporter.shutdown()
    (line,) = (tmp_path / "out" / "traces.agentv.jsonl").read_text().splitlines()
    doc = json.loads(line)
    assert doc["trace_summary"]["toolCallsByName"] == {"get_weather": 2, "convert_temperature": 1}


class _Stuck(MemoryWriter):
    """Blocks the fold's thread in its first write until released."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def write(self, trace: Trace) -> None:
        self.entered.set()
        assert self.release.wait(10)
        super().write(trace)


def test_a_fold_that_falls_behind_drops_whole_batches_and_counts_them(weather_spans: list[ReadableSpan]) -> None:
    writer = _Stuck()
    exporter = FoldingSpanExporter(writers=[writer], config=config.load({"max_queue_size": 10}))
    try:
        assert exporter.export(weather_spans) is SpanExportResult.SUCCESS
        assert writer.entered.wait(10)  # the thread is stuck writing the first trace
        assert exporter.export(weather_spans) is SpanExportResult.SUCCESS  # 7 queued
        assert exporter.export(weather_spans) is SpanExportResult.SUCCESS  # 14 queued: over the limit now
        assert exporter.export(weather_spans) is SpanExportResult.FAILURE
        assert counters.snapshot()["dropped_spans"] == 7
    finally:
        writer.release.set()
    assert exporter.force_flush()
    # the three accepted batches, nothing of the fourth: the first trace (written), then the same spans twice while
    # buffered again, which count once (duplicate_spans)
    assert sum(t.meta.span_count for t in writer.traces) == 14
    assert counters.snapshot()["duplicate_spans"] == 7
    exporter.shutdown()


def test_disabled_exporter_writes_nothing(tmp_path: Path) -> None:
    disabled = config.load({"output": str(tmp_path / "out")}, {"SPANFOLD_DISABLED": "1"})
    exporter = FoldingSpanExporter(config=disabled)
    exporter.shutdown()
    assert not (tmp_path / "out").exists()

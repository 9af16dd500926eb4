"""GenAI metrics (issue 50, item 4) against real SDK calls over HTTP to the mock server, read back with an in-memory
reader: ``gen_ai.client.operation.duration`` and ``gen_ai.client.token.usage`` with the conventions' buckets and
attributes, a stream's time to first chunk, the cost counter added on the worker; sync, async and stream calls."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, NumberDataPoint

import spanfold
from spanfold import config
from spanfold.config import ConfigError
from spanfold.instrumentation.toolkit import metrics
from spanfold.instrumentation.toolkit.metrics import DURATION_BUCKETS, TOKEN_BUCKETS
from spanfold.testing import MockLLMServer, Reply, Usage

MODEL = "gpt-4o-mini"
PRICES = [{"model": MODEL, "input_mtok": 2.0, "output_mtok": 8.0}]


@pytest.fixture
def reader(tmp_path: Path, _global_provider: Any) -> Iterator[InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    spanfold.init(output=str(tmp_path / "traces"), metrics=MeterProvider(metric_readers=[reader]), prices=PRICES)
    try:
        yield reader
    finally:
        spanfold.shutdown()


def points(reader: InMemoryMetricReader, name: str) -> list[Any]:
    """The points of metric ``name``, once the folding worker recorded what the calls handed it."""
    assert spanfold.flush(timeout=30)
    data = reader.get_metrics_data()
    found: list[Any] = []
    for resource in data.resource_metrics if data is not None else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    found += list(metric.data.data_points)
    return found


def test_sync_calls_record_duration_and_tokens_with_the_conventions_attributes(
    reader: InMemoryMetricReader, global_spans: Any
) -> None:
    recorder = metrics.active()
    assert recorder is not None
    recording = recorder.record
    threads: list[str] = []

    def record(*args: Any) -> None:
        threads.append(threading.current_thread().name)
        recording(*args)

    recorder.record = record  # type: ignore[method-assign]
    with MockLLMServer() as server:
        server.script(Reply.text("one", usage=Usage(10, 3)), Reply.text("two", usage=Usage(20, 5)))
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        for text in ("a", "b"):
            client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": text}])
        port = server.port
    (duration,) = points(reader, "gen_ai.client.operation.duration")
    assert isinstance(duration, HistogramDataPoint) and duration.count == 2
    assert tuple(duration.explicit_bounds) == DURATION_BUCKETS
    assert dict(duration.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": MODEL,
        "gen_ai.response.model": MODEL,
        "server.address": "127.0.0.1",
        "server.port": port,
    }
    spans = [s for s in global_spans.get_finished_spans() if s.name.startswith("chat")]
    assert duration.sum == pytest.approx(sum((s.end_time - s.start_time) / 1e9 for s in spans))  # the spans' own
    # each point's exemplar names the call it came from
    assert {e.span_id for e in duration.exemplars} <= {s.context.span_id for s in spans} and duration.exemplars
    tokens = {p.attributes["gen_ai.token.type"]: p for p in points(reader, "gen_ai.client.token.usage")}
    assert (tokens["input"].sum, tokens["input"].count, tokens["output"].sum, tokens["output"].count) == (30, 2, 8, 2)
    assert tuple(tokens["input"].explicit_bounds) == TOKEN_BUCKETS
    assert points(reader, "gen_ai.client.inference.time_to_first_chunk") == []  # not a stream
    assert threads == ["spanfold-fold"] * 2  # recorded on the folding worker: the calling thread only queued them


def test_a_failed_call_records_its_duration_with_error_type(reader: InMemoryMetricReader) -> None:
    with MockLLMServer() as server:
        server.script(Reply.error(500, "boom", should_retry=False))
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
    (duration,) = points(reader, "gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == "openai.InternalServerError" and duration.count == 1
    assert points(reader, "gen_ai.client.token.usage") == []  # no usage reported: none recorded, never 0


def test_async_calls_record_too(reader: InMemoryMetricReader) -> None:
    async def run(server: MockLLMServer) -> None:
        client = openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}])
        await client.close()

    with MockLLMServer() as server:
        server.script(Reply.text("async", usage=Usage(7, 2)))
        asyncio.run(run(server))
    (duration,) = points(reader, "gen_ai.client.operation.duration")
    assert duration.count == 1 and duration.attributes["gen_ai.operation.name"] == "chat"
    tokens = {p.attributes["gen_ai.token.type"]: p.sum for p in points(reader, "gen_ai.client.token.usage")}
    assert tokens == {"input": 7, "output": 2}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_stream_records_its_time_to_first_chunk(reader: InMemoryMetricReader, mode: str) -> None:
    async def run_async(server: MockLLMServer) -> list[Any]:
        client = openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        stream = await client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "x"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
        await client.close()
        return chunks

    with MockLLMServer() as server:
        server.script(Reply.text("a streamed answer in several chunks", usage=Usage(11, 6)))
        if mode == "sync":
            client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
            stream = client.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": "x"}],
                stream=True,
                stream_options={"include_usage": True},
            )
            chunks = list(stream)
        else:
            chunks = asyncio.run(run_async(server))
    assert len(chunks) > 2
    (first,) = points(reader, "gen_ai.client.inference.time_to_first_chunk")
    (duration,) = points(reader, "gen_ai.client.operation.duration")
    assert first.count == 1 and 0 < first.sum <= duration.sum
    assert tuple(first.explicit_bounds) == DURATION_BUCKETS
    assert dict(first.attributes) == {k: v for k, v in duration.attributes.items() if k != "error.type"}
    tokens = {p.attributes["gen_ai.token.type"]: p.sum for p in points(reader, "gen_ai.client.token.usage")}
    assert tokens == {"input": 11, "output": 6}


def test_the_cost_counter_is_added_on_the_worker(reader: InMemoryMetricReader) -> None:
    with MockLLMServer() as server:
        server.script(Reply.text("one", usage=Usage(1000, 500)), Reply.text("two", usage=Usage(2000, 0)))
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        with spanfold.agent("priced"):
            for text in ("a", "b"):
                client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": text}])
    (cost,) = points(reader, "spanfold.gen_ai.client.cost")
    assert isinstance(cost, NumberDataPoint)
    assert cost.value == pytest.approx((3000 * 2.0 + 500 * 8.0) / 1e6)
    assert dict(cost.attributes) == {"spanfold.cost.currency": "USD", "gen_ai.response.model": MODEL}


def test_metrics_are_off_without_a_meter_provider(tmp_path: Path, _global_provider: Any) -> None:
    spanfold.init(output=str(tmp_path))
    try:
        assert metrics.active() is None  # the global MeterProvider is the API's no-op proxy in this process
    finally:
        spanfold.shutdown()
    with pytest.raises(ConfigError, match="metrics=true: no MeterProvider"):
        spanfold.init(output=str(tmp_path), metrics=True, otlp="off")
    with pytest.raises(ConfigError, match="metrics=42: expected true, false or a MeterProvider"):
        spanfold.init(output=str(tmp_path), metrics=42)
    with pytest.raises(ConfigError, match="SPANFOLD_METRICS='maybe': expected true or false"):
        config.load({}, {"SPANFOLD_METRICS": "maybe"})


def test_metrics_true_exports_over_otlp(tmp_path: Path, _global_provider: Any) -> None:
    """``metrics=True`` with an OTLP endpoint and no MeterProvider of the application's: spanfold's own, exporting to
    ``/v1/metrics`` beside the spans."""
    import http.server
    import threading

    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    posted: list[tuple[str, bytes]] = []

    class Collector(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            posted.append((self.path, self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    collector = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{collector.server_address[1]}"
        spanfold.init(output=str(tmp_path / "traces"), metrics=True, otlp=endpoint)
        try:
            with MockLLMServer() as server:
                server.script(Reply.text("one", usage=Usage(10, 3)))
                client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
                client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "a"}])
            assert spanfold.flush(timeout=30)
        finally:
            spanfold.shutdown()
    finally:
        collector.shutdown()
    names = set()
    for path, body in posted:
        if path == "/v1/metrics":
            request = ExportMetricsServiceRequest.FromString(body)
            names |= {m.name for r in request.resource_metrics for s in r.scope_metrics for m in s.metrics}
    assert {"gen_ai.client.operation.duration", "gen_ai.client.token.usage"} <= names


def test_the_application_s_meter_provider_is_used_by_default(tmp_path: Path) -> None:
    """A MeterProvider the application set globally before ``init()`` gets the metrics, with no option (in a process
    of its own: the global provider is set once per process)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        f"""
        import openai
        from opentelemetry import metrics
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        import spanfold
        from spanfold.testing import MockLLMServer, Reply, Usage

        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        spanfold.init(output={str(tmp_path)!r})
        with MockLLMServer() as server:
            server.script(Reply.text("one", usage=Usage(4, 2)))
            client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
            client.chat.completions.create(model="gpt-4o-mini", messages=[{{"role": "user", "content": "a"}}])
        spanfold.flush()
        data = reader.get_metrics_data()
        print(sorted(m.name for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "'gen_ai.client.operation.duration', 'gen_ai.client.token.usage'" in done.stdout

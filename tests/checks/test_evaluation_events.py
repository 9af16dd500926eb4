"""Check outcomes as ``gen_ai.evaluation.result`` events on the run they checked: from a test
(``spanfold_traces.record``, through a LoggerProvider) and from ``spanfold check --evaluation-events`` (OTLP/HTTP logs,
received here by a real HTTP server and decoded with the OTLP protobuf). The weather agent over the mock server."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

import spanfold
from spanfold.checks import tool_trajectory
from spanfold.checks.evaluation import attributes
from spanfold.commands.check import command as check
from spanfold.semconv import registry
from spanfold.testing import WEATHER, MockLLMServer
from spanfold.testing.agents import PROVIDERS

from ..conftest import traced_into

SPEC = """
checks:
  - name: weather-first
    type: tool_trajectory
    mode: in_order
    expected: [get_weather, convert_temperature]
  - name: never-search
    type: tool_trajectory
    mode: exact
    expected: [search]
"""


def weather_run() -> None:
    api = PROVIDERS["openai"]
    with MockLLMServer(WEATHER.replies) as server, spanfold.agent("weather"):
        api.run(api.client(server))


def test_the_event_s_names_are_the_registry_s() -> None:
    result = tool_trajectory([], mode="in_order", expected=["x"])
    assert set(attributes(result)) <= registry.GENAI_ATTRIBUTES
    assert "gen_ai.evaluation.result" in registry.EVENTS


def test_a_test_records_its_checks_on_the_run(spanfold_traces: Any) -> None:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    weather_run()
    trace = spanfold_traces.last
    passed = tool_trajectory(trace, mode="in_order", expected=["get_weather", "convert_temperature"])
    failed = tool_trajectory(trace, mode="exact", expected=["search"])
    assert spanfold_traces.record(passed, failed, logger_provider=provider) == 2
    records = [r.log_record for r in exporter.get_finished_logs()]
    assert [r.event_name for r in records] == ["gen_ai.evaluation.result"] * 2
    assert [dict(r.attributes or {}) for r in records] == [
        {
            "gen_ai.evaluation.name": passed.name,
            "gen_ai.evaluation.score.value": 1.0,
            "gen_ai.evaluation.score.label": "pass",
        },
        {
            "gen_ai.evaluation.name": failed.name,
            "gen_ai.evaluation.score.value": failed.score,
            "gen_ai.evaluation.score.label": "fail",
            "gen_ai.evaluation.explanation": "\n".join(failed.reasons),
        },
    ]
    root = trace.meta.extra["root_span_id"]  # the run's invoke_agent span, as its metadata names it
    assert root not in {s.span_id for s in trace.meta.steps}
    for r in records:  # on the run: its trace, its root span
        assert format(r.trace_id, "032x") == trace.meta.trace_id
        assert format(r.span_id, "016x") == root
    spanfold_traces.record(failed, logger_provider=provider, explanation=False)
    assert "gen_ai.evaluation.explanation" not in dict(exporter.get_finished_logs()[-1].log_record.attributes or {})


class _Collector(BaseHTTPRequestHandler):
    bodies: list[bytes] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        type(self).bodies.append(self.rfile.read(length))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    """A local OTLP/HTTP endpoint that keeps what it is sent."""
    _Collector.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_spanfold_check_sends_them(
    tmp_path: Path, _global_provider: Any, collector: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    with traced_into(tmp_path / "traces") as traced:
        weather_run()
        traced.one()
        (meta,) = traced.metas()
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", raising=False)
    result = CliRunner().invoke(
        check,
        [str(tmp_path / "traces" / "traces.jsonl"), "--spec", str(spec), "--evaluation-events"],
        catch_exceptions=False,
    )
    assert result.exit_code == 1, result.output  # one check fails: the exit status says so, events or not
    assert "evaluation events: 2 sent, 0 without a run to point at" in result.output
    records = []
    for body in _Collector.bodies:
        request = ExportLogsServiceRequest()
        request.ParseFromString(body)
        records += [r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records]
    assert [r.event_name for r in records] == ["gen_ai.evaluation.result"] * 2
    labels = {
        next(a.value.string_value for a in r.attributes if a.key == "gen_ai.evaluation.name"): next(
            a.value.string_value for a in r.attributes if a.key == "gen_ai.evaluation.score.label"
        )
        for r in records
    }
    assert labels == {"weather-first": "pass", "never-search": "fail"}
    assert {r.trace_id.hex() for r in records} == {meta["metadata"]["trace_id"]}


def test_without_metadata_no_event_is_sent(tmp_path: Path, _global_provider: Any, collector: str) -> None:
    with traced_into(tmp_path / "traces"):
        weather_run()
    (tmp_path / "traces" / "traces.meta.jsonl").unlink()
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": collector}
    result = CliRunner(env=env).invoke(
        check, [str(tmp_path / "traces" / "traces.jsonl"), "--spec", str(spec), "--evaluation-events"]
    )
    assert "evaluation events: 0 sent, 2 without a run to point at (no trace id)" in result.output
    assert _Collector.bodies == []

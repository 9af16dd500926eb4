"""Out: with OTEL_EXPORTER_OTLP_ENDPOINT set, the raw spans reach an OTLP/HTTP backend while the flat trace lands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


class Collector:
    """A loopback OTLP/HTTP endpoint that keeps every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                for rs in request.resource_spans:
                    for ss in rs.scope_spans:
                        collector.spans.extend(ss.spans)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    c.thread.start()
    yield c
    c.server.shutdown()
    c.server.server_close()


APP = textwrap.dedent(
    """
    import openai, spanfold
    from spanfold.testing import MockLLMServer, run_agent, scenarios

    spanfold.init()
    with MockLLMServer(scenarios.weather_agent) as server:
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        with spanfold.agent("otlp-bot"):
            run_agent("openai", client)
    """
)


def test_spans_exported_over_otlp_and_folded(tmp_path: Path, collector: Collector) -> None:
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "SPANFOLD_OUTPUT": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", APP], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    names = sorted(span.name for span in collector.spans)
    assert names == sorted(
        ["invoke_agent otlp-bot"]
        + ["chat gpt-4o-mini"] * 3
        + ["execute_tool get_weather"] * 2
        + ["execute_tool convert_temperature"]
    )
    (line,) = (tmp_path / "traces.jsonl").read_text().splitlines()
    events = json.loads(line)
    assert [e["role"] for e in events] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert done.stderr == ""

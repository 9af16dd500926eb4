"""``spanfold serve``: real OTLP over loopback HTTP (the SDK's own OTLPSpanExporter, JSON bodies, gzip), the
answers the OTLP/HTTP specification asks for, back-pressure, the bearer token, and SIGTERM writing what is held."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from spanfold import counters
from spanfold.exporter.files.writers import MemoryWriter
from spanfold.exporter.otlp import json_in as otlp_json_module
from spanfold.exporter.pipeline.receiver import Receiver, ReceiverThread, ServeOptions

from .conftest import WEATHER_ROLES, folded_in_process, otlp_json, proto_body


class Served:
    """A receiver on a free loopback port with an in-memory writer."""

    def __init__(self, **options: Any) -> None:
        self.writer = MemoryWriter()
        self.thread = ReceiverThread(ServeOptions(port=0, **options), writers=[self.writer])
        self.receiver: Receiver = self.thread.__enter__()

    @property
    def url(self) -> str:
        return self.receiver.url

    def exporter(self, **kwargs: Any) -> OTLPSpanExporter:
        return OTLPSpanExporter(endpoint=self.url, timeout=10, **kwargs)

    def post(self, body: bytes, content_type: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
        request = urllib.request.Request(self.url, data=body, method="POST")
        request.add_header("Content-Type", content_type)
        for name, value in headers.items():
            request.add_header(name.replace("_", "-"), value)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read()

    def stop(self) -> list[list[dict[str, Any]]]:
        assert self.thread.stop()
        return [t.to_invariant() for t in self.writer.traces]


@pytest.fixture
def served() -> Iterator[Any]:
    made: list[Served] = []

    def make(**options: Any) -> Served:
        made.append(Served(**options))
        return made[-1]

    yield make
    for s in made:
        s.thread.stop()


def proto_status(body: bytes) -> Status:
    status = Status()
    status.ParseFromString(body)
    return status


def test_the_sdk_exporter_protobuf_and_gzip(served: Any, weather_spans: list[ReadableSpan]) -> None:
    s = served(wait=60)
    plain, zipped = s.exporter(), s.exporter(compression=Compression.Gzip)
    assert plain.export(weather_spans[:3]) is SpanExportResult.SUCCESS  # one trace from two clients
    assert zipped.export(weather_spans[3:]) is SpanExportResult.SUCCESS
    assert s.writer.traces == []  # the root arrived but the trace is not quiet for 60 s yet
    (trace,) = s.stop()  # stopping writes it
    assert trace == folded_in_process(weather_spans)
    assert [e["role"] for e in trace] == WEATHER_ROLES
    assert s.writer.traces[0].meta.status == "complete"
    assert counters.snapshot()["receiver.spans"] == 7


def test_a_trace_is_folded_once_quiet_after_its_root(served: Any, weather_spans: list[ReadableSpan]) -> None:
    s = served(wait=0.2)
    children = [sp for sp in weather_spans if sp.parent is not None]
    (root,) = [sp for sp in weather_spans if sp.parent is None]
    assert s.exporter().export(children) is SpanExportResult.SUCCESS
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:  # no root yet: however quiet, nothing is written
        assert s.writer.traces == []
        time.sleep(0.05)
    assert s.exporter().export([root]) is SpanExportResult.SUCCESS
    deadline = time.monotonic() + 20
    while not s.writer.traces and time.monotonic() < deadline:
        time.sleep(0.05)
    (trace,) = [t.to_invariant() for t in s.writer.traces]
    assert trace == folded_in_process(weather_spans)


def test_json_bodies_hex_and_base64_ids_gzip_and_deflate(served: Any, weather_spans: list[ReadableSpan]) -> None:
    s = served(wait=60)
    hex_body = json.dumps(otlp_json(weather_spans[:3])).encode()
    status, headers, body = s.post(gzip.compress(hex_body), "application/json", Content_Encoding="gzip")
    assert (status, json.loads(body)) == (200, {})
    assert headers["Content-Type"].startswith("application/json")
    b64_body = json.dumps(otlp_json(weather_spans[3:], hex_ids=False)).encode()
    status, _, body = s.post(zlib.compress(b64_body), "application/json; charset=utf-8", Content_Encoding="deflate")
    assert (status, json.loads(body)) == (200, {})
    (trace,) = s.stop()
    assert trace == folded_in_process(weather_spans)


def test_partial_success_names_the_rejected_spans(served: Any, weather_spans: list[ReadableSpan]) -> None:
    s = served(wait=60)
    doc = otlp_json(weather_spans)
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"] = "00"  # one bad span id
    status, _, body = s.post(json.dumps(doc).encode(), "application/json")
    answer = json.loads(body)["partialSuccess"]
    assert status == 200 and answer["rejectedSpans"] == "1"
    assert "spans[0]: spanId must be 8 bytes" in answer["errorMessage"]
    request = ExportTraceServiceRequest()
    request.ParseFromString(proto_body(weather_spans))
    request.resource_spans[0].scope_spans[0].spans[1].trace_id = b"\x00" * 16
    status, headers, body = s.post(request.SerializeToString(), "application/x-protobuf")
    response = ExportTraceServiceResponse()
    response.ParseFromString(body)
    assert status == 200 and headers["Content-Type"] == "application/x-protobuf"
    assert response.partial_success.rejected_spans == 1
    assert "traceId is all zeros" in response.partial_success.error_message
    assert counters.snapshot()["receiver.rejected_spans"] == 2


def test_bad_bodies_get_400_with_a_status(served: Any, weather_spans: list[ReadableSpan]) -> None:
    s = served()
    status, _, body = s.post(b"\xff\xff\xff not protobuf", "application/x-protobuf")
    assert status == 400 and proto_status(body).code == 3 and "bad protobuf" in proto_status(body).message
    status, _, body = s.post(b'{"resourceSpans": [', "application/json")
    assert status == 400 and json.loads(body)["message"].startswith("bad JSON")
    status, _, body = s.post(b'{"resourceMetrics": []}', "application/json")
    assert status == 400 and "metrics or logs" in json.loads(body)["message"]
    status, _, body = s.post(
        gzip.compress(proto_body(weather_spans))[:-12], "application/x-protobuf", Content_Encoding="gzip"
    )
    assert status == 400 and "bad gzip body" in proto_status(body).message
    assert s.stop() == []


def test_wrong_content_type_or_encoding_gets_415(served: Any, weather_spans: list[ReadableSpan]) -> None:
    s = served()
    status, _, body = s.post(proto_body(weather_spans), "text/plain")
    assert status == 415 and b"application/x-protobuf" in body
    status, _, _ = s.post(proto_body(weather_spans), "application/x-protobuf", Content_Encoding="br")
    assert status == 415
    assert s.stop() == []


def test_oversize_bodies_get_413_compressed_or_not(served: Any, weather_spans: list[ReadableSpan]) -> None:
    s = served(max_body_bytes=4096)
    big = proto_body(weather_spans)
    assert len(big) > 4096
    status, _, body = s.post(big, "application/x-protobuf")
    assert status == 413 and proto_status(body).code == 8
    bomb = gzip.compress(b"\x00" * 1_000_000)  # 1 MB of zeros in about 1 kB
    assert len(bomb) < 4096
    status, _, _ = s.post(bomb, "application/x-protobuf", Content_Encoding="gzip")
    assert status == 413
    assert s.stop() == []


def test_bearer_token(served: Any, weather_spans: list[ReadableSpan]) -> None:
    s = served(token="s3cret", wait=60)
    status, headers, _ = s.post(proto_body(weather_spans), "application/x-protobuf")
    assert status == 401 and headers["WWW-Authenticate"] == "Bearer"
    status, _, _ = s.post(proto_body(weather_spans), "application/x-protobuf", Authorization="Bearer wrong")
    assert status == 401
    assert s.exporter().export(weather_spans) is SpanExportResult.FAILURE
    assert s.exporter(headers={"Authorization": "Bearer s3cret"}).export(weather_spans) is SpanExportResult.SUCCESS
    (trace,) = s.stop()
    assert trace == folded_in_process(weather_spans)


def test_back_pressure_503_with_retry_after(served: Any, weather_spans: list[ReadableSpan]) -> None:
    s = served(max_spans=10, wait=60)
    status, _, _ = s.post(proto_body(weather_spans), "application/x-protobuf")
    assert status == 200  # 7 spans now wait for their trace to go quiet: 7 more would go over the limit
    deadline = time.monotonic() + 10
    while s.receiver.fold.assembler.spans < 7 and time.monotonic() < deadline:
        time.sleep(0.01)
    status, headers, body = s.post(proto_body(weather_spans), "application/x-protobuf")
    assert status == 503 and headers["Retry-After"] == "60" and proto_status(body).code == 14
    assert counters.snapshot()["receiver.throttled"] == 1
    (trace,) = s.stop()  # what was accepted is written, once
    assert trace == folded_in_process(weather_spans)


APP = """
import openai, spanfold
from spanfold.testing import MockLLMServer, run_agent, scenarios

spanfold.init()
with MockLLMServer(scenarios.weather_agent) as server:
    client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    with spanfold.agent("both-ways"):
        run_agent("openai", client)
"""


def test_init_exports_to_the_receiver_which_folds_the_same_trace(served: Any, tmp_path: Path) -> None:
    """Out and in: spanfold.init() with OTEL_EXPORTER_OTLP_ENDPOINT sends the raw spans (the standard OTLP exporter)
    to a receiver; the trace it folds is the one the app folded in process."""
    s = served(wait=60)
    endpoint = s.url.removesuffix("/v1/traces")
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "SPANFOLD_OUTPUT": str(tmp_path / "app")}
    done = subprocess.run([sys.executable, "-c", APP], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (in_process,) = [json.loads(line) for line in (tmp_path / "app" / "traces.jsonl").read_text().splitlines()]
    (received,) = s.stop()
    assert [e["role"] for e in received] == WEATHER_ROLES
    assert received == in_process
    assert s.writer.traces[0].meta.name == "both-ways"


def test_sigterm_writes_everything_held(tmp_path: Path, weather_spans: list[ReadableSpan]) -> None:
    out = tmp_path / "traces"
    server = subprocess.Popen(
        [sys.executable, "-m", "spanfold", "serve", "--port", "0", "--output", str(out), "--wait", "600"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        assert "listening on http://127.0.0.1:" in line, line
        url = line.split("listening on ")[1].split(",")[0]
        assert OTLPSpanExporter(endpoint=url, timeout=10).export(weather_spans) is SpanExportResult.SUCCESS
        assert not (out / "traces.jsonl").exists()
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
        assert "Traceback" not in server.stderr.read()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    (line,) = (out / "traces.jsonl").read_text().splitlines()
    assert json.loads(line) == folded_in_process(weather_spans)


def test_init_after_shutdown_exports_each_span_once(served: Any, tmp_path: Path) -> None:
    """shutdown() stops the OTLP export it started; a second init() starts one, so spans go out once, not twice."""
    s = served(wait=60)
    endpoint = s.url.removesuffix("/v1/traces")
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "SPANFOLD_OUTPUT": str(tmp_path / "app")}
    app = APP.replace("spanfold.init()\n", "spanfold.init()\nspanfold.shutdown()\nspanfold.init()\n", 1)
    done = subprocess.run([sys.executable, "-c", app], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (meta,) = [json.loads(line) for line in (tmp_path / "app" / "traces.meta.jsonl").read_text().splitlines()]
    (received,) = s.stop()
    assert [e["role"] for e in received] == WEATHER_ROLES
    assert s.writer.traces[0].meta.span_count == meta["metadata"]["span_count"]


def test_deeply_nested_json_gets_400_not_500(served: Any, weather_spans: list[ReadableSpan]) -> None:
    s = served(wait=60)
    deep = b'{"resourceSpans": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    status, _, body = s.post(deep, "application/json")
    assert status == 400 and json.loads(body)["message"] == "bad JSON: nested too deeply"
    status, _, body = s.post(json.dumps(otlp_json(weather_spans)).encode(), "application/json")
    assert status == 200 and body == b"{}"  # still serving
    assert counters.snapshot()["receiver.status_400"] == 1
    assert [[e["role"] for e in t] for t in s.stop()] == [WEATHER_ROLES]


def test_anyvalues_nested_past_the_recursion_limit_reject_that_span(weather_spans: list[ReadableSpan]) -> None:
    """The JSON parser gives up first on a body; a document built another way reaches the AnyValue decoder."""
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(5000):
        value = {"arrayValue": {"values": [value]}}
    doc = otlp_json(weather_spans)
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = [{"key": "deep", "value": value}]
    decoded = otlp_json_module.decode_request(doc)
    assert decoded.rejected == 1 and len(decoded.records) == len(weather_spans) - 1
    assert decoded.messages == ["resourceSpans[0].scopeSpans[0].spans[0]: nested too deeply"]


def test_serve_with_a_bad_environment_variable_says_so_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spanfold", "serve", "--port", "0", "--output", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env={**os.environ, "SPANFOLD_MAX_QUEUE_SIZE": "x"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["spanfold serve: SPANFOLD_MAX_QUEUE_SIZE='x': expected a whole number"]
    assert not (tmp_path / "out").exists()

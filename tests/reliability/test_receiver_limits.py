"""``spanfold serve`` under load no client should be able to make: memory bounded by bytes, not only spans; one
client's root-less spans never lock the others out; decoding never stalls the event loop. Real HTTP on loopback."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan

from spanfold import counters

from ..bridge.conftest import WEATHER_ROLES, folded_in_process, proto_body
from ..bridge.test_receiver import Served

MiB = 1024 * 1024
PROTOBUF = "application/x-protobuf"


def spans_body(count: int, *, attribute: int = 0, rootless: bool = True, trace_per_span: bool = True) -> bytes:
    """``count`` spans (each its own trace, or all one), with a ``text`` attribute of ``attribute`` characters; with
    a parent that never comes (``rootless``) or none."""
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    trace = random.randbytes(16)
    text = "x" * attribute
    for _ in range(count):
        span = spans.add(
            trace_id=random.randbytes(16) if trace_per_span else trace,
            span_id=random.randbytes(8),
            name="work",
            start_time_unix_nano=1,
            end_time_unix_nano=2,
        )
        if rootless:
            span.parent_span_id = random.randbytes(8)
        if attribute:
            kv = span.attributes.add(key="text")
            kv.value.string_value = text
    return request.SerializeToString()


def post(url: str, body: bytes, timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": PROTOBUF})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def post_until_taken(url: str, body: bytes) -> int:
    """Post as an OTLP exporter does: a 503 (the fold worker has not yet taken what is queued, which counts until it
    has: a slow machine) is tried again after a pause; the status that ends it."""
    for _ in range(200):
        status, headers, _ = post(url, body)
        if status != 503:
            return status
        assert "Retry-After" in headers
        time.sleep(0.05)
    return 503


def settle(s: Served) -> None:
    """Wait (bounded) until the fold worker has taken every queued batch."""
    deadline = time.monotonic() + 20
    while s.receiver.fold.pending and time.monotonic() < deadline:
        time.sleep(0.01)


# --- 3: bytes --------------------------------------------------------------------------------------------------


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_root_less_spans_with_big_attributes_keep_serve_within_its_byte_bound(tmp_path: Path) -> None:
    """The review's case, scaled down: requests of one root-less span with a 4 MiB attribute. Before, every one was
    held (memory grew by the sum); now the oldest are cut past --max-buffered-bytes and memory stays flat."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "spanfold", "serve", "--port", "0", "-o", str(tmp_path / "out"), "--wait", "600",
         "--max-buffered-bytes", str(16 * MiB)],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        assert "listening on " in line, line
        url = line.split("listening on ")[1].split(",")[0]
        body = spans_body(1, attribute=4 * MiB)
        statuses = [post_until_taken(url, body) for _ in range(5)]
        base = rss_kib(server.pid)
        statuses += [post_until_taken(url, spans_body(1, attribute=4 * MiB)) for _ in range(60)]
        time.sleep(0.5)
        grown_mib = (rss_kib(server.pid) - base) / 1024
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert statuses == [200] * 65  # root-less: the oldest are cut to make room, nobody is refused for good
    assert grown_mib < 64, f"serve grew by {grown_mib:.0f} MiB for 240 MiB of root-less attributes"


def test_past_the_byte_bound_503_then_413_for_a_request_larger_than_it(served: Any) -> None:
    s = served(max_buffered_bytes=4 * MiB, wait=60)
    root = spans_body(1, attribute=3 * MiB, rootless=False)
    status, _, _ = s.post(root, PROTOBUF)
    assert status == 200  # a trace whose root arrived waits to go quiet: its bytes are held
    status, headers, _ = s.post(spans_body(1, attribute=2 * MiB, rootless=False), PROTOBUF)
    assert status == 503 and headers["Retry-After"] == "60"
    status, _, body = s.post(spans_body(1, attribute=5 * MiB, rootless=False), PROTOBUF)
    assert status == 413 and b"more than this receiver holds" in body
    status, _, _ = s.post(spans_body(1, attribute=MiB // 2, rootless=False), PROTOBUF)
    assert status == 200  # what still fits
    settle(s)
    assert s.receiver.fold.assembler.held.bytes == 3 * MiB + MiB // 2
    assert counters.snapshot()["receiver.throttled"] == 1


def test_root_less_traces_are_cut_oldest_first_to_make_room(served: Any) -> None:
    s = served(max_buffered_bytes=4 * MiB, wait=60)
    first = spans_body(1, attribute=3 * MiB)
    assert s.post(first, PROTOBUF)[0] == 200
    assert s.post(spans_body(1, attribute=3 * MiB), PROTOBUF)[0] == 200
    settle(s)
    held = s.receiver.fold.assembler.held
    assert held.bytes == held.rootless_bytes == 3 * MiB  # the first one was cut
    first_trace = ExportTraceServiceRequest.FromString(first).resource_spans[0].scope_spans[0].spans[0].trace_id
    assert int.from_bytes(first_trace, "big") not in s.receiver.fold.assembler._traces
    assert counters.snapshot()["traces_shed"] == 1


# --- 4: spans, and one client against the others -----------------------------------------------------------------


def test_a_request_of_more_spans_than_the_receiver_holds_gets_413(served: Any) -> None:
    s = served(max_spans=1000, wait=60)
    status, _, body = s.post(spans_body(4000), PROTOBUF)  # checked once decoded, not before
    assert status == 413 and b"request of 4000 spans" in body
    settle(s)
    assert s.receiver.fold.assembler.spans == 0


def test_one_clients_root_less_backlog_does_not_lock_the_others_out(
    served: Any, weather_spans: list[ReadableSpan]
) -> None:
    s = served(max_spans=1000, wait=60)
    for _ in range(5):  # 4,500 root-less spans in requests that each fit
        status, _, _ = s.post(spans_body(900), PROTOBUF)
        assert status == 200
        settle(s)
        assert s.receiver.fold.assembler.spans <= 1000
    status, _, _ = s.post(proto_body(weather_spans), PROTOBUF)  # another client, right after
    assert status == 200
    (trace,) = s.stop()  # the orphans (no GenAI span) were cut, oldest first, and skipped
    assert trace == folded_in_process(weather_spans)
    assert [e["role"] for e in trace] == WEATHER_ROLES


def test_decoding_a_big_body_does_not_stall_other_requests(served: Any) -> None:
    s = served(max_spans=400_000, wait=60, token="t")
    big = spans_body(150_000, trace_per_span=False)
    answered: list[tuple[int, float]] = []

    def send_big() -> None:
        started = time.monotonic()
        request = urllib.request.Request(
            s.url, data=big, method="POST", headers={"Content-Type": PROTOBUF, "Authorization": "Bearer t"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answered.append((response.status, time.monotonic() - started))

    sender = threading.Thread(target=send_big)
    sender.start()
    time.sleep(0.3)  # the big body is sent and being decoded
    latencies = []
    while sender.is_alive() and len(latencies) < 50:
        started = time.monotonic()
        status, _, _ = s.post(b"", PROTOBUF)  # no token: answered by the event loop alone
        latencies.append(time.monotonic() - started)
        assert status == 401
    sender.join(60)
    assert answered and answered[0][0] == 200
    assert latencies and max(latencies) < 0.5, (latencies, answered)

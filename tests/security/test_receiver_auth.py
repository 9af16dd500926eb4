"""``spanfold serve --token``: the Authorization header as a client may really send it (RFC 7235: the scheme is
case-insensitive; bytes that are not UTF-8), over real HTTP on loopback."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("aiohttp")
from opentelemetry.sdk.trace import ReadableSpan

from spanfold import counters

from ..bridge.conftest import folded_in_process, proto_body, run_weather_agent
from ..bridge.test_receiver import Served


@pytest.fixture
def weather_spans(_global_provider: Any, global_spans: Any) -> list[ReadableSpan]:
    run_weather_agent(_global_provider)
    return list(global_spans.get_finished_spans())


@pytest.fixture
def served() -> Iterator[Served]:
    s = Served(token="s3cret", wait=60)
    yield s
    s.thread.stop()


def raw_post(port: int, authorization: bytes, body: bytes) -> bytes:
    """POST with an Authorization header of raw bytes (urllib would refuse them); the status line."""
    head = (
        b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
        b"Connection: close\r\nAuthorization: " + authorization + b"\r\nContent-Length: %d\r\n\r\n" % len(body)
    )
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head + body)
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    return answer.split(b"\r\n", 1)[0]


def test_the_bearer_scheme_is_case_insensitive(served: Served, weather_spans: list[ReadableSpan]) -> None:
    body = proto_body(weather_spans)
    for scheme in ("bearer", "BEARER", "bEaReR"):
        status, _, _ = served.post(body, "application/x-protobuf", Authorization=f"{scheme} s3cret")
        assert status == 200, scheme
    status, _, _ = served.post(body, "application/x-protobuf", Authorization="bearer S3CRET")  # the token is not
    assert status == 401
    status, _, _ = served.post(body, "application/x-protobuf", Authorization="Basic s3cret")
    assert status == 401
    traces = served.stop()
    assert traces == [folded_in_process(weather_spans)]


def test_a_header_that_is_not_utf8_gets_401_not_500(served: Served, weather_spans: list[ReadableSpan]) -> None:
    assert served.receiver.port is not None
    body = proto_body(weather_spans)
    for value in (b"Bearer s3cr\xffet", b"\xff\xfe", b"Bearer \xc3", b"Bearer s3cret\x80"):
        assert raw_post(served.receiver.port, value, body) == b"HTTP/1.1 401 Unauthorized", value
    assert raw_post(served.receiver.port, b"Bearer s3cret", body) == b"HTTP/1.1 200 OK"
    assert counters.snapshot().get("receiver.status_500", 0) == 0
    assert served.stop() == [folded_in_process(weather_spans)]

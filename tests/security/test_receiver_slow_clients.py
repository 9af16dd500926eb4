"""``spanfold serve`` against clients that send half a request and wait: headers and bodies time out, the
connections are closed, the receiver keeps serving. Raw sockets on loopback, bounded loops."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator

import pytest

pytest.importorskip("aiohttp")

from ..bridge.test_receiver import Served

READ_TIMEOUT = 1.0
HALF_HEADERS = b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
HALF_BODY = HALF_HEADERS + b"Content-Length: 1000\r\n\r\n" + b"\x0a" * 10


@pytest.fixture
def served() -> Iterator[Served]:
    s = Served(read_timeout=READ_TIMEOUT)
    yield s
    s.thread.stop()


def closed_within(socks: list[socket.socket], limit: float) -> tuple[list[float], int]:
    """Seconds until each socket saw the server close it (EOF or reset), and how many were still open at ``limit``."""
    started = time.monotonic()
    waiting = {s.fileno(): s for s in socks}
    closed: list[float] = []
    while waiting and time.monotonic() - started < limit:
        ready, _, _ = select.select(list(waiting.values()), [], [], 0.1)
        for sock in ready:
            try:
                data = sock.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data:  # an answer (408) may come first; the close is what counts
                closed.append(time.monotonic() - started)
                del waiting[sock.fileno()]
    return closed, len(waiting)


def test_half_sent_requests_are_closed_within_the_read_timeout(served: Served) -> None:
    assert served.receiver.port is not None
    socks = []
    try:
        for i in range(60):
            sock = socket.create_connection(("127.0.0.1", served.receiver.port), timeout=5)
            sock.sendall(HALF_HEADERS if i % 2 else HALF_BODY)
            socks.append(sock)
        closed, still_open = closed_within(socks, READ_TIMEOUT + 6)
    finally:
        for sock in socks:
            sock.close()
    assert still_open == 0, f"{still_open} of {len(socks)} half-sent requests still open"
    assert max(closed) < READ_TIMEOUT + 3
    status, _, _ = served.post(b"", "application/x-protobuf")  # still serving
    assert status == 200
    assert served.stop() == []


def test_a_slow_body_gets_408(served: Served) -> None:
    assert served.receiver.port is not None
    with socket.create_connection(("127.0.0.1", served.receiver.port), timeout=10) as sock:
        sock.sendall(HALF_BODY)
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408 ")

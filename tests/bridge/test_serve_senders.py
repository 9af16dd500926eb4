"""``spanfold serve`` tells sending processes apart by their resource only when the resource names its process
(``service.instance.id``). opentelemetry-sdk 1.30 to 1.42 (pyproject allows >= 1.30) and many other SDKs send none by
default: every process of a service then has the same resource, and the receiver must not take them for one sender.
Without an instance id a sender is its resource *and* the connection that carried it: the calls of two processes are
never stitched together, and one process closing its connection never writes another's run early. With one, a
process that reconnected (the server closed its idle connection) still continues its run.

Real senders: the SDK's own ``OTLPSpanExporter`` in child processes (:mod:`instance_sender`); ``no-instance`` is the
resource the older SDKs make (``tests/bridge/instance_sender.py``), the same test run in a venv holding
opentelemetry-sdk 1.30.0 sends it unaltered.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SENDER = Path(__file__).with_name("instance_sender.py")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "SPANFOLD_STITCH_IDLE": "600"}

USER = {"role": "user", "parts": [{"type": "text", "content": "PRIVATE-A: weather at my address, 12 Rue X, Paris?"}]}
CALL = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "call_7Hq2", "name": "get_weather", "arguments": {"city": "Paris"}}],
    "finish_reason": "tool_call",
}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_7Hq2", "response": "18°C"}]}
ANSWER = {"role": "assistant", "parts": [{"type": "text", "content": "18°C in Paris."}], "finish_reason": "stop"}
OTHER = {"role": "user", "parts": [{"type": "text", "content": "PRIVATE-B: what is on my calendar?"}]}
OTHER_CALL = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "call_Zx81", "name": "calendar", "arguments": {}}],
    "finish_reason": "tool_call",
}


class Serve:
    """``spanfold serve --port 0`` in a child process."""

    def __init__(self, out: Path, *args: str) -> None:
        self.out = out
        cmd = [sys.executable, "-m", "spanfold", "serve", "--port", "0", "-o", str(out), *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        assert "listening on http://" in line, line
        self.endpoint = line.split("listening on ", 1)[1].split(",", 1)[0]

    def traces(self) -> list[list[dict[str, Any]]]:
        path = self.out / "traces.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

    def stop(self) -> list[list[dict[str, Any]]]:
        """SIGTERM (it writes what it holds); the traces written."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=60) == 0
        return self.traces()


class Sender:
    """One sending process: :meth:`call` exports one chat span and waits until it is sent."""

    def __init__(self, endpoint: str, mode: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(SENDER), endpoint, mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )

    def call(self, inputs: list[Any], outputs: list[Any]) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"inputs": inputs, "outputs": outputs}) + "\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "sent", self.proc.stderr.read() if self.proc.stderr else ""

    def exit(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("exit\n")
        self.proc.stdin.flush()
        assert self.proc.wait(timeout=30) == 0


@pytest.fixture
def started() -> Iterator[Any]:
    serves: list[Serve] = []
    senders: list[Sender] = []

    def serve(out: Path, *args: str) -> Serve:
        serves.append(Serve(out, *args))
        return serves[-1]

    def sender(endpoint: str, mode: str) -> Sender:
        senders.append(Sender(endpoint, mode))
        return senders[-1]

    yield serve, sender
    for proc in [s.proc for s in senders] + [s.proc for s in serves]:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def _owners(trace: list[dict[str, Any]]) -> set[str]:
    text = json.dumps(trace, ensure_ascii=False)
    return {mark for mark in ("PRIVATE-A", "PRIVATE-B", "18°C in Paris") if mark in text}


def test_two_processes_without_an_instance_id_are_never_stitched_together(tmp_path: Path, started: Any) -> None:
    """Process B's call carries a history that continues process A's run, tool-call id and all (which, within one
    process, would join it): B is another process, so it stays a trace of its own."""
    serve, sender = started
    s = serve(tmp_path / "out", "--wait", "0.3")
    a = sender(s.endpoint, "no-instance")
    b = sender(s.endpoint, "no-instance")
    a.call([USER], [CALL])
    time.sleep(1)  # A's call folded: its run is open, waiting on the tool
    b.call([USER, CALL, RESULT], [ANSWER])
    time.sleep(1)
    traces = s.stop()
    assert sorted(len(t) for t in traces) == [2, 4], traces
    assert sorted(map(sorted, map(_owners, traces))) == [["18°C in Paris", "PRIVATE-A"], ["PRIVATE-A"]]


def test_one_process_without_an_instance_id_still_stitches_over_its_connection(tmp_path: Path, started: Any) -> None:
    serve, sender = started
    s = serve(tmp_path / "out", "--wait", "0.3")
    a = sender(s.endpoint, "no-instance")
    a.call([USER], [CALL])
    time.sleep(1)
    a.call([USER, CALL, RESULT], [ANSWER])
    time.sleep(1)
    (trace,) = s.stop()
    assert [e["role"] for e in trace] == ["user", "assistant", "tool", "assistant"]


def test_another_process_leaving_never_writes_a_run_early(tmp_path: Path, started: Any) -> None:
    """A's run waits on a tool; serve closed A's idle connection (``--read-timeout 1``: that says nothing of A).
    B, with the same resource, sends and exits: B's run is written at once, A's stays open until A goes on."""
    serve, sender = started
    s = serve(tmp_path / "out", "--wait", "0.3", "--final-wait", "1", "--read-timeout", "1")
    a = sender(s.endpoint, "no-instance")
    a.call([USER], [CALL])
    time.sleep(2.5)  # serve closed A's idle connection
    b = sender(s.endpoint, "no-instance")
    b.call([OTHER], [OTHER_CALL])
    b.exit()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not s.traces():
        time.sleep(0.1)
    time.sleep(2)  # anything else written early would be by now
    assert [_owners(t) for t in s.traces()] == [{"PRIVATE-B"}]
    a.exit()
    assert sorted(map(sorted, map(_owners, s.stop()))) == [["PRIVATE-A"], ["PRIVATE-B"]]


def test_a_process_with_an_instance_id_continues_its_run_after_a_reconnect(tmp_path: Path, started: Any) -> None:
    serve, sender = started
    s = serve(tmp_path / "out", "--wait", "0.3", "--read-timeout", "1")
    a = sender(s.endpoint, "instance")
    a.call([USER], [CALL])
    time.sleep(2.5)  # serve closed A's idle connection: A's next export opens a new one
    a.call([USER, CALL, RESULT], [ANSWER])
    time.sleep(1)
    (trace,) = s.stop()
    assert [e["role"] for e in trace] == ["user", "assistant", "tool", "assistant"]

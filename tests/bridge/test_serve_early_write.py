"""``spanfold serve`` writes a stitched zero-code run as soon as it is provably over: when its sending process is
gone (a real process exporting with the SDK's OTLPSpanExporter, then exiting), or a final answer followed by
``--final-wait`` seconds with nothing more from that process; never while a live process's run still waits on a
tool (the 30 s idle window is set to 600 s here, so only the early rules can write). On a terminal it prints one
line per trace written; into a pipe, nothing."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from spanfold import config
from spanfold.exporter.files.writers import MemoryWriter
from spanfold.exporter.pipeline.assembler import Assembler, Policy, trace_root
from spanfold.exporter.records import SpanRecord

pytest.importorskip("aiohttp")

SENDER = Path(__file__).with_name("early_sender.py")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "SPANFOLD_STITCH_IDLE": "600"}


class Serve:
    """``spanfold serve --port 0`` in a child process (stdout a pipe, or a terminal when ``tty``)."""

    def __init__(self, out: Path, *args: str, tty: bool = False) -> None:
        self.master: int | None = None
        stdout: Any = subprocess.PIPE
        if tty:
            self.master, slave = pty.openpty()
            stdout = slave
        cmd = [sys.executable, "-m", "spanfold", "serve", "--port", "0", "-o", str(out), *args]
        self.proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True, env=ENV)
        if tty:
            os.close(slave)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        assert "listening on http://" in line, line
        self.endpoint = line.split("listening on ", 1)[1].split(",", 1)[0]
        self.out = out

    def tty_text(self, timeout: float) -> str:
        assert self.master is not None
        text, deadline = b"", time.monotonic() + timeout
        while time.monotonic() < deadline and b"\n" not in text:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                text += os.read(self.master, 4096)
        return text.decode()

    def stop(self) -> str:
        """SIGTERM; its stdout when it is a pipe."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=60) == 0
        out = self.proc.stdout.read() if self.proc.stdout is not None else ""
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        if self.master is not None:
            os.close(self.master)
        return out


@pytest.fixture
def started() -> Iterator[Any]:
    procs: list[subprocess.Popen[str]] = []
    serves: list[Serve] = []

    def serve(out: Path, *args: str, tty: bool = False) -> Serve:
        s = Serve(out, *args, tty=tty)
        serves.append(s)
        return s

    def sender(endpoint: str, mode: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, str(SENDER), endpoint, mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        procs.append(proc)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "sent", proc.stderr.read() if proc.stderr else ""
        return proc

    yield serve, sender
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    for s in serves:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def _traces(out: Path) -> list[list[dict[str, Any]]]:
    path = out / "traces.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _wait_for_trace(out: Path, timeout: float) -> list[list[dict[str, Any]]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        traces = _traces(out)
        if traces:
            return traces
        time.sleep(0.1)
    return []


def _exit(proc: subprocess.Popen[str]) -> None:
    stdin: IO[str] | None = proc.stdin
    assert stdin is not None
    stdin.write("\n")
    stdin.flush()
    assert proc.wait(timeout=30) == 0


def test_the_run_is_written_when_its_process_exits(tmp_path: Path, started: Any) -> None:
    serve, sender = started
    s = serve(tmp_path / "out", "--wait", "0.5", "--final-wait", "1")
    proc = sender(s.endpoint, "tool-call")
    time.sleep(3)  # the process lives, its run waits on a tool: nothing is written
    assert _traces(tmp_path / "out") == []
    exited = time.monotonic()
    _exit(proc)
    (trace,) = _wait_for_trace(tmp_path / "out", 15)
    assert time.monotonic() - exited < 10  # not the idle window (600 s here)
    assert [e["role"] for e in trace] == ["system", "user", "assistant"]
    assert trace[2]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert s.stop() == ""  # stdout is a pipe: nothing printed


def test_serve_closing_an_idle_connection_says_nothing_of_the_process(tmp_path: Path, started: Any) -> None:
    serve, sender = started
    s = serve(tmp_path / "out", "--wait", "0.5", "--final-wait", "1", "--read-timeout", "1")
    proc = sender(s.endpoint, "tool-call")
    time.sleep(4)  # serve closed the sender's idle connection after 1 s: the process lives, its run is not over
    assert _traces(tmp_path / "out") == []
    s.stop()  # written at shutdown
    (trace,) = _traces(tmp_path / "out")
    assert [e["role"] for e in trace] == ["system", "user", "assistant"]
    _exit(proc)


def test_a_final_answer_is_written_after_a_short_idle_on_a_terminal(tmp_path: Path, started: Any) -> None:
    serve, sender = started
    s = serve(tmp_path / "out", "--wait", "0.5", "--final-wait", "1", tty=True)
    sent = time.monotonic()
    proc = sender(s.endpoint, "final")
    (trace,) = _wait_for_trace(tmp_path / "out", 15)
    assert proc.poll() is None  # the sender is still there: the final answer alone said the run was over
    assert time.monotonic() - sent < 12
    assert [e["role"] for e in trace] == ["system", "user", "assistant", "tool", "assistant"]
    line = s.tty_text(10)
    meta = json.loads((tmp_path / "out" / "traces.meta.jsonl").read_text().splitlines()[0])["metadata"]
    assert meta["trace_id"] in line and "2 steps" in line and "get_weather" in line
    assert line.rstrip().endswith(str(tmp_path / "out" / "traces.jsonl"))
    _exit(proc)
    s.stop()


# --- the rule at the assembler: a final answer waits while its process still sends ----------------------------

RESOURCE = {"service.name": "agent"}


def _chat(trace_id: int, inputs: list[Any], outputs: list[Any], t: int) -> SpanRecord:
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "m",
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
    }
    return SpanRecord(trace_id, trace_id, None, "chat m", t, t + 1, attrs, kind="CLIENT", resource=RESOURCE)


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def test_a_final_answer_waits_while_its_process_still_has_a_trace_buffered() -> None:
    written = MemoryWriter()
    policy = Policy(quiet=1.0, root=trace_root, final_idle=1.0)
    assembler = Assembler([written], config.load({"stitch_idle": 600}, environ={}), policy)
    first = [_text("user", "hi")]
    answer = [_text("assistant", "hello")]
    one = _chat(1, first, answer, 1)
    two = _chat(2, [*first, *answer, _text("user", "and?")], [_text("assistant", "bye")], 2)
    for call in (one, two):  # the evidence that they are one run (their text alone is not: a stored chat reads alike)
        call.attributes["gen_ai.conversation.id"] = "chat-1"
    assembler.add(one, 0.0)  # a final answer
    assembler.add(two, 0.5)
    assembler.expire(1.2)  # the first is folded and answered; the second (same process) still buffered
    assert written.traces == []
    assembler.expire(1.6)  # the second is folded: it continues the same run
    assembler.expire(2.7)  # a second after its final answer: written, whole
    (trace,) = written.traces
    assert [e.role for e in trace.events] == ["user", "assistant", "user", "assistant"]


def test_without_final_idle_a_final_answer_waits_for_the_idle_window() -> None:
    written = MemoryWriter()
    assembler = Assembler([written], config.load({"stitch_idle": 600}, environ={}), Policy(quiet=1.0, root=trace_root))
    assembler.add(_chat(1, [_text("user", "hi")], [_text("assistant", "hello")], 1), 0.0)
    assembler.expire(100.0)
    assert written.traces == []
    assembler.process_ended(RESOURCE, 100.0)  # what the receiver says when the process is gone
    assert len(written.traces) == 1


def test_a_run_stitched_at_the_source_is_written_after_its_final_answer() -> None:
    """spanfold's own zero-code run reaches serve as one trace id, its later calls (remote parents) arriving after the
    first was folded: they join its conversation, and the final answer among them ends the run early."""
    written = MemoryWriter()
    policy = Policy(quiet=1.0, root=trace_root, final_idle=1.0)
    assembler = Assembler([written], config.load({"stitch_idle": 600}, environ={}), policy)
    call = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "f", "arguments": {}}]}
    result = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "ok"}]}
    first = _chat(7, [_text("user", "hi")], [call], 1)
    later = _chat(7, [_text("user", "hi"), call, result], [_text("assistant", "done")], 3)
    attrs = later.attributes
    later = SpanRecord(7, 8, 7, "chat m", 3, 4, attrs, kind="CLIENT", resource=RESOURCE, parent_is_remote=True)
    assembler.add(first, 0.0)
    assembler.expire(1.5)  # the first call: folded, its conversation waits for the tool call's answer
    assembler.add(later, 2.0)  # joins the conversation holding trace 7: a final answer
    assembler.expire(2.5)
    assert written.traces == []
    assembler.expire(3.2)  # a second after the final answer
    (trace,) = written.traces
    assert [e.role for e in trace.events] == ["user", "assistant", "tool", "assistant"]

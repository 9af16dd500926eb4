"""Crash safety: SIGKILL mid-write, several processes appending to one directory, SIGTERM and normal exit flushing,
a torn line or a lost metadata line repaired by the next writer, and a trace whose root never ends written as
``incomplete`` after its idle timeout."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import spanfold
from spanfold import counters
from spanfold.exporter.files.writers import JsonlWriter
from spanfold.trace.model import Message, Trace, TraceMeta

CHILD = Path(__file__).with_name("crash_child.py")


def spawn(mode: str, out: Path, n: int = 10, size: int = 100) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), mode, str(out), str(n), str(size)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def wait_for(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdout is not None
    got = proc.stdout.readline().strip()
    assert got == line, (got, proc.stderr.read() if proc.stderr else "")


def split(path: Path) -> tuple[list[bytes], bytes]:
    """(complete lines, the bytes after the last newline)."""
    data = path.read_bytes() if path.exists() else b""
    *lines, tail = data.split(b"\n")
    return lines, tail


def check_directory(out: Path) -> list[str]:
    """Every line of both files parses, they have as many lines, the N-th metadata line describes the N-th trace, and
    each trace is whole; returns the ``<pid>:<k>`` of every trace, in file order."""
    events, tail = split(out / "traces.jsonl")
    metas, meta_tail = split(out / "traces.meta.jsonl")
    assert tail == meta_tail == b""
    assert len(events) == len(metas)
    whos = []
    for line, meta_line in zip(events, metas, strict=True):
        trace, meta = json.loads(line), json.loads(meta_line)["metadata"]
        if meta.get("meta_lost"):  # a metadata line a crash lost, restored as a placeholder
            continue
        assert len(trace) == 1 and trace[0]["role"] == "tool"
        who, payload = trace[0]["content"].split("|", 1)
        assert payload == "x" * len(payload)
        assert meta["name"] == f"crash-child {who}"
        whos.append(who)
    return whos


def _trace(text: str) -> Trace:
    return Trace(
        events=[Message(role="tool", content=text)], meta=TraceMeta(trace_id=format(hash(text) % 2**64, "032x"))
    )


# --- SIGKILL -------------------------------------------------------------------------------------------------

KILLS = 3


def test_sigkill_mid_write_leaves_whole_lines_and_the_next_writer_repairs(tmp_path: Path) -> None:
    """A child appends 4 MB traces until SIGKILLed at a random moment, three times over into one directory. The
    kernel may leave a torn last line (a killed ``write`` stops part way): every complete line parses, and the next
    writer cuts the torn tail before it appends, so its own line is never glued to it."""
    out = tmp_path / "traces"
    for _ in range(KILLS):
        child = spawn("loop", out, 0, 4_000_000)
        wait_for(child, "ready")
        time.sleep(random.uniform(0.0, 0.3))
        child.send_signal(signal.SIGKILL)
        child.wait()
        events, tail = split(out / "traces.jsonl")
        metas, _ = split(out / "traces.meta.jsonl")
        for line in events + metas:
            json.loads(line)
        head = b'[{"role":"tool","content":"'
        assert tail.startswith(head) or head.startswith(tail)  # nothing, or the start of a line cut short
        assert len(events) - len(metas) in (0, 1)
    finisher = spawn("count", out, 2, 10)
    wait_for(finisher, "done")
    assert finisher.wait() == 0
    whos = check_directory(out)
    assert len(whos) >= KILLS + 2
    assert whos[-2:] == [f"{finisher.pid}:0", f"{finisher.pid}:1"]


def _write_one(directory: Path, content: str) -> None:
    """One trace appended by a fresh writer (a new process)."""
    writer = JsonlWriter(directory)
    writer.write(_trace(content))
    writer.close()


def test_a_torn_line_is_cut_and_a_lost_metadata_line_restored_by_the_next_writer(tmp_path: Path) -> None:
    """The two states a SIGKILL can leave, made exactly: a line cut short, and an events line whose metadata line was
    never written (killed between the two writes). A fresh writer (a new process) repairs both before appending."""
    _write_one(tmp_path, "first")
    with open(tmp_path / "traces.jsonl", "ab") as f:
        f.write(b'[{"role":"tool","content":"cut sh')  # torn
    _write_one(tmp_path, "second")
    events, _ = split(tmp_path / "traces.jsonl")
    assert [json.loads(x)[0]["content"] for x in events] == ["first", "second"]
    assert counters.snapshot()["writer.torn_lines_cut"] == 1

    with open(tmp_path / "traces.jsonl", "ab") as f:
        f.write(b'[{"role":"tool","content":"no meta"}]\n')  # the metadata line never came
    _write_one(tmp_path, "third")
    events, tail = split(tmp_path / "traces.jsonl")
    metas, meta_tail = split(tmp_path / "traces.meta.jsonl")
    assert tail == meta_tail == b""
    assert [json.loads(x)[0]["content"] for x in events] == ["first", "second", "no meta", "third"]
    assert [json.loads(m)["metadata"].get("meta_lost", False) for m in metas] == [False, False, True, False]
    assert json.loads(metas[2])["metadata"]["status"] == "incomplete"
    assert counters.snapshot()["writer.meta_lines_restored"] == 1


# --- several processes ---------------------------------------------------------------------------------------

WRITERS = 4
TRACES_EACH = 40


def test_processes_appending_to_one_directory_never_interleave(tmp_path: Path) -> None:
    """Four processes append 40 traces each (payloads up to 600 kB, far above PIPE_BUF) to one directory at once."""
    out = tmp_path / "traces"
    children = [spawn("count", out, TRACES_EACH, -600_000) for _ in range(WRITERS)]
    for child in children:
        wait_for(child, "done")
        assert child.wait() == 0
    whos = check_directory(out)
    assert sorted(whos) == sorted(f"{c.pid}:{k}" for c in children for k in range(TRACES_EACH))
    for child in children:  # each process's traces in its own order
        mine = [w for w in whos if w.startswith(f"{child.pid}:")]
        assert mine == [f"{child.pid}:{k}" for k in range(TRACES_EACH)]


# --- SIGTERM and normal exit ---------------------------------------------------------------------------------

QUEUED = 60
BIG = 300_000  # per trace: folding and writing 60 of them takes long enough that they are still queued at the signal


def test_normal_exit_flushes_every_finished_trace(tmp_path: Path) -> None:
    out = tmp_path / "traces"
    child = spawn("count", out, QUEUED, BIG)
    wait_for(child, "done")
    assert child.wait() == 0
    assert len(check_directory(out)) == QUEUED


def test_sigterm_flushes_every_finished_trace_then_terminates(tmp_path: Path) -> None:
    out = tmp_path / "traces"
    child = spawn("term", out, QUEUED, BIG)
    wait_for(child, "ready")
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=30) == -signal.SIGTERM  # the default action still ends the process, by the signal
    assert len(check_directory(out)) == QUEUED


def test_sigterm_flushes_then_runs_the_apps_own_handler(tmp_path: Path) -> None:
    out = tmp_path / "traces"
    child = spawn("term_handler", out, QUEUED, BIG)
    wait_for(child, "ready")
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=30) == 3  # the app's handler ran (it exits 3)
    assert child.stdout is not None and child.stdout.read().strip() == "app-handler"
    assert len(check_directory(out)) == QUEUED


def test_multiprocessing_fork_workers_flush_before_they_exit(tmp_path: Path) -> None:
    """``multiprocessing`` children end with ``os._exit`` (no atexit): each worker's trace must still be written."""
    out = tmp_path / "traces"
    proc = subprocess.run(
        [sys.executable, str(CHILD), "fork", str(out), "3", "10"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.returncode == 0, proc.stderr
    pids = proc.stdout.split()
    assert len(pids) == 4
    assert sorted(check_directory(out)) == sorted(f"{pid}:0" for pid in pids)


# --- a root that never ends ----------------------------------------------------------------------------------


@spanfold.tool
def lookup(city: str) -> str:
    return f"sunny in {city}"


def test_a_trace_whose_root_never_ends_is_written_incomplete_after_its_idle_timeout(
    tmp_path: Path, _global_provider: Any
) -> None:
    out = tmp_path / "traces"
    spanfold.init(output=str(out), trace_timeout=0.3)
    run = spanfold.agent("stuck")
    try:
        run.__enter__()  # never exited: a run that hangs, or a process that forgot
        lookup("Paris", tool_call_id="call_1")
        deadline = time.monotonic() + 10
        while not (out / "traces.meta.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        metas, _ = split(out / "traces.meta.jsonl")
        events, _ = split(out / "traces.jsonl")
        assert [json.loads(m)["metadata"]["status"] for m in metas] == ["incomplete"]
        assert json.loads(events[0]) == [{"role": "tool", "content": "sunny in Paris", "tool_call_id": "call_1"}]
        assert spanfold.stats()["traces_incomplete"] == 1
    finally:
        run.__exit__(None, None, None)
        spanfold.shutdown()

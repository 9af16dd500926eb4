"""Exporter faults: disk full (RLIMIT_FSIZE), permission denied, output directory deleted mid-run. The app's calls go
on, the problem is logged once (one line: the path, the reason, what spanfold does meanwhile; no traceback: it is
the setup's, not a fault of spanfold's) and counted, the traces wait in the bounded retry buffer, and writing resumes,
in order, once the path works again. At exit, one line says how many traces were never written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spanfold import config, counters
from spanfold.exporter.files.writers import JsonlWriter
from spanfold.exporter.pipeline.processor import FoldingSpanProcessor
from spanfold.trace.model import Message, Trace, TraceMeta

from .test_bounded_memory import bench as _bench_module
from .test_crash_safety import check_directory


def _bench() -> Any:
    return _bench_module


CHILD = Path(__file__).with_name("fault_child.py")
PHASES = ("deleted", "disk_full", "permission")


@pytest.fixture
def world_dir() -> Iterator[Path]:
    """A directory the child can use after dropping to nobody (pytest's own tmp_path is root-only)."""
    with tempfile.TemporaryDirectory(prefix="spanfold-faults-") as name:
        os.chmod(name, 0o777)
        yield Path(name)


def test_disk_full_permission_denied_and_deleted_directory(world_dir: Path) -> None:
    base = world_dir
    proc = subprocess.run(
        [sys.executable, str(CHILD), str(base)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    for phase in PHASES:
        assert report[f"{phase}.pending"] == 3, phase  # kept while the path was broken
        assert report[f"{phase}.pending_after"] == 0, phase  # and written once it worked again
        assert report[f"{phase}.flushed"] is False, phase  # flush() says when traces are not on disk yet
        assert report[f"{phase}.flushed_after"] is True, phase
    stats = report["stats"]
    assert stats["writer.io_errors"] >= len(PHASES)  # each failed append of the held traces, at least once a phase
    assert stats.get("faults", 0) == 0  # not spanfold's fault
    assert stats["traces_written"] == 1 + 4 * len(PHASES)
    assert stats.get("writer.dropped_traces", 0) == 0
    (line,) = proc.stderr.splitlines()  # logged once, however often it happened; no traceback
    assert line.startswith(f"spanfold: cannot write traces to {base / 'traces'}: Not a directory; they wait in memory")
    # The deletion took the first trace with it; everything after it is there, whole, in order.
    whos = check_directory(base / "traces")
    assert whos == [f"{phase}:{k}" for phase in PHASES for k in range(4)]
    assert report["modes"] == {"traces.jsonl": "0o600", "traces.meta.jsonl": "0o600"}
    assert report["dir_mode"] == "0o700"


def _trace(k: int) -> Trace:
    return Trace(events=[Message(role="tool", content=f"{k}")], meta=TraceMeta(trace_id=f"{k:032x}"))


def test_the_retry_buffer_is_bounded_and_counts_what_it_drops(tmp_path: Path) -> None:
    blocker = tmp_path / "out"
    blocker.write_text("a file where the output directory should be")
    writer = JsonlWriter(blocker / "traces", max_retry_traces=5)
    for k in range(8):
        writer.write(_trace(k))
    writer.flush()
    assert writer.pending == 5
    stats = counters.snapshot()
    assert stats["writer.dropped_traces"] == 3  # the oldest went first, counted
    assert stats["writer.io_errors"] == 1  # the flush's attempt (the constructor creates nothing): never raised
    writer.flush()
    assert writer.pending == 5
    assert counters.snapshot()["writer.io_errors"] == 2  # every attempt
    blocker.unlink()
    writer.flush()
    assert writer.pending == 0
    lines = (blocker / "traces" / "traces.jsonl").read_text().splitlines()
    assert [json.loads(x)[0]["content"] for x in lines] == ["3", "4", "5", "6", "7"]


UNWRITABLE_CHILD = """
import sys
import spanfold

@spanfold.tool
def store(who: str) -> str:
    return who

spanfold.init(output=sys.argv[1])
print("after init", flush=True)
for k in range(int(sys.argv[2])):
    with spanfold.agent(f"run {k}"):
        store(str(k))
print("flushed", spanfold.flush(timeout=30), flush=True)
"""


@pytest.mark.parametrize("runs", [0, 3])
def test_an_unwritable_output_directory_is_one_line_and_exit_says_what_was_lost(tmp_path: Path, runs: int) -> None:
    blocker = tmp_path / "out"
    blocker.write_text("a file where the output directory should be")
    out = blocker / "traces"
    proc = subprocess.run(
        [sys.executable, "-c", UNWRITABLE_CHILD, str(out), str(runs)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.returncode == 0, proc.stderr
    if runs == 0:  # nothing to write: the directory is not even looked at
        assert proc.stdout.splitlines() == ["after init", "flushed True"]
        assert proc.stderr == ""
        return
    assert proc.stdout.splitlines() == ["after init", "flushed False"]  # init() made no noise; flush() tells
    assert "Traceback" not in proc.stderr and "internal fault" not in proc.stderr
    assert proc.stderr.splitlines() == [
        f"spanfold: cannot write traces to {out}: Not a directory; they wait in memory (up to 1000 traces, 64 MiB;"
        " the oldest go first) and are retried",
        f"spanfold: {runs} trace(s) could not be written to {out} ({out}: Not a directory); lost at exit",
    ]


def test_the_output_directory_is_created_by_the_first_write_not_by_init(tmp_path: Path) -> None:
    out = tmp_path / "traces"
    writer = JsonlWriter(out)
    assert not out.exists()
    writer.flush()
    assert not out.exists()
    writer.write(_trace(1))
    writer.flush()
    assert out.is_dir() and (out / "traces.jsonl").read_text().count("\n") == 1


class StuckWriter:
    """A writer whose ``write`` hangs until released (a wedged network filesystem)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.written = 0

    def write(self, trace: Trace) -> None:
        self.entered.set()
        self.release.wait(30)
        self.written += 1

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None


def test_a_hung_writer_never_blocks_the_app_and_the_queue_stays_bounded() -> None:
    """While the writer hangs, the app's spans keep ending (``on_end`` only enqueues): the queue holds at most
    ``max_queue_size`` spans, the rest are dropped and counted, a flush with a timeout returns False instead of
    hanging; once the writer is released, what was queued is written."""
    bench = _bench()
    writer = StuckWriter()
    processor = FoldingSpanProcessor([writer], config.load({"max_queue_size": 100, "trace_timeout": 3600.0}))
    try:
        spans = [span for run in range(200) for _, span in bench.run_spans(run) if span is not None]
        processor.on_end(spans[0])
        processor.on_end(spans[1])
        processor.on_end(spans[2])
        processor.on_end(spans[3])  # one whole run: its root ended, it is folded, the writer hangs on it
        assert writer.entered.wait(10)
        for span in spans[4:]:
            processor.on_end(span)  # returns at once: the app is not held up
        queued = processor.stats()["queue_depth"]
        dropped = counters.snapshot()["dropped_spans"]
        assert queued <= 2 * 100  # start markers and spans: 2 x max_queue_size
        assert dropped == len(spans) - 4 - queued > 0
        assert processor.force_flush(200) is False  # bounded wait, no hang
        writer.release.set()
        assert processor.force_flush(30_000)
    finally:
        writer.release.set()
        processor.shutdown()
    # The hung run, then every run with a queued span once released (a stuck run's, incomplete, at shutdown).
    assert writer.written == len({span.context.trace_id for span in spans[: 4 + queued]})

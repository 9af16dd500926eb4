"""Exporter faults: disk full (RLIMIT_FSIZE), permission denied, output directory deleted mid-run. The app's calls go
on, the fault is logged once and counted, the traces wait in the bounded retry buffer, and writing resumes, in
order, once the path works again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from spanfold import counters
from spanfold.exporter.writers import JsonlWriter
from spanfold.trace.model import Message, Trace, TraceMeta

from .test_crash_safety import check_directory

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
    stats = report["stats"]
    assert stats["fault.writer.io"] >= 3 * len(PHASES)
    assert stats["faults"] == stats["fault.writer.io"]
    assert stats["traces_written"] == 1 + 4 * len(PHASES)
    assert stats.get("writer.dropped_traces", 0) == 0
    assert proc.stderr.count("spanfold: internal fault") == 1  # logged once, however often it happened
    assert "internal fault (writer.io)" in proc.stderr
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
    assert writer.pending == 5
    stats = counters.snapshot()
    assert stats["writer.dropped_traces"] == 3  # the oldest went first, counted
    assert stats["fault.writer.io"] == 9  # the constructor, then every attempt: counted, never raised
    blocker.unlink()
    writer.flush()
    assert writer.pending == 0
    lines = (blocker / "traces" / "traces.jsonl").read_text().splitlines()
    assert [json.loads(x)[0]["content"] for x in lines] == ["3", "4", "5", "6", "7"]

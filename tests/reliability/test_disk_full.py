"""A full disk: traces queue in the retry buffer, and when some space comes back as many as fit are written, in order,
whole lines only, each metadata line beside its events line; ``traces_written`` counts only what reached the disk.

The disk is a real 8 MiB tmpfs (mounted for the test; root only). Where mounting is not allowed, the same budget is
simulated at the writer's one write seam (``writers._write_all``): a write beyond the free space writes what fits and
fails with ENOSPC, as the kernel does.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import spanfold
from spanfold.exporter.files import writers

from .test_crash_safety import check_directory

MIB = 1 << 20
SIZE = 8 * MIB
QUEUED = 35  # traces of ~100 kB each: 3.5 MB, more than the 2 MiB freed
PAYLOAD = 100_000


@spanfold.tool
def store(who: str, payload: str) -> str:
    return f"{who}|{payload}"


def run(who: str) -> None:
    """One trace (named as the crash-safety checks expect)."""
    with spanfold.agent(f"crash-child {who}"):
        store(who, "x" * PAYLOAD)


class SmallDisk:
    """A directory on a small filesystem that can be filled to the last byte and given space back."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        root.mkdir()
        self.filler = root / "filler"
        self.mounted = os.geteuid() == 0 and _mount(root)
        self.simulated_filler = 0
        if not self.mounted:  # the same budget, kept at the writer's write seam
            monkeypatch.setattr(writers, "_write_all", self._budgeted_write)

    def fill(self) -> None:
        """Take every free byte."""
        if not self.mounted:
            self.simulated_filler = SIZE - self._used()
            return
        chunk = b"\0" * (64 * 1024)
        with open(self.filler, "ab", buffering=0) as f:
            try:
                while True:
                    f.write(chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        with open(self.filler, "ab", buffering=0) as f:  # the last partial block too
            try:
                while True:
                    f.write(b"\0")
            except OSError:
                pass

    def free(self, nbytes: int) -> None:
        """Give ``nbytes`` back."""
        if not self.mounted:
            self.simulated_filler -= nbytes
            return
        os.truncate(self.filler, max(self.filler.stat().st_size - nbytes, 0))

    def _used(self) -> int:
        return self.simulated_filler + sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file())

    def _budgeted_write(self, fd: int, data: bytes) -> None:
        room = max(SIZE - self._used(), 0)
        os.write(fd, data[:room])
        if room < len(data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def close(self) -> None:
        if self.mounted:
            subprocess.run(["umount", str(self.root)], check=True)


def _mount(root: Path) -> bool:
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE},mode=0700", "tmpfs", str(root)], capture_output=True
    )
    return proc.returncode == 0


@pytest.fixture
def disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SmallDisk]:
    small = SmallDisk(tmp_path / "disk", monkeypatch)
    try:
        yield small
    finally:
        small.close()


def _pending() -> int:
    handle = spanfold.setup.current()
    assert handle is not None and handle.processor is not None
    return sum(getattr(w, "pending", 0) for w in handle.processor.writers)


def test_space_freed_on_a_full_disk_takes_what_fits_in_order(disk: SmallDisk, _global_provider: Any) -> None:
    out = disk.root / "traces"
    spanfold.init(output=str(out))
    try:
        run("before:0")
        assert spanfold.flush(timeout=30)
        disk.fill()
        for k in range(QUEUED):
            run(f"queued:{k}")
        assert spanfold.flush(timeout=30) is False  # nothing fits
        assert _pending() == QUEUED
        assert spanfold.stats()["traces_written"] == 1  # the queued ones are not on disk: not counted
        assert check_directory(out) == ["before:0"]

        disk.free(2 * MIB)
        assert spanfold.flush(timeout=30) is False  # not all of them fit yet
        whos = check_directory(out)  # whole lines, metadata beside its events line
        fitted = len(whos) - 1
        assert 10 <= fitted < QUEUED, fitted  # ~2 MiB of ~100 kB traces
        assert whos == ["before:0"] + [f"queued:{k}" for k in range(fitted)]  # the oldest first, in order
        assert _pending() == QUEUED - fitted
        assert spanfold.stats()["traces_written"] == 1 + fitted

        disk.free(SIZE)
        assert spanfold.flush(timeout=30) is True
        assert check_directory(out) == ["before:0"] + [f"queued:{k}" for k in range(QUEUED)]
        stats = spanfold.stats()
        assert stats["traces_written"] == 1 + QUEUED
        assert stats.get("writer.dropped_traces", 0) == 0
    finally:
        spanfold.shutdown()

"""Every command reads a pipe or a FIFO once, front to back, with the same limits as a file:
``spanfold summary <(zcat traces.jsonl.gz)`` answers as for the file itself, never waits for a second opening, and
an input that never ends (a line without end, ``/dev/zero``) stops at ``--max-line-bytes``.

Each command runs as a real process (bounded by a timeout: a command that opens its input twice waits forever on a
FIFO) on a FIFO fed by a writer thread, and on ``/dev/fd/N``, the read end of a pipe from another process (what the
shell's ``<(...)`` hands over); the span-file branch too (an OTLP JSON span file, plain and gzip)."""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Recorded, record

SPANFOLD = [sys.executable, "-m", "spanfold"]
TIMEOUT = 60
SPEC = "checks:\n  - name: order\n    type: tool_trajectory\n    mode: in_order\n    expected: [get_weather]\n"


@contextlib.contextmanager
def fifo(path: Path, data: bytes) -> Iterator[Path]:
    """A FIFO at ``path`` that a writer thread feeds ``data`` once (the first reader gets it, then end of file)."""
    os.mkfifo(path, 0o600)
    failed: list[BaseException] = []

    def write() -> None:
        try:
            with open(path, "wb") as handle:  # waits for a reader
                handle.write(data)
        except BrokenPipeError:  # the reader stopped early (a limit): what it read is its business
            pass
        except BaseException as exc:
            failed.append(exc)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        yield path
    finally:
        if writer.is_alive():  # never opened: release the writer's open()
            with contextlib.suppress(OSError):
                os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(TIMEOUT)
        assert not writer.is_alive() and not failed, failed


def spanfold(*args: str | Path, pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SPANFOLD, *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT, pass_fds=pass_fds
    )


@contextlib.contextmanager
def piped(data: bytes) -> Iterator[str]:
    """``/dev/fd/N``: the read end of a pipe another process (``cat``) writes ``data`` into."""
    source = Path(os.environ.get("TMPDIR", "/tmp")) / f"spanfold-pipe-{os.getpid()}-{threading.get_ident()}"
    source.write_bytes(data)
    producer = subprocess.Popen(["cat", str(source)], stdout=subprocess.PIPE)
    assert producer.stdout is not None
    try:
        yield f"/dev/fd/{producer.stdout.fileno()}"
    finally:
        producer.stdout.close()
        producer.wait(TIMEOUT)
        source.unlink()


def same(
    result: subprocess.CompletedProcess[str], expected: subprocess.CompletedProcess[str], names: dict[str, str]
) -> None:
    """Both runs said the same, file names aside."""

    def text(s: str) -> str:
        for name, alias in names.items():
            s = s.replace(name, alias)
        return s

    assert (result.returncode, text(result.stdout), text(result.stderr)) == (
        expected.returncode,
        text(expected.stdout),
        text(expected.stderr),
    )


COMMANDS = [
    ("summary", "--json"),
    ("show", "--no-color"),
    ("validate",),
    ("convert", "--to", "agentv"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_fifo_beside_its_metadata_is_read_as_the_file(
    tmp_path: Path, recorded: Recorded, command: tuple[str, ...]
) -> None:
    """A FIFO named ``traces.jsonl`` with its ``traces.meta.jsonl`` beside it: the same answer as the regular file
    (metadata included)."""
    expected = spanfold(*command, recorded.invariant)
    assert expected.returncode == 0, expected.stderr
    here = tmp_path / "fifo"
    here.mkdir()
    shutil.copy(recorded.meta, here / "traces.meta.jsonl")
    with fifo(here / "traces.jsonl", recorded.invariant.read_bytes()) as path:
        result = spanfold(*command, path)
    same(result, expected, {str(path): "FILE", str(recorded.invariant): "FILE"})


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_pipe_from_another_process_is_read_once(tmp_path: Path, recorded: Recorded, command: tuple[str, ...]) -> None:
    """``/dev/fd/N`` (the shell's ``<(cat traces.jsonl)``): every trace, none lost to a first look at the input."""
    alone = tmp_path / "alone.jsonl"  # no metadata beside it: neither has any
    shutil.copy(recorded.invariant, alone)
    expected = spanfold(*command, alone)
    assert expected.returncode == 0, expected.stderr
    with piped(alone.read_bytes()) as name:
        fd = int(name.rsplit("/", 1)[1])
        result = spanfold(*command, name, pass_fds=(fd,))
    same(result, expected, {name: "FILE", str(alone): "FILE"})


def test_check_reads_a_fifo(tmp_path: Path, recorded: Recorded) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    with fifo(tmp_path / "traces.jsonl", recorded.invariant.read_bytes()) as path:
        result = spanfold("check", "--spec", spec, path)
    assert result.returncode == 1, result.stderr  # the weather run passes, the failing run fails
    assert "1 passed, 1 failed (1 checks x 2 traces)" in result.stdout and result.stderr == ""


@pytest.fixture(scope="module")
def span_file(tmp_path_factory: pytest.TempPathFactory, _global_provider: object) -> Path:
    base = tmp_path_factory.mktemp("spans")
    record(base, "otlp-json")
    return base / "traces.otlp.jsonl"


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_a_span_file_through_a_pipe_is_folded(tmp_path: Path, span_file: Path, compressed: bool) -> None:
    """``spanfold summary <(zcat spans.jsonl.gz)`` and ``spanfold fold <(cat spans.jsonl.gz)``: told a span file
    by its first bytes, then folded from the same single read."""
    data = span_file.read_bytes()
    if compressed:
        data = gzip.compress(data)
    expected = spanfold("summary", "--json", span_file)
    assert expected.returncode == 0 and len(expected.stdout.splitlines()) == 2, expected.stderr
    with piped(data) as name:
        result = spanfold("summary", "--json", name, pass_fds=(int(name.rsplit("/", 1)[1]),))
    same(result, expected, {name: "FILE", str(span_file): "FILE"})
    with fifo(tmp_path / "spans", data) as path:
        folded = spanfold("fold", "-o", tmp_path / "out", path)
    assert folded.returncode == 0, folded.stderr
    direct = spanfold("fold", "-o", tmp_path / "direct", span_file)
    assert direct.returncode == 0, direct.stderr
    assert (tmp_path / "out" / "traces.jsonl").read_bytes() == (tmp_path / "direct" / "traces.jsonl").read_bytes()


def test_an_endless_line_in_a_fifo_stops_at_the_line_limit(tmp_path: Path) -> None:
    endless = b'{"messages": "' + b"x" * (1 << 20)  # no end in sight: the writer is cut off by the reader
    with fifo(tmp_path / "traces.jsonl", endless) as path:
        result = spanfold("--max-line-bytes", "4KiB", "summary", path)
    assert result.returncode == 2
    assert f"{path}:1: line longer than 4,096 bytes; the rest of the file is not read" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero on this system")
@pytest.mark.parametrize("command", ["summary", "validate", "show"])
def test_a_device_that_never_ends_stops_at_the_line_limit(command: str) -> None:
    result = spanfold("--max-line-bytes", "64KiB", command, "/dev/zero")
    assert result.returncode == 2, result.stderr
    assert "/dev/zero:1: line longer than 65,536 bytes" in result.stderr
    assert "Traceback" not in result.stderr

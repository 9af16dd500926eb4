"""Nobody else can steer where traces go: a symbolic link planted in the output directory is never followed (no
prompt appended to, no line cut from, the file it points to), a trace file or output directory of another user and a
trace file others may read are refused (counted, logged once, the traces kept in the retry buffer), while an output
path the user chose as a symbolic link to a directory of their own is followed."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

import spanfold
from spanfold import counters
from spanfold.exporter.files.writers import JsonFileWriter, JsonlWriter, file_name
from spanfold.testing import MockLLMServer, Reply
from spanfold.trace.model import Message, Trace, TraceMeta

from .conftest import OPENAI_KEY

PROMPT = "PRIVATE-PROMPT-7f3a: my account number is 12345"
VICTIM = b"precious line\nprecious last line without its newline"
NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make files of another user")


@pytest.fixture
def refusals(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.WARNING, logger="spanfold"):
        yield caplog


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "refusing to write traces" in r.getMessage()]


def _run(out: Path, server: MockLLMServer, **options: Any) -> bool:
    """One agent run through the real SDK with spanfold writing to ``out``; whether flush() got it on disk."""
    spanfold.init(output=str(out), **options)
    try:
        client = openai.OpenAI(api_key=OPENAI_KEY, base_url=server.base_url, max_retries=0)
        for _ in range(2):
            server.script(Reply.text("noted"))
            with spanfold.agent("bank-bot"):
                client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": PROMPT}])
        return spanfold.flush(timeout=30)
    finally:
        spanfold.shutdown()


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(VICTIM)
    os.chmod(victim, 0o600)
    return victim


def _private_dir(path: Path) -> Path:
    path.mkdir(mode=0o700)
    return path


def _nothing_recorded(out: Path) -> None:
    for p in out.rglob("*"):
        assert not p.is_file() or PROMPT.encode() not in p.read_bytes(), p


@pytest.mark.parametrize("name", ["traces.jsonl", "traces.meta.jsonl", "traces.agentv.jsonl"])
def test_a_symlink_planted_for_a_trace_file_is_never_followed(
    tmp_path: Path, server: MockLLMServer, refusals: pytest.LogCaptureFixture, name: str, _global_provider: Any
) -> None:
    victim = _victim(tmp_path)
    out = _private_dir(tmp_path / "traces")
    (out / name).symlink_to(victim)
    fmt = "agentv" if "agentv" in name else "invariant"
    assert _run(out, server, format=fmt) is False  # not on disk: waiting in the retry buffer
    assert victim.read_bytes() == VICTIM  # nothing appended, the torn-looking last line not cut
    assert (out / name).is_symlink()
    _nothing_recorded(out)
    assert not any(p.suffix == ".jsonl" and p.stat().st_size for p in out.iterdir() if not p.is_symlink())
    assert counters.snapshot()["writer.unsafe_path"] >= 1
    (line,) = _lines(refusals)  # once, however often it was refused
    assert str(out / name) in line and "symbolic link" in line
    assert not any(r.exc_info for r in refusals.records)


def test_a_trace_file_others_may_read_is_refused_and_left_as_it_was(
    tmp_path: Path, server: MockLLMServer, refusals: pytest.LogCaptureFixture, _global_provider: Any
) -> None:
    out = _private_dir(tmp_path / "traces")
    events = out / "traces.jsonl"
    events.write_bytes(b"")
    os.chmod(events, 0o666)
    assert _run(out, server) is False
    assert stat.S_IMODE(events.stat().st_mode) == 0o666
    assert events.read_bytes() == b""
    _nothing_recorded(out)
    (line,) = _lines(refusals)
    assert "0666" in line and "wider than 0600" in line


@as_root
def test_a_trace_file_of_another_user_is_refused(
    tmp_path: Path, server: MockLLMServer, refusals: pytest.LogCaptureFixture, _global_provider: Any
) -> None:
    out = _private_dir(tmp_path / "traces")
    events = out / "traces.jsonl"
    events.write_bytes(VICTIM)
    os.chmod(events, 0o600)
    os.chown(events, NOBODY, NOBODY)
    assert _run(out, server) is False
    assert events.read_bytes() == VICTIM
    _nothing_recorded(out)
    (line,) = _lines(refusals)
    assert f"uid {NOBODY}" in line


@as_root
def test_an_output_directory_another_user_created_first_is_refused(
    tmp_path: Path, server: MockLLMServer, refusals: pytest.LogCaptureFixture, _global_provider: Any
) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # like /tmp
    out = shared / "traces"
    out.mkdir(mode=0o755)
    os.chown(out, NOBODY, NOBODY)  # theirs, made before our first run
    assert _run(out, server) is False
    assert list(out.iterdir()) == []
    (line,) = _lines(refusals)
    assert str(out) in line and f"uid {NOBODY}" in line


def test_an_output_path_the_user_made_a_symlink_to_their_own_directory_is_followed(
    tmp_path: Path, server: MockLLMServer, refusals: pytest.LogCaptureFixture, _global_provider: Any
) -> None:
    real = _private_dir(tmp_path / "disk")
    link = tmp_path / "traces"
    link.symlink_to(real, target_is_directory=True)
    assert _run(link, server, file_per_trace=True) is True
    names = sorted(p.name for p in real.iterdir())
    assert names[-2:] == ["traces.jsonl", "traces.meta.jsonl"] and len(names) == 4  # and two <trace_id>.json
    assert PROMPT in (real / "traces.jsonl").read_text()
    assert _lines(refusals) == []
    assert "writer.unsafe_path" not in counters.snapshot()


def _trace(k: int) -> Trace:
    return Trace(events=[Message(role="user", content=f"{PROMPT} {k}")], meta=TraceMeta(trace_id=f"{k:032x}"))


def test_the_per_trace_writer_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    out = _private_dir(tmp_path / "traces")
    name = file_name(_trace(1).meta.trace_id)
    # Every name the writer could pick, planted: the trace file's own and its temporary file's (as they were named).
    (out / name).symlink_to(victim)
    for taken in (name, name.replace(".json", "-1.json")):
        (out / f".{taken}.{os.getpid()}.{threading.get_ident()}.tmp").symlink_to(victim)
    writer = JsonFileWriter(out)
    writer.write(_trace(1))
    writer.flush()
    assert writer.pending == 0
    assert victim.read_bytes() == VICTIM
    written = [p for p in out.iterdir() if not p.is_symlink()]
    assert [p.name for p in written] == [name.replace(".json", "-1.json")]
    assert PROMPT in written[0].read_text()
    assert stat.S_IMODE(written[0].stat().st_mode) == 0o600


@as_root
def test_a_deleted_output_directory_recreated_by_another_user_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "traces"
    writer = JsonlWriter(out)
    writer.write(_trace(1))
    writer.flush()
    assert writer.pending == 0
    shutil.rmtree(out)
    out.mkdir(mode=0o777)
    os.chmod(out, 0o777)
    os.chown(out, NOBODY, NOBODY)  # someone else got there first
    writer.write(_trace(2))
    writer.flush()
    assert writer.pending == 1
    assert list(out.iterdir()) == []
    shutil.rmtree(out)  # gone again: the writer re-creates it, its own
    writer.flush()
    assert writer.pending == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o700 and out.stat().st_uid == os.geteuid()
    assert PROMPT + " 2" in (out / "traces.jsonl").read_text()


@pytest.mark.parametrize("name", ["traces.jsonl", "traces.meta.jsonl"])
def test_a_hard_link_planted_for_a_trace_file_is_refused(
    tmp_path: Path, refusals: pytest.LogCaptureFixture, name: str
) -> None:
    """A second name of a file elsewhere (one of the user's own, 0600, so every other check passes) is never
    appended to, nor its torn-looking last line cut: the writer refuses a file with more than one name."""
    victim = _victim(tmp_path)
    out = _private_dir(tmp_path / "traces")
    os.link(victim, out / name)
    writer = JsonlWriter(out)
    writer.write(_trace(1))
    writer.flush()
    assert writer.pending == 1  # kept in the retry buffer, not written
    assert victim.read_bytes() == VICTIM
    _nothing_recorded(out)
    assert counters.snapshot()["writer.unsafe_path"] >= 1
    (line,) = _lines(refusals)
    assert str(out / name) in line and "2 hard links" in line
    os.unlink(out / name)  # the link removed: the trace is written on the next flush, into a file of its own
    writer.flush()
    assert writer.pending == 0 and victim.read_bytes() == VICTIM
    assert PROMPT + " 1" in (out / "traces.jsonl").read_text()

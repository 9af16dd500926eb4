"""`spanfold convert -o` replaces only what it should: never a device, a pipe or a symbolic link (the atomic rename
would turn them into a regular file: as root, ``-o /dev/null`` would replace /dev/null), never its own input or the
input's metadata sibling. Each refusal is one line, exit 2, nothing written; ``-o -`` is stdout."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanfold.cli import main

EVENTS = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
META = {"metadata": {"trace_id": "t1", "name": "bot"}}


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(EVENTS) + "\n")
    (tmp_path / "x.meta.jsonl").write_text(json.dumps(META) + "\n")
    return path


def _convert(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["convert", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def test_a_fifo_is_not_replaced(source: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    code, _, err = _convert("--to", "agentv", source, "-o", fifo)
    assert (code, err) == (2, f"{fifo}: cannot write: not a regular file (a device, a pipe or a socket)\n")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe.jsonl", "x.jsonl", "x.meta.jsonl"]


def test_a_symlink_is_not_replaced(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me\n")
    link = tmp_path / "out.jsonl"
    link.symlink_to(target)
    code, _, err = _convert("--to", "agentv", source, "-o", link)
    assert (code, err) == (2, f"{link}: cannot write: is a symbolic link (give the file it points to)\n")
    assert link.is_symlink() and target.read_text() == "keep me\n"


def test_a_device_is_not_replaced(source: Path) -> None:
    before = os.stat("/dev/null")
    code, _, err = _convert("--to", "agentv", source, "-o", "/dev/null")
    assert (code, err) == (2, "/dev/null: cannot write: not a regular file (a device, a pipe or a socket)\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and os.stat("/dev/null").st_ino == before.st_ino


def test_the_inputs_metadata_is_not_overwritten(source: Path, tmp_path: Path) -> None:
    meta = tmp_path / "x.meta.jsonl"
    code, _, err = _convert("--to", "invariant", source, "-o", meta)
    assert (code, err) == (2, f"{meta}: cannot write: it is the metadata of the input {source}\n")
    assert json.loads(meta.read_text()) == META


def test_the_input_is_not_overwritten(source: Path, tmp_path: Path) -> None:
    before = source.read_text()
    code, _, err = _convert("--to", "invariant", source, "-o", source)
    assert (code, err) == (2, f"{source}: cannot write: it is the input\n")
    assert source.read_text() == before
    other = tmp_path / "y.jsonl"  # -o y.jsonl writes y.meta.jsonl; an input named y.meta.jsonl is refused too
    other_meta = tmp_path / "y.meta.jsonl"
    other_meta.write_text(json.dumps(META) + "\n")
    code, _, err = _convert("--to", "invariant", other_meta, "-o", other)
    assert (code, err) == (2, f"{other_meta}: cannot write: it is the input\n")
    assert json.loads(other_meta.read_text()) == META


def test_dash_is_stdout(source: Path, tmp_path: Path) -> None:
    code, out, err = _convert("--to", "invariant", source, "-o", "-")
    assert (code, err) == (0, "")
    assert json.loads(out) == EVENTS
    assert not (tmp_path / "-").exists()

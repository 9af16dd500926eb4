"""The commands' shared plumbing: progress bars, Invariant dataset lines, atomic outputs."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from spanfold.commands import inputs
from spanfold.commands.inputs import AtomicOutput, OutputError, Reporter

Cli = Callable[..., Result]
EVENTS = [{"role": "user", "content": "hi"}]


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_for_big_inputs_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text((json.dumps(EVENTS) + "\n") * 50)
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert len(list(inputs.values(str(path), Reporter()))) == 50
    assert terminal.getvalue() == ""  # small: no bar
    monkeypatch.setattr(inputs, "PROGRESS_MIN_BYTES", 100)
    assert len(list(inputs.values(str(path), Reporter()))) == 50
    assert "t.jsonl" in terminal.getvalue() and "100%" in terminal.getvalue()
    piped = io.StringIO()
    monkeypatch.setattr(sys, "stderr", piped)
    assert len(list(inputs.records(str(path), Reporter()))) == 50
    assert piped.getvalue() == ""  # not a terminal: no bar


def test_invariant_dataset_line_and_object_lines(cli: Cli, tmp_path: Path) -> None:
    src = tmp_path / "dataset.jsonl"
    src.write_text(
        json.dumps({"metadata": {"name": "runs", "accuracy": 0.5}})
        + "\n"
        + json.dumps({"messages": EVENTS, "metadata": {"trace_id": "a"}})
        + "\n"
        + json.dumps(EVENTS)
        + "\n"
    )
    out = tmp_path / "out.jsonl"
    assert cli("convert", "--to", "invariant", src, "-o", out).exit_code == 0
    assert out.read_text().splitlines() == [
        '{"metadata":{"name":"runs","accuracy":0.5}}',
        json.dumps(EVENTS, separators=(",", ":")),
        json.dumps(EVENTS, separators=(",", ":")),
    ]
    metas = [json.loads(x)["metadata"]["trace_id"] for x in (tmp_path / "out.meta.jsonl").read_text().splitlines()]
    assert metas == ["a", ""]
    assert cli("validate", src, out).stdout == "4 traces valid (and 2 metadata records)\n"
    summary = cli("summary", src)
    assert summary.exit_code == 0 and summary.stdout.splitlines()[-1] == "2 traces, 0 tool calls, 0 errors"


def test_atomic_output(tmp_path: Path) -> None:
    target = tmp_path / "x.txt"
    with AtomicOutput(target) as out:
        out.write("half")
        assert not target.exists()
    assert list(tmp_path.iterdir()) == []  # left without a commit: nothing
    with AtomicOutput(target) as out:
        out.write("whole\n")
        out.commit()
    assert target.read_text() == "whole\n" and list(tmp_path.iterdir()) == [target]
    with pytest.raises(OutputError, match="cannot write"):
        AtomicOutput(tmp_path / "no" / "x.txt")

"""Issue 20, a newcomer's first hour: the commands treat metadata siblings and directories alike, fit the terminal,
honour NO_COLOR/FORCE_COLOR, count in words that agree, stop at the real error; the demo writes ./traces and says
what it shows once, and names the extra to install when the SDK is missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanfold.cli import main

from .conftest import Recorded


def _invoke(*args: object, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


@pytest.mark.parametrize("command", ["summary", "show", "validate", "convert"])
def test_a_glob_with_the_metadata_sibling_reads_like_the_events_file(command: str, traces: Recorded) -> None:
    folder = traces.invariant.parent
    glob = sorted(folder.glob("*.jsonl"))  # what `traces/*.jsonl` expands to: traces.jsonl traces.meta.jsonl
    assert [p.name for p in glob] == ["traces.jsonl", "traces.meta.jsonl"]
    extra = ["--to", "agentv"] if command == "convert" else []
    if command == "convert":  # one IN: the metadata file stands for its events file
        glob = glob[1:]
    result = _invoke(command, *extra, *glob)
    assert result.exit_code == 0, result.output
    alone = _invoke(command, *extra, traces.invariant)
    if command != "validate":
        assert result.stdout == alone.stdout
    assert result.stderr == ""


@pytest.mark.parametrize("command", ["summary", "show", "validate", "convert", "check"])
def test_a_directory_is_its_trace_files(command: str, traces: Recorded, tmp_path: Path) -> None:
    folder = traces.invariant.parent
    args: list[object] = {
        "convert": ["convert", "--to", "agentv", folder],
        "check": ["check", folder, "--spec", Path(__file__).parents[2] / "examples/agent_tests/golden.yaml"],
    }.get(command, [command, folder])
    result = _invoke(*args)
    assert result.exit_code in (0, 1), result.output  # check: the failing run fails its checks
    assert result.stderr == ""
    if command == "validate":
        assert result.stdout == "2 traces valid\n"  # the metadata is read beside the events, not as a trace file
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = _invoke(command, empty) if command not in ("convert", "check") else None
    if nothing is not None:
        assert (
            nothing.exit_code == 2
            and nothing.stderr == f"{empty}: no trace files (*.jsonl, *.json) in this directory\n"
        )


def test_plurals_agree(traces: Recorded, tmp_path: Path) -> None:
    one = tmp_path / "one.jsonl"
    one.write_text(traces.invariant.read_text().splitlines()[1] + "\n")
    out = _invoke("summary", one).stdout
    assert out.splitlines()[-1] == "1 trace, 1 tool call, 2 errors"
    assert "1 tool call, 2 errors" in _invoke("show", one).stdout


@pytest.mark.parametrize("columns", [70, 80, 120])
def test_summary_fits_the_terminal(traces: Recorded, tmp_path: Path, columns: int) -> None:
    deep = tmp_path / "a rather long directory name" / "for the nightly runs"
    deep.mkdir(parents=True)
    for src in (traces.invariant, traces.meta):
        (deep / src.name).write_bytes(src.read_bytes())
    result = _invoke("summary", deep, traces.invariant, env={"COLUMNS": str(columns)})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert all(len(line) <= columns for line in lines), "\n".join(lines)
    assert lines[0].split()[:2] == ["TRACE", "ID" if columns >= 80 else "EVENTS"]  # the header whole
    assert any("…" in line and line.split()[0].endswith(".jsonl:1") for line in lines)  # cut mid-path
    assert any("lookup_city x1" in line for line in lines)
    piped = _invoke("summary", deep).stdout.splitlines()  # no COLUMNS, not a terminal: nothing cut
    assert str(deep / "traces.jsonl") + ":1" in piped[1]


def test_show_wraps_under_the_text(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    path.write_text('[{"role": "user", "content": "' + "word " * 40 + '"}]\n')
    lines = _invoke("show", path, env={"COLUMNS": "50"}).stdout.splitlines()[3:]
    assert len(lines) > 3 and all(len(line) <= 50 for line in lines)
    assert lines[0].startswith("user       word") and all(line.startswith(" " * 11 + "word") for line in lines[1:])


@pytest.mark.parametrize(
    ("env", "flag", "coloured"),
    [
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, None, False),
        ({"FORCE_COLOR": "1"}, None, True),
        ({"NO_COLOR": "1"}, "--color", True),
        ({}, None, False),
    ],
)
def test_no_color_and_force_color(traces: Recorded, env: dict[str, str], flag: str | None, coloured: bool) -> None:
    args = ["show", traces.invariant] + ([flag] if flag else [])
    assert ("\x1b[" in _invoke(*args, env={"NO_COLOR": "", "FORCE_COLOR": "", **env}).stdout) is coloured


@pytest.mark.parametrize("args", [["summary"], ["show"], ["show", "--trace", "-1"], ["validate"]])
def test_a_missing_file_is_one_line(args: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    result = _invoke(*args[:1], missing, *args[1:])
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"{missing}: no such file\n") or (
        args == ["validate"] and result.stderr == f"{missing}: no such file\n"
    )


def test_demo_writes_traces_here_and_explains_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _global_provider: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    first = runner.invoke(main, ["demo"])
    assert first.exit_code == 0, first.output
    assert "written to traces/traces.jsonl (metadata: traces/traces.meta.jsonl)" in first.stdout
    assert "What you are looking at" in first.stdout
    second = runner.invoke(main, ["demo"])
    assert second.exit_code == 0 and "What you are looking at" not in second.stdout
    assert len((tmp_path / "traces" / "traces.jsonl").read_text().splitlines()) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces"]  # no temporary directory, nothing else


def test_demo_without_openai_names_the_extra(tmp_path: Path) -> None:
    code = "import sys; sys.modules['openai'] = None; from spanfold.cli import main; main()"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPANFOLD_")}
    done = subprocess.run(
        [sys.executable, "-c", code, "demo"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "the demo needs the openai package: pip install 'spanfold[openai]'"
        " (or pip install -e '.[openai]' in a checkout)"
    ]
    assert not (tmp_path / "traces").exists()


@pytest.mark.parametrize(
    ("typed", "hint"),
    [("sumary", "Did you mean 'summary'?"), ("shwo", "Did you mean 'show'?"), ("frobnicate", "Commands: check,")],
)
def test_a_mistyped_command_says_what_was_meant(typed: str, hint: str) -> None:
    result = _invoke(typed)
    assert result.exit_code == 2 and hint in result.stderr and "Traceback" not in result.output


def test_show_reads_traces_here_by_default_and_says_how_traces_are_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _global_provider: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    before = _invoke("show")
    assert before.exit_code == 2 and before.stdout == ""
    assert before.stderr.startswith("traces: no such directory here.") and "spanfold demo" in before.stderr
    assert _invoke("demo").exit_code == 0
    after = _invoke("show")
    assert after.exit_code == 0 and "get_weather" in after.stdout

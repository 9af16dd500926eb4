"""Bad input, for every command: one ``FILE:LINE: problem`` line each, exit 2, no traceback, no output file left."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

Cli = Callable[..., Result]

GOOD = json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])

#: name -> (file bytes, the problem every reading command reports)
BAD_INPUTS: dict[str, tuple[bytes, str]] = {
    "truncated JSON": (f"{GOOD}\n{GOOD[:30]}".encode(), "2: not valid JSON: Unterminated string starting at"),
    "invalid UTF-8": (f"{GOOD}\n".encode() + b'[{"role": "user", "content": "\xff\xfe"}]\n', "2: not valid UTF-8"),
    "an object where a list belongs": (
        f'{GOOD}\n{{"role": "user", "content": "hi"}}\n'.encode(),
        "2: not a trace: a trace must be an event list (or an AgentV document with a 'trace' list)",
    ),
    "wrong types": (f'{GOOD}\n[{{"role": "user", "content": 42}}]\n'.encode(), "2: not a trace: event 1: content must"),
    "tool calls not a list": (
        f'{GOOD}\n[{{"role": "assistant", "tool_calls": {{"id": "1"}}}}]\n'.encode(),
        "2: not a trace: event 1: tool_calls must be a list",
    ),
    # each of these made summary, show and convert print a traceback (issue 28, item 6)
    "messages null": (f'{GOOD}\n{{"messages": null}}\n'.encode(), "2: not a trace: messages must be a list"),
    "output null": (f'{GOOD}\n{{"output": null, "text": "x"}}\n'.encode(), "2: not a trace: output must be a list"),
    "token usage not a number": (
        f'{GOOD}\n{{"output": [], "text": "x", "token_usage": {{"input": "abc"}}}}\n'.encode(),
        "2: not a trace: token_usage.input must be a whole number",
    ),
    "token usage not an object": (
        f'{GOOD}\n{{"output": [], "text": "x", "token_usage": "abc"}}\n'.encode(),
        "2: not a trace: token_usage must be an object",
    ),
    "content chunks not objects": (
        f'{GOOD}\n{{"trace": [{{"type": "message", "metadata": {{"content": [1]}}}}]}}\n'.encode(),
        "2: not a trace: event 1: content chunk 0 must be an object with a type",
    ),
}

#: Each command reading a file, as argument lists (FILE is replaced by the input path).
READERS = {
    "convert": ["convert", "--to", "agentv", "FILE"],
    "summary": ["summary", "FILE"],
    "show": ["show", "FILE"],
}


def run(cli: Cli, args: list[str], path: Path, *extra: object) -> Result:
    return cli(*[str(path) if a == "FILE" else a for a in args], *extra)


def assert_one_line_problem(result: Result, prefix: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), lines


@pytest.mark.parametrize("command", sorted(READERS))
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_lines(cli: Cli, tmp_path: Path, command: str, case: str) -> None:
    data, problem = BAD_INPUTS[case]
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    assert_one_line_problem(run(cli, READERS[command], path), f"{path}:{problem}")


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_validate_bad_lines(cli: Cli, tmp_path: Path, case: str) -> None:
    """validate: unreadable lines are bad input (2); lines that parse but break the schema fail the check (1)."""
    data, problem = BAD_INPUTS[case]
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    result = cli("validate", path)
    assert "Traceback" not in result.output
    (line,) = result.stderr.splitlines()
    if "not a trace" in problem:
        assert result.exit_code == 1
        assert line.startswith(f"{path}:2: $")
    else:
        assert result.exit_code == 2
        assert line.startswith(f"{path}:{problem}")


@pytest.mark.parametrize("command", ["validate", *sorted(READERS)])
def test_missing_and_empty_files(cli: Cli, tmp_path: Path, command: str) -> None:
    args = READERS.get(command, ["validate", "FILE"])
    missing = tmp_path / "none.jsonl"
    assert_one_line_problem(run(cli, args, missing), f"{missing}: no such file")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    assert_one_line_problem(run(cli, args, empty), f"{empty}: no traces in this file")
    # a directory stands for its trace files (here the empty one), as for `check`
    where = tmp_path if command in ("show", "convert") else empty  # one input for these two: named as given
    assert_one_line_problem(run(cli, args, tmp_path), f"{where}: no traces in this file")
    bare = tmp_path / "bare"
    bare.mkdir()
    assert_one_line_problem(run(cli, args, bare), f"{bare}: no trace files (*.jsonl, *.json) in this directory")


def test_a_bad_line_leaves_no_half_written_output(cli: Cli, tmp_path: Path) -> None:
    src = tmp_path / "in" / "t.jsonl"
    src.parent.mkdir()
    src.write_text(f"{GOOD}\n{GOOD}\n{{oops\n{GOOD}\n")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for fmt, name in [("invariant", "x.jsonl"), ("agentv", "x.agentv.jsonl"), ("compact", "x.yaml")]:
        result = cli("convert", "--to", fmt, src, "-o", out_dir / name)
        assert_one_line_problem(result, f"{src}:3: not valid JSON")
    assert list(out_dir.iterdir()) == []  # neither the outputs, nor a .meta.jsonl, nor a temporary file


def test_a_failed_conversion_keeps_the_previous_output(cli: Cli, tmp_path: Path) -> None:
    src = tmp_path / "t.jsonl"
    src.write_text(f"{GOOD}\n")
    out = tmp_path / "out" / "x.agentv.jsonl"
    out.parent.mkdir()
    out.write_text("previous\n")
    src.write_text(f"{GOOD}\n[1]\n")
    assert_one_line_problem(cli("convert", "--to", "agentv", src, "-o", out), f"{src}:2: not a trace: event 1")
    assert out.read_text() == "previous\n" and list(out.parent.iterdir()) == [out]


def test_read_only_directory(cli: Cli, tmp_path: Path) -> None:
    src = tmp_path / "t.jsonl"
    src.write_text(f"{GOOD}\n")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    # root writes anywhere a mode allows nothing; /proc refuses new files even to root
    out = Path("/proc/spanfold-test.jsonl") if os.geteuid() == 0 else locked / "x.jsonl"
    try:
        result = cli("convert", "--to", "agentv", src, "-o", out)
        assert_one_line_problem(result, f"{out}: cannot write: ")
        assert not out.exists()
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize("target", ["missing-dir/x.jsonl", "a-directory", "a-file/x.jsonl"])
def test_unwritable_output_paths(cli: Cli, tmp_path: Path, target: str) -> None:
    src = tmp_path / "t.jsonl"
    src.write_text(f"{GOOD}\n")
    (tmp_path / "a-directory").mkdir()
    (tmp_path / "a-file").write_text("")
    out = tmp_path / target
    result = cli("convert", "--to", "agentv", src, "-o", out)
    assert_one_line_problem(result, f"{out}: cannot write: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-directory", "a-file", "t.jsonl"]
    assert list((tmp_path / "a-directory").iterdir()) == []


def test_bad_metadata_sibling(cli: Cli, tmp_path: Path) -> None:
    src = tmp_path / "traces.jsonl"
    src.write_text(f"{GOOD}\n")
    (tmp_path / "traces.meta.jsonl").write_text("[1, 2]\n")
    assert_one_line_problem(cli("summary", src), f"{tmp_path / 'traces.meta.jsonl'}:1: not a metadata record")


def test_bad_options(cli: Cli, tmp_path: Path) -> None:
    src = tmp_path / "t.jsonl"
    src.write_text(f"{GOOD}\n")
    for args in (
        ["convert", "--to", "xml", src],
        ["convert", "--to", "agentv", "--style", "object", src],
        ["convert", src],
        ["show", src, "--trace", "0"],
        ["validate"],
    ):
        result = cli(*args)
        assert result.exit_code == 2 and "Traceback" not in result.output, args
        assert "Error:" in result.stderr, args


def test_an_unwritable_metadata_sibling_leaves_no_temporary_file(cli: Cli, tmp_path: Path) -> None:
    src = tmp_path / "t.jsonl"
    src.write_text(f"{GOOD}\n")
    (tmp_path / "x.meta.jsonl").mkdir()
    result = cli("convert", "--to", "invariant", src, "-o", tmp_path / "x.jsonl")
    assert_one_line_problem(result, f"{tmp_path / 'x.meta.jsonl'}: cannot write: is a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl", "x.meta.jsonl"]


@pytest.mark.parametrize("command", ["validate", *sorted(READERS)])
def test_yaml_nested_too_deeply_or_containing_itself(cli: Cli, tmp_path: Path, command: str) -> None:
    args = READERS.get(command, ["validate", "FILE"])
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 900 + "]" * 900 + "\n")
    assert_one_line_problem(run(cli, args, deep), f"{deep}:1: not valid YAML: nested too deeply")
    cycle = tmp_path / "cycle.yaml"  # a trace whose extra key holds itself: no JSON can be written of it
    cycle.write_text("- {role: user, content: hi}\n- {role: assistant, content: hello, extra: &a [1, *a]}\n")
    assert_one_line_problem(run(cli, args, cycle), f"{cycle}:2: a YAML alias inside the node it names")

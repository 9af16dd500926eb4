"""A file that is not JSON at all, given as a trace file (issue 52): a README or a binary file is a short verdict, the
first few lines that are not JSON with FILE:LINE and a count of the rest, exit 2 and no traceback; not an error per
line. A trace file with a few torn lines still names each one."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from spanfold.commands.inputs import NOT_JSON_SHOWN

Cli = Callable[..., Result]

#: Each command reading a file, as argument lists (FILE is replaced by the input path; OUT by an output path).
READERS = {
    "validate": ["validate", "FILE"],
    "show": ["show", "FILE"],
    "convert": ["convert", "--to", "agentv", "FILE", "-o", "OUT"],
    "summary": ["summary", "FILE"],
}
GOOD = json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
NOT_JSON = re.compile(r"^(?P<file>.+):(?P<line>\d+): not valid (JSON|UTF-8)")


def _prose(lines: int) -> str:
    """A README: prose, headings and blank lines (blank lines are no problem, so not counted)."""
    out = []
    for n in range(lines):
        out.append(f"# Section {n}" if n % 10 == 0 else f"Some words about spanfold, line {n}, (not JSON).")
        if n % 3 == 0:
            out.append("")
    return "\n".join(out) + "\n"


def _run(cli: Cli, command: str, path: Path, tmp_path: Path) -> Result:
    out = tmp_path / "out.agentv.jsonl"
    args = [str(path) if a == "FILE" else str(out) if a == "OUT" else a for a in READERS[command]]
    result = cli(*args)
    assert "Traceback" not in result.output
    assert not out.exists()  # nothing written from a file that is not a trace file
    return result


def _named(result: Result) -> list[int]:
    """The line numbers of the lines named as not JSON."""
    return [int(m["line"]) for m in map(NOT_JSON.match, result.stderr.splitlines()) if m]


@pytest.mark.parametrize("command", sorted(READERS))
def test_a_readme_given_as_a_trace_file_is_a_short_verdict(cli: Cli, tmp_path: Path, command: str) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(_prose(520), encoding="utf-8")
    result = _run(cli, command, readme, tmp_path)
    assert result.exit_code == 2, result.output
    assert _named(result) == [1, 3, 4, 5, 7][:NOT_JSON_SHOWN]  # the first few, with their lines (blank lines skipped)
    lines = result.stderr.splitlines()
    assert lines[-1] == f"{readme}: ... and {520 - NOT_JSON_SHOWN} more lines that are not JSON: is this a trace file?"
    assert len(lines) == NOT_JSON_SHOWN + 1, lines


@pytest.mark.parametrize("command", sorted(READERS))
def test_a_binary_file_given_as_a_trace_file_is_a_short_verdict(cli: Cli, tmp_path: Path, command: str) -> None:
    binary = tmp_path / "photo.jsonl"
    data = random.Random(52).randbytes(64 * 1024)
    binary.write_bytes(data)
    result = _run(cli, command, binary, tmp_path)
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(_named(result)) == NOT_JSON_SHOWN
    (verdict,) = [line for line in lines if "more lines" in line]
    said = re.search(r"and (\d+) more lines that are not JSON: is this a trace file\?$", verdict)
    assert said is not None, verdict
    counted = int(said[1])
    problems = sum(1 for raw in data.split(b"\n") if raw.strip())  # every non-blank line of random bytes is a problem
    assert counted == problems - NOT_JSON_SHOWN
    assert len(lines) <= NOT_JSON_SHOWN + 2, lines  # a line that happens to be JSON may be named too


def test_each_file_gets_its_own_verdict(cli: Cli, tmp_path: Path) -> None:
    first, second = tmp_path / "a.md", tmp_path / "b.md"
    first.write_text(_prose(30), encoding="utf-8")
    second.write_text(_prose(12), encoding="utf-8")
    result = cli("summary", first, second)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines == [
        *(f"{first}:{n}: not valid JSON: Expecting value (column 1)" for n in [1, 3, 4, 5, 7]),
        f"{first}: ... and {30 - NOT_JSON_SHOWN} more lines that are not JSON: is this a trace file?",
        *(f"{second}:{n}: not valid JSON: Expecting value (column 1)" for n in [1, 3, 4, 5, 7]),
        f"{second}: ... and {12 - NOT_JSON_SHOWN} more lines that are not JSON: is this a trace file?",
    ]


@pytest.mark.parametrize("command", sorted(READERS))
def test_a_trace_file_with_a_few_torn_lines_names_each(cli: Cli, tmp_path: Path, command: str) -> None:
    """Up to the limit every bad line is named; past it, a trace file (mostly traces) is not asked whether it is one."""
    few = tmp_path / "few.jsonl"
    few.write_text("".join(f"{GOOD}\n" if n % 2 else f"{GOOD[:20]}\n" for n in range(2 * NOT_JSON_SHOWN)))
    result = _run(cli, command, few, tmp_path)
    assert result.exit_code == 2
    assert _named(result) == [n + 1 for n in range(0, 2 * NOT_JSON_SHOWN, 2)]
    assert "more line" not in result.stderr
    torn = tmp_path / "torn.jsonl"
    torn.write_text("".join(f"{GOOD}\n" if n % 50 else f"{GOOD[:20]}\n" for n in range(50 * (NOT_JSON_SHOWN + 2))))
    result = _run(cli, command, torn, tmp_path)
    assert result.exit_code == 2
    assert _named(result) == [1 + 50 * n for n in range(NOT_JSON_SHOWN)]
    assert result.stderr.splitlines()[-1] == f"{torn}: ... and 2 more lines that are not JSON"


def test_check_counts_them_too(cli: Cli, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(_prose(100), encoding="utf-8")
    spec = tmp_path / "spec.yaml"
    spec.write_text("- role: user\n  content: hi\n", encoding="utf-8")
    result = cli("check", readme, "--spec", spec)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert _named(result) == [1, 3, 4, 5, 7][:NOT_JSON_SHOWN]
    assert result.stderr.splitlines()[-1] == f"{readme}: ... and {100 - NOT_JSON_SHOWN} more lines that are not JSON"
    assert "100 input errors" in result.stdout  # every one still counted

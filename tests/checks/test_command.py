"""``spanfold check``: the table, exit codes 0/1/2, input errors, --trace, --junit."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from spanfold.commands.check import command as check

from .conftest import make_trace

SPEC = """
checks:
  - name: order
    type: tool_trajectory
    mode: in_order
    expected: [search, answer]
  - name: asks
    type: expected_messages
    expected_messages:
      - role: user
        content: {contains: weather}
"""

GOOD = make_trace("search", "answer")
BAD = make_trace("answer", "search")


def write_jsonl(path: Path, *traces: Any, extra: list[str] | None = None) -> Path:
    """Write the lines; the path comes back relative to the working directory (the test's tmp_path)."""
    lines = [json.dumps(t) for t in traces] + (extra or [])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Path(os.path.relpath(path))


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC, encoding="utf-8")
    return path


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(check, [str(a) for a in args], catch_exceptions=False)


def test_all_pass_exits_0(tmp_path: Path, spec: Path) -> None:
    traces = write_jsonl(tmp_path / "traces.jsonl", GOOD, GOOD)
    result = run(traces, "--spec", spec)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["TRACE", "CHECK", "SCORE", "RESULT", "REASON"]
    assert lines[1].split() == [f"{traces}:1", "order", "1.00", "PASS"]
    assert len(lines) == 6
    assert lines[-1] == "4 passed, 0 failed (2 checks x 2 traces)"


def test_a_failure_exits_1_and_shows_the_first_reason(tmp_path: Path, spec: Path) -> None:
    traces = write_jsonl(tmp_path / "traces.jsonl", GOOD, BAD)
    result = run(traces, "--spec", spec)
    assert result.exit_code == 1
    failing = [line for line in result.output.splitlines() if "FAIL" in line]
    assert len(failing) == 1
    assert failing[0].startswith(f"{traces}:2")
    assert "order   0.50  FAIL    call 3: expected answer (expected[1]) but the trace has 2 tool calls" in failing[0]
    assert result.output.splitlines()[-1] == "3 passed, 1 failed (2 checks x 2 traces)"


def test_verbose_prints_every_reason(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text("checks: [{type: tool_trajectory, mode: exact, expected: [a, b]}]\n")
    traces = write_jsonl(tmp_path / "t.jsonl", make_trace("x", "y"))
    result = run(traces, "--spec", spec, "-v")
    assert result.exit_code == 1
    assert "call 1: expected a but got x()" in result.output
    assert result.output.splitlines()[2].strip() == "call 2: expected b but got y()"


def test_missing_file_exits_2(tmp_path: Path, spec: Path) -> None:
    result = run(tmp_path / "none.jsonl", "--spec", spec)
    assert result.exit_code == 2
    assert result.stderr.strip() == f"{tmp_path / 'none.jsonl'}: no such file"
    assert "Traceback" not in result.output


def test_bad_lines_are_reported_and_the_rest_checked(tmp_path: Path, spec: Path) -> None:
    traces = write_jsonl(
        tmp_path / "t.jsonl", GOOD, extra=["{not json", '{"role": "user"}', "[1, 2]", "", json.dumps(GOOD)]
    )
    result = run(traces, "--spec", spec)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"{traces}:2: not valid JSON: Expecting property name enclosed in double quotes (column 2)",
        f"{traces}:3: not a trace: a trace must be an event list (or an AgentV document with a 'trace' list)",
        f"{traces}:4: not a trace: event 1 is not an object",
    ]
    assert f"{traces}:6" in result.stdout
    assert result.stdout.splitlines()[-1] == "4 passed, 0 failed (2 checks x 2 traces), 3 input errors"


def test_bad_spec_exits_2_with_one_line(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("checks:\n  - type: tool_trajectory\n    mode: sometimes\n")
    traces = write_jsonl(tmp_path / "t.jsonl", GOOD)
    result = run(traces, "--spec", spec)
    assert result.exit_code == 2
    assert (
        result.stderr
        == f'{spec}:3: mode must be one of any_order, in_order, exact, subset, superset (got "sometimes")\n'
    )
    assert result.stdout == ""
    missing = run(traces, "--spec", tmp_path / "nope.yaml")
    assert (missing.exit_code, missing.stderr) == (2, f"{tmp_path / 'nope.yaml'}: no such file\n")


def test_empty_input_exits_2(tmp_path: Path, spec: Path) -> None:
    traces = tmp_path / "empty.jsonl"
    traces.write_text("")
    result = run(traces, "--spec", spec)
    assert result.exit_code == 2 and "no traces to check" in result.stderr


def test_trace_option_picks_traces(tmp_path: Path, spec: Path) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", GOOD, BAD)
    b = write_jsonl(tmp_path / "b.jsonl", GOOD)
    assert run(a, b, "--spec", spec, "--trace", "1").exit_code == 0
    picked = run(a, b, "--spec", spec, "--trace", "2")
    assert picked.exit_code == 1 and f"{a}:2" in picked.output and f"{b}:1" not in picked.output
    last = run(a, b, "--spec", spec, "--trace", "-1")
    assert last.exit_code == 0 and f"{b}:1" in last.output and f"{a}:1" not in last.output
    out_of_range = run(a, b, "--spec", spec, "--trace", "4")
    assert out_of_range.exit_code == 2 and "--trace: no trace 4 (the inputs hold 3)" in out_of_range.stderr


def test_directory_and_metadata_records(tmp_path: Path, spec: Path) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    write_jsonl(folder / "run.jsonl", GOOD)
    write_jsonl(folder / "run.meta.jsonl", extra=[json.dumps({"metadata": {"trace_id": "x"}, "summary": {}})])
    (folder / "notes.txt").write_text("ignored")
    result = run(folder, "--spec", spec)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "2 passed, 0 failed (2 checks x 1 traces)"


def test_agentv_lines(tmp_path: Path, spec: Path) -> None:
    doc = {
        "trace": [
            {"type": "message", "timestamp": "t", "text": "the weather?", "metadata": {"role": "user"}},
            {"type": "tool_call", "timestamp": "t", "id": "1", "name": "search", "input": {}},
            {"type": "tool_result", "timestamp": "t", "id": "1", "output": "ok"},
            {"type": "tool_call", "timestamp": "t", "id": "2", "name": "answer", "input": {}},
        ],
        "trace_summary": {},
    }
    assert run(write_jsonl(tmp_path / "agentv.jsonl", doc), "--spec", spec).exit_code == 0


def test_junit(tmp_path: Path, spec: Path) -> None:
    traces = write_jsonl(tmp_path / "t.jsonl", GOOD, BAD, extra=["oops"])
    report = tmp_path / "reports" / "junit.xml"
    result = run(traces, "--spec", spec, "--junit", report)
    assert result.exit_code == 2
    root = ET.parse(report).getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "1", "1")
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == str(traces) and suite.get("tests") == "5"
    cases = suite.findall("testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        (f"{traces}:1", "order"),
        (f"{traces}:1", "asks"),
        (f"{traces}:2", "order"),
        (f"{traces}:2", "asks"),
        (f"{traces}:3", "input"),
    ]
    failure = cases[2].find("failure")
    assert failure is not None
    assert failure.get("message") == "call 3: expected answer (expected[1]) but the trace has 2 tool calls"
    assert failure.get("type") == "score 0.50 < threshold 1.00"
    assert failure.text == "call 3: expected answer (expected[1]) but the trace has 2 tool calls"
    assert cases[0].find("failure") is None
    score = cases[2].find("properties/property[@name='score']")
    assert score is not None and score.get("value") == "0.5000"
    error = cases[4].find("error")
    assert error is not None and error.get("message", "").startswith("not valid JSON")
    assert sorted(p.name for p in report.parent.iterdir()) == ["junit.xml"]  # no temporary file left behind


def test_junit_all_pass_exits_0(tmp_path: Path, spec: Path) -> None:
    report = tmp_path / "junit.xml"
    assert run(write_jsonl(tmp_path / "t.jsonl", GOOD), "--spec", spec, "--junit", report).exit_code == 0
    root = ET.parse(report).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "0", "0")


def test_junit_unwritable_exits_2(tmp_path: Path, spec: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = run(write_jsonl(tmp_path / "t.jsonl", GOOD), "--spec", spec, "--junit", blocker / "junit.xml")
    assert result.exit_code == 2 and "cannot write" in result.stderr


def test_help() -> None:
    result = CliRunner().invoke(check, ["--help"])
    assert result.exit_code == 0 and "--junit" in result.output and "--trace N" in result.output

"""Specs and AgentV eval files that are valid YAML but the wrong shape (issue 45, item 2, and what the spec fuzzer in
``tests/fuzz`` found): ``spanfold check`` answers ``FILE:LINE: problem`` and exit 2, never a traceback (exit 1, which
CI reads as "a check failed")."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanfold.checks.errors import SpecError
from spanfold.checks.spec import loads_spec
from spanfold.commands.check import command as check

from .conftest import make_trace

HUGE = "9" * 400
#: name -> (spec text, the line the problem is on, a word the problem names).
BAD_SPECS: dict[str, tuple[str, int, str]] = {
    "type-is-a-list": ("checks:\n  - type: [tool_trajectory]\n", 2, "type"),
    "type-is-a-mapping": ("checks:\n  - name: a\n    type: {tool_trajectory: 1}\n", 3, "type"),
    "eval-grader-type-is-a-mapping": (
        "tests:\n  - id: a\n    input: hi\n    assertions:\n      - type: {a: 1}\n",
        5,
        "type",
    ),
    "eval-grader-type-is-a-list": (
        "tests:\n  - id: a\n    input: hi\n    assertions:\n      - type: [execution-metrics]\n",
        5,
        "type",
    ),
    "max-llm-calls-400-digits": (
        f"checks:\n  - type: execution-metrics\n    max_llm_calls: {HUGE}\n",
        3,
        "max_llm_calls",
    ),
    "eval-max-duration-400-digits": (
        f"tests:\n  - id: a\n    input: hi\n    assertions:\n      - type: execution-metrics\n"
        f"        max_duration_ms: {HUGE}\n",
        6,
        "max_duration_ms",
    ),
    "expected-call-max-duration-400-digits": (
        f"checks:\n  - type: tool-trajectory\n    mode: in_order\n    expected:\n"
        f"      - {{tool: a, max_duration_ms: {HUGE}}}\n",
        5,
        "max_duration_ms",
    ),
    "weight-400-digits": (
        f"checks:\n  - type: execution-metrics\n    max_llm_calls: 3\n    weight: {HUGE}\n",
        4,
        "weight",
    ),
    "min-score-400-digits": (
        f"checks:\n  - type: execution-metrics\n    max_llm_calls: 3\n    required: true\n    min_score: {HUGE}\n",
        5,
        "min_score",
    ),
}


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("name", BAD_SPECS)
def test_a_wrongly_shaped_spec_is_refused_with_file_and_line(name: str, tmp_path: Path) -> None:
    text, line, word = BAD_SPECS[name]
    Path("t.jsonl").write_text(json.dumps(make_trace("a")) + "\n", encoding="utf-8")
    Path("spec.yaml").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(check, ["t.jsonl", "--spec", "spec.yaml"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert result.exit_code == 2, result.output
    first = result.output.splitlines()[0]
    assert first.startswith(f"spec.yaml:{line}: "), first
    assert word in first


@pytest.mark.parametrize("name", BAD_SPECS)
def test_the_same_from_the_library_is_a_spec_error(name: str) -> None:
    text, line, _ = BAD_SPECS[name]
    with pytest.raises(SpecError) as caught:
        loads_spec(text, file="s.yaml")
    assert str(caught.value).startswith(f"s.yaml:{line}: ")


def test_a_large_but_finite_budget_is_still_a_budget(tmp_path: Path) -> None:
    """A budget of 20 digits is a float like any other: the trace is graded (and passes)."""
    Path("t.jsonl").write_text(json.dumps(make_trace("a")) + "\n", encoding="utf-8")
    Path("spec.yaml").write_text(f"checks:\n  - type: execution-metrics\n    max_llm_calls: {'9' * 20}\n")
    result = CliRunner().invoke(check, ["t.jsonl", "--spec", "spec.yaml"])
    assert result.exit_code == 0, result.output
    assert os.path.exists("t.jsonl")

"""AgentV's own CLI grades spanfold's traces of the weather agent, and ``spanfold check`` gives the same verdicts.

The weather demo agent runs under ``spanfold run --format agentv-transcript`` (zero code, the mock server standing
in for OpenAI), one run per question; ``agentv eval run EVAL.yaml --transcript FILE`` grades the transcript rows
spanfold wrote, offline (``AGENTV_NO_UPDATE_CHECK=1``; its transcript mode calls no model). Right expectations pass;
each of several wrong ones fails; and on every test, ``spanfold check FILE --spec EVAL.yaml`` reaches AgentV's
verdict with AgentV's score, grader by grader. The same holds for ``spanfold convert --to agentv-transcript`` of an
Invariant trace file.

Collected only by ``.ci/agentv``, which installs the pinned ``agentv`` from npm and names it in ``SPANFOLD_AGENTV``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from spanfold.checks.agentv.eval_file import EvalTest
from spanfold.checks.spec import load_spec
from spanfold.trace.read import read_records

AGENTV = os.environ["SPANFOLD_AGENTV"]
SPANFOLD = shutil.which("spanfold", path=str(Path(sys.executable).parent))
APP = textwrap.dedent(
    """
    import sys
    import openai
    from spanfold.testing import MockLLMServer, scenarios

    try:  # the weather agent: spanfold.testing's, or the demo's where that holds it
        from spanfold.testing import run_agent
    except ImportError:
        from spanfold.demo import openai_chat_agent as agent
    else:
        def agent(client, question):
            return run_agent("openai", client, question)

    with MockLLMServer(scenarios.weather_agent) as server:
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        for question in sys.argv[1:]:
            agent(client, question)
    print("done")
    """
)

#: What every run does: get_weather(Paris), get_weather(Tokyo) in one step, convert_temperature(18, fahrenheit), an
#: answer; three model calls.
RIGHT: list[dict[str, Any]] = [
    {
        "id": "calls-in-order",
        "assertions": [
            {
                "name": "sequence",
                "type": "tool-trajectory",
                "mode": "in_order",
                "expected": [
                    {"tool": "get_weather", "args": {"city": "Paris"}},
                    {"tool": "get_weather", "args": {"city": "Tokyo"}},
                    {"tool": "convert_temperature", "args": {"celsius": 18}, "args_match": "superset"},
                ],
            },
            {"name": "searches", "type": "tool_trajectory", "mode": "any_order", "minimums": {"get_weather": 2}},
            {
                "name": "budget",
                "type": "execution-metrics",
                "max_tool_calls": 3,
                "max_llm_calls": 3,
                "max_tokens": 5000,
                "max_duration_ms": 60000,
            },
        ],
    },
    {
        "id": "exact-and-allowed",
        "assertions": [
            {
                "type": "tool-trajectory",
                "mode": "exact",
                "args_match": ["city"],
                "expected": [
                    {"tool": "get_weather", "args": {"city": "Paris"}, "max_duration_ms": 60000},
                    {"tool": "get_weather", "args": {"city": "Tokyo"}},
                    {"tool": "convert_temperature", "args": "any"},
                ],
            },
            {
                "name": "allowed",
                "type": "tool-trajectory",
                "mode": "subset",
                "expected": [{"tool": "get_weather"}, {"tool": "convert_temperature"}],
            },
            # one grader of five failing costs 0.2: the test still passes AgentV's 0.8
            {"name": "too-few-calls", "type": "execution-metrics", "max_tool_calls": 1},
            {"name": "found-all", "type": "tool-trajectory", "mode": "superset", "expected": [{"tool": "get_weather"}]},
            {"name": "llm-calls", "type": "execution-metrics", "max_llm_calls": 5},
        ],
    },
]

#: Each fails, for its own reason.
WRONG: list[dict[str, Any]] = [
    {  # order: the conversion came last
        "id": "wrong-order",
        "assertions": [
            {
                "type": "tool-trajectory",
                "mode": "in_order",
                "expected": [{"tool": "convert_temperature"}, {"tool": "get_weather"}, {"tool": "get_weather"}],
            }
        ],
    },
    {  # AgentV's default args_match is exact: a partial argument list does not match
        "id": "partial-args-exact",
        "assertions": [
            {
                "type": "tool-trajectory",
                "mode": "superset",
                "expected": [{"tool": "convert_temperature", "args": {"celsius": 18}}],
            }
        ],
    },
    {  # the wrong city
        "id": "wrong-city",
        "assertions": [
            {
                "type": "tool-trajectory",
                "mode": "exact",
                "expected": [
                    {"tool": "get_weather", "args": {"city": "London"}},
                    {"tool": "get_weather", "args": {"city": "Tokyo"}},
                    {"tool": "convert_temperature", "args": "any"},
                ],
            },
        ],
    },
    {  # two calls, not three
        "id": "too-few-minimum",
        "assertions": [{"type": "tool-trajectory", "mode": "any_order", "minimums": {"get_weather": 3}}],
    },
    {  # a tool the agent does not have
        "id": "missing-tool",
        "assertions": [
            {
                "type": "tool-trajectory",
                "mode": "superset",
                "expected": [{"tool": "get_weather"}, {"tool": "get_forecast"}],
            }
        ],
    },
    {  # three model calls, three tool calls, ~500 tokens
        "id": "over-budget",
        "assertions": [
            {"type": "execution-metrics", "max_llm_calls": 2, "max_tool_calls": 2, "max_tokens": 100},
        ],
    },
    {  # the run's cost (its three gpt-4o-mini calls, priced from genai-prices' table) is over a millionth of a dollar
        "id": "over-cost-budget",
        "assertions": [{"type": "execution-metrics", "max_cost_usd": 0.000001}],
    },
    {  # a required grader failing zeroes the test, whatever the others score
        "id": "required-fails",
        "assertions": [
            {"type": "tool-trajectory", "mode": "any_order", "minimums": {"get_weather": 1}},
            {"type": "execution-metrics", "max_tool_calls": 2, "required": True},
            {"name": "llm", "type": "execution-metrics", "max_llm_calls": 9},
        ],
    },
]


def _eval_file(path: Path, tests: list[dict[str, Any]]) -> Path:
    doc = {"description": "the weather agent", "tests": [{**t, "input": "Weather in Paris and Tokyo?"} for t in tests]}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SPANFOLD_", "TRACEPARENT"))}
    return {**env, "AGENTV_NO_UPDATE_CHECK": "1"}


def _spanfold_run(tmp: Path, fmt: str, questions: list[str]) -> Path:
    app = tmp / "app.py"
    app.write_text(APP)
    assert SPANFOLD is not None
    out = tmp / f"traces-{fmt}"
    done = subprocess.run(
        [SPANFOLD, "run", "-o", str(out), "--format", fmt, "--", sys.executable, str(app), *questions],
        env=_clean_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
    return out


@pytest.fixture(scope="module")
def transcript(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The transcript rows ``spanfold run --format agentv-transcript`` wrote: one run per test, in order."""
    tmp = tmp_path_factory.mktemp("agentv")
    questions = [f"Run {n}: weather in Paris and Tokyo?" for n in range(1, len(RIGHT) + len(WRONG) + 1)]
    out = _spanfold_run(tmp, "agentv-transcript", questions)
    return out / "traces.agentv-transcript.jsonl"


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _runs(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        runs.setdefault(row["test_id"], []).append(row)
    return list(runs.values())


def _part(path: Path, runs: list[list[dict[str, Any]]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for run in runs for row in run))
    return path


def _agentv(eval_file: Path, transcript: Path, out: Path) -> tuple[int, dict[str, dict[str, Any]]]:
    """``agentv eval run``'s exit status (1 when a test scores below AgentV's 0.8, which ``--threshold`` asks it to
    report), and its result per test id."""
    done = subprocess.run(
        [AGENTV, "eval", "run", str(eval_file), "--transcript", str(transcript), "--output", str(out),
         "--workers", "1", "--threshold", "0.8"],
        env=_clean_env(), capture_output=True, text=True, timeout=180, cwd=eval_file.parent,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    results = {r["test_id"]: r for r in _rows(out / "index.jsonl")}
    return done.returncode, results


def _spanfold_check(eval_file: Path, transcript: Path) -> tuple[int, str]:
    assert SPANFOLD is not None
    done = subprocess.run(
        [SPANFOLD, "check", str(transcript), "--spec", str(eval_file), "-v"],
        env=_clean_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.returncode, done.stdout


def _same_verdicts(eval_file: Path, transcript: Path, agentv: dict[str, dict[str, Any]]) -> None:
    """Test by test and grader by grader, spanfold's scores and verdicts are AgentV's."""
    spec = load_spec(eval_file)
    traces = [r.trace for r in read_records(transcript) if r.trace is not None]
    assert len(traces) == len(spec.checks)
    for test, trace in zip(spec.checks, traces, strict=True):
        assert isinstance(test, EvalTest)
        theirs = agentv[test.name]
        ours = test.run(trace)
        assert ours.score == pytest.approx(theirs["score"], abs=1e-9), (test.name, ours, theirs["scores"])
        assert ours.passed == (theirs["score"] >= 0.8), test.name
        grades = {g.name: g for g in test.grades(trace)}
        assert sorted(grades) == sorted(s["name"] for s in theirs["scores"]), test.name
        for graded in theirs["scores"]:
            mine = grades[graded["name"]]
            assert mine.score == pytest.approx(graded["score"], abs=1e-9), (test.name, mine, graded)
            assert mine.passed == (graded["verdict"] == "pass"), (test.name, mine, graded)
            assert [a.text for a in mine.assertions] == [a["text"] for a in graded["assertions"]], test.name


def test_the_transcript_holds_one_run_per_question(transcript: Path) -> None:
    runs = _runs(_rows(transcript))
    assert len(runs) == len(RIGHT) + len(WRONG)
    for run in runs:
        assert [r["role"] for r in run] == ["system", "user", "assistant", "assistant", "assistant"]
        calls = [c for r in run for c in r.get("tool_calls", ())]
        assert [(c["tool"], c["input"]) for c in calls] == [
            ("get_weather", {"city": "Paris"}),
            ("get_weather", {"city": "Tokyo"}),
            ("convert_temperature", {"celsius": 18, "to": "fahrenheit"}),
        ]
        assert all(c["status"] == "ok" and c["duration_ms"] >= 0 for c in calls)
        assert run[0]["transcript_token_usage"]["input"] > 0 and run[0]["transcript_duration_ms"] > 0
        assert run[0]["transcript_cost_usd"] > 0  # what the run cost, from the trace's metadata


def test_agentv_passes_the_right_expectations(transcript: Path, tmp_path: Path) -> None:
    runs = _runs(_rows(transcript))[: len(RIGHT)]
    part = _part(tmp_path / "right.jsonl", runs)
    eval_file = _eval_file(tmp_path / "right.EVAL.yaml", RIGHT)
    status, results = _agentv(eval_file, part, tmp_path / "out")
    assert status == 0, results
    assert {t: r["score"] for t, r in results.items()} == {"calls-in-order": 1.0, "exact-and-allowed": 0.8}
    assert _spanfold_check(eval_file, part)[0] == 0
    _same_verdicts(eval_file, part, results)


def test_agentv_fails_each_wrong_expectation(transcript: Path, tmp_path: Path) -> None:
    runs = _runs(_rows(transcript))[len(RIGHT) :]
    part = _part(tmp_path / "wrong.jsonl", runs)
    eval_file = _eval_file(tmp_path / "wrong.EVAL.yaml", WRONG)
    status, results = _agentv(eval_file, part, tmp_path / "out")
    assert status == 1
    assert sorted(results) == sorted(t["id"] for t in WRONG)
    assert all(r["score"] < 0.8 for r in results.values()), {t: r["score"] for t, r in results.items()}
    code, table = _spanfold_check(eval_file, part)
    assert code == 1
    assert table.count(" FAIL ") == len(WRONG) and " PASS " not in table, table
    _same_verdicts(eval_file, part, results)


def test_a_converted_invariant_file_grades_the_same(tmp_path: Path) -> None:
    out = _spanfold_run(tmp_path, "invariant", [f"Run {n}: weather in Paris and Tokyo?" for n in (1, 2)])
    converted = tmp_path / "converted.jsonl"
    assert SPANFOLD is not None
    done = subprocess.run(
        [SPANFOLD, "convert", "--to", "agentv-transcript", str(out / "traces.jsonl"), "-o", str(converted),
         "--test-id", "weather-{n}"],
        env=_clean_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [run[0]["test_id"] for run in _runs(_rows(converted))] == ["weather-1", "weather-2"]
    eval_file = _eval_file(tmp_path / "EVAL.yaml", RIGHT)
    status, results = _agentv(eval_file, converted, tmp_path / "agentv-out")
    assert status == 0
    _same_verdicts(eval_file, converted, results)

"""AgentV as it is today, from the command line: ``format="agentv-transcript"`` and ``spanfold convert --to
agentv-transcript`` write AgentV's transcript rows of real runs (the weather agent and a failing run, real openai SDK,
mock server), spanfold reads them back, the ``agentv`` format carries AgentV's current fields beside the seed
design's, and ``spanfold check`` grades an AgentV eval file. (AgentV's own CLI grading these rows: tests/agentv.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from .conftest import Recorded, record

Cli = Callable[..., Result]


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory, _global_provider: Any) -> Path:
    """The two runs, written by ``format="agentv-transcript"``."""
    directory = tmp_path_factory.mktemp("transcript")
    record(directory, "agentv-transcript")
    return directory / "traces.agentv-transcript.jsonl"


def test_the_writer_writes_one_row_per_message_each_run_under_its_test_id(written: Path) -> None:
    out = rows(written)
    weather = [r for r in out if r["test_id"].startswith("weather-bot-")]
    failing = [r for r in out if r["test_id"].startswith("lookup-bot-")]
    assert len(weather) + len(failing) == len(out) and weather and failing
    assert weather[0]["test_id"] == f"weather-bot-{weather[0]['trace']['trace_id']}"
    assert {r["schema_version"] for r in out} == {"agentv.transcript.v1"}
    assert [r["message_index"] for r in weather] == list(range(len(weather)))
    assert [r["role"] for r in weather] == ["system", "user", "assistant", "assistant", "assistant"]
    first = weather[2]["tool_calls"][0]
    assert (first["tool"], first["input"], first["output"], first["status"]) == (
        "get_weather",
        {"city": "Paris"},
        "Paris: 18°C, sunny",
        "ok",
    )
    assert first["duration_ms"] >= 0 and first["start_time"] < first["end_time"]
    assert weather[2]["token_usage"]["input"] > 0 and weather[2]["duration_ms"] > 0  # the model call's own
    total = weather[0]["transcript_token_usage"]
    assert total == {
        "input": sum(r.get("token_usage", {}).get("input", 0) for r in weather),
        "output": sum(r.get("token_usage", {}).get("output", 0) for r in weather),
    }
    assert all(r["transcript_token_usage"] == total and r["transcript_duration_ms"] > 0 for r in weather)
    cost = weather[0]["transcript_cost_usd"]  # the run's cost (its metadata's cost_usd) on every row
    assert cost > 0 and all(r["transcript_cost_usd"] == cost for r in weather)
    assert (
        weather[0]["source"]["kind"] == "otlp" and weather[0]["source"]["session_id"] == weather[0]["trace"]["trace_id"]
    )
    # the failing run: the tool's error in its call, the refused model call an assistant row holding its error
    assert failing[1]["tool_calls"][0]["status"] == "error"
    assert failing[-1]["role"] == "assistant" and "content" not in failing[-1]
    assert failing[-1]["metadata"]["error"]["type"].endswith("RateLimitError")


def test_spanfold_reads_the_rows_back_as_the_runs(cli: Cli, written: Path, traces: Recorded, tmp_path: Path) -> None:
    shown = cli("summary", written)
    assert shown.exit_code == 0, shown.output
    assert "2 traces (1 failed), 4 tool calls, 2 errors" in shown.output  # the run status kept too
    again = tmp_path / "again.jsonl"
    assert cli("convert", "--to", "agentv-transcript", written, "-o", again).exit_code == 0
    assert again.read_text() == written.read_text()  # rows -> runs -> rows: the same bytes
    from_file = tmp_path / "converted.jsonl"
    assert cli("convert", "--to", "agentv-transcript", traces.invariant, "-o", from_file).exit_code == 0
    strip = ("test_id", "trace", "source", "start_time", "end_time", "duration_ms", "transcript_duration_ms")
    same = [{k: v for k, v in r.items() if k not in strip} for r in rows(written)]
    converted = [{k: v for k, v in r.items() if k not in strip} for r in rows(from_file)]
    for row in [*same, *converted]:
        for call in row.get("tool_calls", ()):
            for key in ("start_time", "end_time", "duration_ms"):
                call.pop(key, None)
        row.get("metadata", {}).pop("span_id", None)
    assert [r["role"] for r in converted] == [r["role"] for r in same]
    assert [r.get("tool_calls") for r in converted] == [r.get("tool_calls") for r in same]


def test_convert_names_the_runs_and_refuses_one_name_for_two(cli: Cli, traces: Recorded, tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    done = cli(
        "convert", "--to", "agentv-transcript", traces.invariant, "--test-id", "case-{n}", "--target", "bot", "-o", out
    )
    assert done.exit_code == 0, done.output
    assert sorted({(r["test_id"], r["target"]) for r in rows(out)}) == [("case-1", "bot"), ("case-2", "bot")]
    out.unlink()
    same = cli("convert", "--to", "agentv-transcript", traces.invariant, "--test-id", "case", "-o", out)
    assert same.exit_code == 2 and not out.exists()
    assert "traces.jsonl:2: test id 'case' already names the run at" in same.output
    usage = cli("convert", "--to", "agentv", traces.invariant, "--test-id", "x")
    assert usage.exit_code == 2 and "--test-id and --target name transcript runs" in usage.output
    assert cli("convert", "--to", "agentv-transcript", traces.invariant, "--yaml").exit_code == 2


def test_the_cost_in_the_metadata_is_written_where_agentv_reads_it(cli: Cli, traces: Recorded, tmp_path: Path) -> None:
    meta = [json.loads(line) for line in traces.meta.read_text().splitlines()]
    meta[0]["metadata"]["costUsd"] = 0.00125
    traces.meta.write_text("".join(json.dumps(m) + "\n" for m in meta))
    out = tmp_path / "t.jsonl"
    assert cli("convert", "--to", "agentv-transcript", traces.invariant, "-o", out).exit_code == 0
    costs = {r["test_id"].split("-")[0]: r.get("transcript_cost_usd") for r in rows(out)}
    assert costs == {"weather": 0.00125, "lookup": meta[1]["metadata"]["cost_usd"]}  # costUsd is read first
    doc = json.loads(cli("convert", "--to", "agentv", traces.invariant, "--trace", "1").output)
    assert doc["costUsd"] == 0.00125


def test_the_agentv_format_adds_agentvs_current_names(cli: Cli, traces: Recorded) -> None:
    done = cli("convert", "--to", "agentv", traces.invariant)
    weather, failing = (json.loads(line) for line in done.output.splitlines())
    summary = weather["trace_summary"]
    assert summary["eventCount"] == len(weather["trace"])  # the seed design's: every event
    assert summary["toolCallsByName"] == summary["toolCalls"] == {"get_weather": 2, "convert_temperature": 1}
    assert summary["llmCallCount"] == 3
    assert sorted(summary["toolDurations"]) == ["convert_temperature", "get_weather"]
    assert len(summary["toolDurations"]["get_weather"]) == 2
    meta = weather["metadata"]
    assert weather["tokenUsage"] == {"input": meta["usage"]["input_tokens"], "output": meta["usage"]["output_tokens"]}
    assert (weather["durationMs"], weather["startTime"], weather["endTime"]) == (
        meta["duration_ms"],
        meta["start"],
        meta["end"],
    )
    assert weather["costUsd"] == meta["cost_usd"]
    assert failing["trace_summary"]["llmCallCount"] == 2  # the refused call counts, as AgentV counts it
    only = json.loads(cli("convert", "--to", "agentv", traces.invariant, "--summary-only", "--trace", "1").output)
    assert "trace" not in only and only["tokenUsage"] == weather["tokenUsage"]


EVAL = """\
description: the two recorded runs
tests:
  - id: weather
    input: What's the weather?
    assertions:
      - type: tool-trajectory
        mode: in_order
        expected:
          - {tool: get_weather, args: {city: Paris}}
          - {tool: convert_temperature, args_match: ignore}
      - {type: execution-metrics, max_llm_calls: 3}
  - id: lookup
    input: Where is Atlantis?
    assertions:
      - {type: execution-metrics, max_llm_calls: 1}
"""


def test_check_grades_an_eval_file_test_by_test(cli: Cli, written: Path, tmp_path: Path) -> None:
    spec = tmp_path / "EVAL.yaml"
    spec.write_text(EVAL)
    done = cli("check", written, "--spec", spec, "-v")
    assert done.exit_code == 1, done.output
    lines = done.output.splitlines()
    assert any(" weather " in line and "1.00  PASS" in line for line in lines), done.output
    assert any(" lookup " in line and "0.00  FAIL" in line and "LLM calls 2 > 1 max" in line for line in lines)
    assert "1 passed, 1 failed (2 checks x 2 traces)" in done.output
    one = tmp_path / "one.jsonl"
    one.write_text("".join(json.dumps(r) + "\n" for r in rows(written) if r["test_id"].startswith("weather")))
    short = cli("check", one, "--spec", spec)
    assert short.exit_code == 2
    assert "the eval file has 2 tests and the inputs 1 traces" in short.output

"""validate, convert, summary and show on real traces (the instrumented openai SDK, written by spanfold's writers)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result

from .conftest import Recorded

Cli = Callable[..., Result]


def jsonl(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def without_times(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "timestamp"} for e in events]


@pytest.mark.parametrize("command", ["validate", "convert", "summary", "show", "check", "demo", "fold"])
def test_help_everywhere(cli: Cli, command: str) -> None:
    result = cli(command, "--help")
    assert result.exit_code == 0 and "Usage: main " + command in result.output
    assert cli("--help").output.count(command) >= 1


def test_validate_real_traces(cli: Cli, traces: Recorded) -> None:
    result = cli("validate", traces.invariant, traces.meta, traces.agentv)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "4 traces valid (and 2 metadata records)\n", "")


def test_validate_reports_every_problem_with_file_line_and_path(cli: Cli, traces: Recorded, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    good, failing = traces.invariant.read_text().splitlines()
    events = json.loads(failing)
    events[1]["tool_calls"][0]["function"]["name"] = 7
    events[2]["content"] = {"oops": True}
    bad.write_text(f"{good}\n{json.dumps(events)}\n")
    result = cli("validate", bad)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"{bad}:2: $[1].tool_calls[0].function.name: 7 is not of type 'string'",
        f"{bad}:2: $[2].content: {{'oops': True}} is not of type 'string', 'array', 'null'",
    ]
    assert result.stdout == "1 trace invalid, 1 trace valid\n"


def test_convert_to_agentv_and_back_is_lossless(cli: Cli, traces: Recorded, tmp_path: Path) -> None:
    out = tmp_path / "out.agentv.jsonl"
    assert cli("convert", "--to", "agentv", traces.invariant, "-o", out).exit_code == 0
    docs = jsonl(out)
    metas = jsonl(traces.meta)
    assert [d["metadata"] for d in docs] == [m["metadata"] for m in metas]  # the sibling's metadata came along
    seed = [{k: d["trace_summary"][k] for k in m["summary"]} for d, m in zip(docs, metas, strict=True)]
    assert seed == [m["summary"] for m in metas]  # the design's summary; AgentV 4.42's names ride beside it
    assert cli("validate", out).exit_code == 0
    back = tmp_path / "back.jsonl"
    assert cli("convert", "--to", "invariant", out, "-o", back).exit_code == 0
    assert jsonl(back) == jsonl(traces.invariant)  # no timestamps were invented on the way
    assert jsonl(back.with_name("back.meta.jsonl")) == metas


def test_agentv_files_convert_to_invariant_with_their_timestamps(cli: Cli, traces: Recorded, tmp_path: Path) -> None:
    out = tmp_path / "inv.jsonl"
    assert cli("convert", "--to", "invariant", traces.agentv, "-o", out).exit_code == 0
    converted = jsonl(out)
    assert [without_times(t) for t in converted] == jsonl(traces.invariant)
    assert all("timestamp" in e for t in converted for e in t)
    assert [m["metadata"]["trace_id"] for m in jsonl(tmp_path / "inv.meta.jsonl")] == [
        d["metadata"]["trace_id"] for d in jsonl(traces.agentv)
    ]
    objects = tmp_path / "objects.jsonl"
    assert cli("convert", "--to", "invariant", "--style", "object", traces.agentv, "-o", objects).exit_code == 0
    assert [o["messages"] for o in jsonl(objects)] == converted
    assert not (tmp_path / "objects.meta.jsonl").exists()  # the objects carry their metadata


def test_summary_only(cli: Cli, traces: Recorded, tmp_path: Path) -> None:
    out = tmp_path / "summaries.jsonl"
    assert cli("convert", "--to", "agentv", "--summary-only", traces.agentv, "-o", out).exit_code == 0
    records = jsonl(out)
    agentv_fields = {"tokenUsage", "costUsd", "durationMs", "startTime", "endTime"}  # AgentV 4.42's, no content
    assert [set(r) for r in records] == [{"trace_summary", "metadata", *agentv_fields}] * 2
    assert [r["trace_summary"] for r in records] == [d["trace_summary"] for d in jsonl(traces.agentv)]
    assert "Paris" not in out.read_text()  # no content
    table = cli("summary", out)
    assert table.exit_code == 0 and "get_weather x2" in table.stdout
    usage = cli("convert", "--to", "compact", "--summary-only", traces.agentv)
    assert usage.exit_code == 2 and "--summary-only writes AgentV trace summaries" in usage.stderr


def test_compact_yaml_is_a_spec_the_check_command_passes(cli: Cli, traces: Recorded, tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    assert cli("convert", "--to", "compact", traces.agentv, "--trace", "1", "-o", spec).exit_code == 0
    messages = yaml.safe_load(spec.read_text(encoding="utf-8"))
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "assistant", "assistant"]
    call = messages[2]["tool_calls"][0]
    assert (call["tool"], call["input"], call["output"], call["id"]) == (
        "get_weather",
        {"city": "Paris"},
        "Paris: 18°C, sunny",
        "call_mock_1",
    )
    assert call["duration_ms"] >= 0 and call["start_time"] <= call["end_time"]
    checked = cli("check", traces.invariant, "--spec", spec, "--trace", "1")
    assert checked.exit_code == 0, checked.output
    other = cli("check", traces.invariant, "--spec", spec, "--trace", "2")
    assert other.exit_code == 1


def test_compact_json_and_yaml_streams(cli: Cli, traces: Recorded, tmp_path: Path) -> None:
    as_json = cli("convert", "--to", "compact", traces.invariant)
    assert as_json.exit_code == 0
    lines = [json.loads(x) for x in as_json.stdout.splitlines()]
    as_yaml = cli("convert", "--to", "compact", "--yaml", traces.invariant)
    assert list(yaml.safe_load_all(as_yaml.stdout)) == lines
    failing = lines[1]
    assert failing[1]["tool_calls"][0]["output"] == "unknown city Atlantis"
    assert failing[2] == {"role": "error", "content": "openai.RateLimitError: Error code: 429 - Rate limit reached"}


def test_agentv_cli_json(cli: Cli, traces: Recorded) -> None:
    result = cli("convert", "--to", "agentv-cli", traces.invariant, "--trace", "1")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    meta = jsonl(traces.meta)[0]["metadata"]
    assert doc["text"].startswith("Here is the weather: Paris")
    assert doc["token_usage"] == {"input": meta["usage"]["input_tokens"], "output": meta["usage"]["output_tokens"]}
    assert doc["duration_ms"] == meta["duration_ms"]
    assert [m["role"] for m in doc["output"]] == ["system", "user", "assistant", "assistant", "assistant"]


def test_summary_table_and_json(cli: Cli, traces: Recorded) -> None:
    metas = [m["metadata"] for m in jsonl(traces.meta)]
    table = cli("summary", traces.invariant)
    assert table.exit_code == 0
    head, first, second, ending, total = table.stdout.splitlines()
    assert head.split() == ["TRACE", "ID", "EVENTS", "CALLS", "ERRORS", "TOKENS", "IN/OUT", "DURATION", "COST", "TOOLS"]
    cells = first.split()
    assert cells[0].endswith("traces.jsonl:1")
    usage = metas[0]["usage"]
    assert cells[1:6] == [metas[0]["trace_id"][:16], "9", "3", "0", f"{usage['input_tokens']}/{usage['output_tokens']}"]
    assert first.endswith("convert_temperature x1, get_weather x2")
    assert second.split()[2:5] == ["4", "1", "2"] and second.endswith("lookup_city x1")
    assert ending == "  status: error (openai.RateLimitError)"  # the 429 ended the second run (the first: normally)
    tokens_in = sum(m["usage"]["input_tokens"] for m in metas)
    assert total.startswith(f"2 traces (1 failed), 4 tool calls, 2 errors, {tokens_in} in / ")
    rows = [json.loads(x) for x in cli("summary", "--json", traces.invariant, traces.agentv).stdout.splitlines()]
    assert [(r["line"], r["trace_summary"]["errorCount"]) for r in rows] == [(1, 0), (2, 2), (1, 0), (2, 2)]
    assert rows[0]["trace_id"] == metas[0]["trace_id"] and rows[0]["usage"] == metas[0]["usage"]


def test_show_real_traces_plain_when_piped(cli: Cli, traces: Recorded) -> None:
    metas = [m["metadata"] for m in jsonl(traces.meta)]
    result = cli("show", traces.agentv)
    assert result.exit_code == 0
    out = result.stdout
    assert "\x1b[" not in out
    assert f"trace {jsonl(traces.agentv)[0]['metadata']['trace_id']} (weather-bot)" in out
    assert 'assistant  -> get_weather({"city": "Paris"})  [call_mock_1]' in out
    assert '-> get_weather({"city": "Tokyo"})  [call_mock_2]' in out
    assert "<- get_weather [call_mock_1]: Paris: 18°C, sunny  (" in out  # with the tool's time
    assert re.search(r"\(gpt-4o-mini, \d+ in / \d+ out tokens, \$[\d.]+, [\d.]+ ms\)", out)  # tokens, cost, time
    assert "<- lookup_city [call_mock_4]: !! LookupError: unknown city Atlantis" in out
    assert "error      openai.RateLimitError: Error code: 429 - Rate limit reached" in out
    invariant = cli("show", traces.invariant, "--trace", "2").stdout
    assert invariant.splitlines()[1] == f"trace {metas[1]['trace_id']} (lookup-bot)"
    assert "16 in / 8 out tokens" in invariant.splitlines()[2]  # totals from traces.meta.jsonl
    assert "error: openai.RateLimitError" in invariant.splitlines()[2]  # how the run ended
    # each model call's model, tokens and time, from the steps in traces.meta.jsonl (the event lines have none)
    assert re.search(r"\(gpt-4o-mini, \d+ in / \d+ out tokens, \$[\d.]+, [\d.]+ ms\)", invariant)


def test_show_picks_traces(cli: Cli, traces: Recorded) -> None:
    metas = [m["metadata"] for m in jsonl(traces.meta)]
    last = cli("show", traces.invariant, "--trace", "-1")
    assert last.exit_code == 0 and f"{traces.invariant}:2" in last.stdout and ":1\n" not in last.stdout
    by_id = cli("show", traces.invariant, "--trace", metas[0]["trace_id"][:8])
    assert by_id.exit_code == 0 and "(weather-bot)" in by_id.stdout and "lookup-bot" not in by_id.stdout
    missing = cli("show", traces.invariant, "--trace", "3")
    assert missing.exit_code == 2
    assert missing.stderr == f"{traces.invariant}: --trace 3: no such trace (the file holds 2)\n"
    assert cli("show", traces.invariant, "--trace", "0").exit_code == 2


def test_an_id_prefix_of_digits_is_an_id_not_a_number(cli: Cli, traces: Recorded, tmp_path: Path) -> None:
    digits = "1234567890" * 3 + "12"  # trace ids are hex: one in forty starts with eight digits
    records = jsonl(traces.agentv)
    records[1]["metadata"]["trace_id"] = digits
    renamed = tmp_path / "digits.agentv.jsonl"
    renamed.write_text("".join(json.dumps(r) + "\n" for r in records))
    picked = cli("show", renamed, "--trace", digits[:8])
    assert picked.exit_code == 0 and f"trace {digits} (lookup-bot)" in picked.stdout, picked.output
    assert "weather-bot" not in picked.stdout
    assert cli("show", renamed, "--trace", "1234567").exit_code == 2  # seven digits or fewer: a trace number


def test_show_colour_forced(cli: Cli, traces: Recorded) -> None:
    assert "\x1b[" in cli("show", traces.invariant, "--color").stdout


def test_the_console_script_in_a_real_process(traces: Recorded, tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("spanfold")
    env = {**os.environ, "NO_COLOR": "1"}
    shown = subprocess.run([script, "show", traces.agentv, "--trace", "1"], capture_output=True, text=True, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "\x1b[" not in shown.stdout  # piped: plain
    assert '-> convert_temperature({"celsius": 18, "to": "fahrenheit"})  [call_mock_3]' in shown.stdout
    valid = subprocess.run([script, "validate", traces.invariant], capture_output=True, text=True, env=env)
    assert (valid.returncode, valid.stdout) == (0, "2 traces valid\n")
    (tmp_path / "x").mkdir()
    bad = tmp_path / "x" / "bad.jsonl"
    bad.write_bytes(b'[{"role": "user", "content": "hi"}]\n[{"role": \n')
    out = tmp_path / "x" / "out.jsonl"
    converted = subprocess.run([script, "convert", "--to", "agentv", bad, "-o", out], capture_output=True, text=True)
    assert converted.returncode == 2
    assert converted.stderr == f"{bad}:2: not valid JSON: Expecting value (column 11)\n"
    assert not out.exists() and list(bad.parent.iterdir()) == [bad]


def test_show_and_summary_read_compact_yaml_and_summary_records(cli: Cli, traces: Recorded, tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    assert cli("convert", "--to", "compact", traces.agentv, "-o", spec).exit_code == 0
    shown = cli("show", spec, "--trace", "2")
    assert shown.exit_code == 0
    assert shown.stdout.startswith(f"{spec}:") and "(lookup-bot)" not in shown.stdout  # compact has no metadata
    assert "<- lookup_city [call_mock_4]: unknown city Atlantis" in shown.stdout
    summaries = tmp_path / "s.jsonl"
    assert cli("convert", "--to", "agentv", "--summary-only", traces.agentv, "-o", summaries).exit_code == 0
    only = cli("show", summaries, "--trace", "1")
    assert only.exit_code == 0 and "9 events, 3 tool calls, 0 errors" in only.stdout
    events = cli("convert", "--to", "invariant", summaries)
    assert events.exit_code == 2
    assert (
        events.stderr.splitlines()[0]
        == f"{summaries}:1: holds a trace summary but no events (use --to agentv --summary-only)"
    )


def test_show_cuts_long_contents_unless_full(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps([{"role": "tool", "content": "w" * 5000}]) + "\n")
    cut = cli("show", path).stdout
    assert "w" * 2000 + "... (3000 more characters)" in cut and "w" * 2001 not in cut
    assert "w" * 5000 in cli("show", path, "--full").stdout
    assert "w" * 10 + "... (4990 more characters)" in cli("show", path, "--max-chars", "10").stdout

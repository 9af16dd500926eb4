"""Every command that reads traces opens an OTLP JSON span file the same way: folded on read, as ``spanfold fold``
folds it (a Collector file exporter's JSON lines here, the weather agent's real spans spread over two lines). Bad
input: ``FILE:LINE: problem``, exit 2, no traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from opentelemetry.sdk.trace import ReadableSpan

from spanfold.cli import main

from .conftest import WEATHER_ROLES, collector_lines, folded_in_process

SPEC = """
checks:
  - name: order
    type: tool_trajectory
    mode: in_order
    expected: [get_weather, get_weather, convert_temperature]
"""


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def spans_file(tmp_path: Path, weather_spans: list[ReadableSpan]) -> Path:
    path = tmp_path / "spans.jsonl"
    path.write_text(collector_lines(weather_spans[:3], weather_spans[3:]), encoding="utf-8")
    return path


@pytest.fixture
def bad_file(tmp_path: Path, weather_spans: list[ReadableSpan]) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text(collector_lines(weather_spans[:3]) + '{"resourceSpans": [\n', encoding="utf-8")
    return path


def test_show(spans_file: Path, weather_spans: list[ReadableSpan]) -> None:
    result = run("show", spans_file, "--no-color")
    assert result.exit_code == 0, result.output
    assert f"{spans_file}:1" in result.output
    assert "get_weather" in result.output and "convert_temperature" in result.output
    assert "Tokyo: 24°C, cloudy" in result.output


def test_summary(spans_file: Path) -> None:
    result = run("summary", spans_file, "--json")
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert row["trace_summary"]["toolCallsByName"] == {"get_weather": 2, "convert_temperature": 1}, row
    assert row["line"] == 1 and row["trace_id"] and row["usage"]["input_tokens"] > 0


def test_convert(tmp_path: Path, spans_file: Path, weather_spans: list[ReadableSpan]) -> None:
    out = tmp_path / "out.jsonl"
    result = run("convert", "--to", "invariant", spans_file, "-o", out)
    assert result.exit_code == 0, result.output
    (line,) = out.read_text(encoding="utf-8").splitlines()
    events = [{k: v for k, v in e.items() if k != "timestamp"} for e in json.loads(line)]
    assert events == folded_in_process(weather_spans)
    meta = json.loads((tmp_path / "out.meta.jsonl").read_text(encoding="utf-8"))["metadata"]
    assert meta["trace_id"] == format(weather_spans[0].context.trace_id, "032x")


def test_validate(spans_file: Path) -> None:
    result = run("validate", spans_file)
    assert result.exit_code == 0, result.output
    assert "1 trace valid" in result.output


def test_check(tmp_path: Path, spans_file: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    result = run("check", spans_file, "--spec", spec)
    assert result.exit_code == 0, result.output
    assert "order" in result.output


def test_a_directory_with_an_otlp_json_file(tmp_path: Path, weather_spans: list[ReadableSpan]) -> None:
    directory = tmp_path / "traces"
    directory.mkdir()
    (directory / "traces.otlp.jsonl").write_text(collector_lines(weather_spans), encoding="utf-8")
    result = run("show", directory, "--no-color")
    assert result.exit_code == 0, result.output
    assert [r for r in WEATHER_ROLES if r == "tool"] and result.output.count("get_weather") >= 2


@pytest.mark.parametrize("command", ["show", "summary", "convert", "validate", "check"])
def test_bad_span_file_names_file_and_line(tmp_path: Path, bad_file: Path, command: str) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    args: list[Any] = {
        "show": ["show", bad_file],
        "summary": ["summary", bad_file],
        "convert": ["convert", "--to", "agentv", bad_file, "-o", tmp_path / "out.jsonl"],
        "validate": ["validate", bad_file],
        "check": ["check", bad_file, "--spec", spec],
    }[command]
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"{bad_file}:2: bad JSON" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out.jsonl").exists()

"""``spanfold fold`` on span files real producers can write: a time out of range, the same spans in both id
encodings. Through the real command line, on real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from ..bridge.conftest import WEATHER_ROLES, otlp_json, run_weather_agent


@pytest.fixture
def weather_spans(_global_provider: Any, global_spans: Any) -> list[ReadableSpan]:
    run_weather_agent(_global_provider)
    return list(global_spans.get_finished_spans())


def spanfold_fold(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-m", "spanfold", "fold", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_a_time_out_of_range_is_named_with_its_line_and_nothing_is_written(
    tmp_path: Path, weather_spans: list[ReadableSpan]
) -> None:
    good = json.dumps(otlp_json(weather_spans[:3]))
    doc = otlp_json(weather_spans[3:])
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["startTimeUnixNano"] = str(10**30)
    spans = tmp_path / "spans.jsonl"
    spans.write_text(good + "\n" + json.dumps(doc) + "\n")
    out = tmp_path / "out"
    done = spanfold_fold(str(spans), "-o", str(out))
    assert "Traceback" not in done.stderr
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"{spans}:2: resourceSpans[0].scopeSpans[0].spans[0]: startTimeUnixNano {10**30}")
    assert "out of range" in line
    assert not out.exists()  # bad input: nothing half-written (the command's rule)


@pytest.mark.parametrize("agent", ["bridge-bot", None], ids=["agent", "zero-code"])
def test_the_same_spans_in_two_files_hex_and_base64_ids_fold_once(
    tmp_path: Path, _global_provider: Any, global_spans: Any, agent: str | None
) -> None:
    """A Collector's file exporter (hex ids) and a protobuf-JSON dump (base64 ids) of the same export, or a client's
    retried export: each span counts once, the traces are those of one file alone."""
    run_weather_agent(_global_provider, agent=agent)
    spans = list(global_spans.get_finished_spans())
    hex_file, b64_file = tmp_path / "hex.json", tmp_path / "b64.json"
    hex_file.write_text(json.dumps(otlp_json(spans)))
    b64_file.write_text(json.dumps(otlp_json(spans, hex_ids=False)))
    alone, both = tmp_path / "alone", tmp_path / "both"
    assert spanfold_fold(str(hex_file), "-o", str(alone)).returncode == 0
    done = spanfold_fold(str(hex_file), str(b64_file), "-o", str(both))
    assert done.returncode == 0, done.stderr
    (trace,) = (both / "traces.jsonl").read_text().splitlines()
    assert trace == (alone / "traces.jsonl").read_text().strip()
    assert [e["role"] for e in json.loads(trace)] == WEATHER_ROLES

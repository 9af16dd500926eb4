"""``spanfold fold``: real spans, encoded by the SDK's OTLP encoder as the Collector's file exporter writes them (or
as one OTLP/JSON request), spread over files and processes, fold to exactly what the in-process processor folds."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan

from spanfold import config
from spanfold.cli import main
from spanfold.exporter.pipeline import span_files as spanfiles

from .conftest import (
    WEATHER_ROLES,
    collector_lines,
    folded_in_process,
    otlp_json,
    run_weather_agent,
)


def fold(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner(env=env).invoke(main, ["fold", *args], catch_exceptions=False)


def lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def in_process(span: ReadableSpan, service: str) -> ReadableSpan:
    """The same span as another process (another resource) would export it."""
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=Resource.create({"service.name": service}),
        attributes=span.attributes,
        events=span.events,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def test_one_trace_spread_over_files_and_processes(tmp_path: Path, weather_spans: list[ReadableSpan]) -> None:
    models = [in_process(s, "agent") for s in weather_spans if not s.name.startswith("execute_tool")]
    tools = [in_process(s, "tool-worker") for s in weather_spans if s.name.startswith("execute_tool")]
    (tmp_path / "a.jsonl").write_text(collector_lines(models[:2], models[2:]))
    (tmp_path / "b.jsonl").write_text(collector_lines(tools))
    result = fold(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert "folded 7 spans from 2 file(s) into 1 trace(s)" in result.output
    (events,) = lines(tmp_path / "out" / "traces.jsonl")
    assert [e["role"] for e in events] == WEATHER_ROLES
    assert events == folded_in_process(weather_spans)
    (meta,) = [m["metadata"] for m in lines(tmp_path / "out" / "traces.meta.jsonl")]
    assert meta["trace_id"] == format(weather_spans[0].context.trace_id, "032x")
    assert meta["span_count"] == 7 and meta["status"] == "complete"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["traces.jsonl", "traces.meta.jsonl"]


def test_interleaved_traces_are_kept_apart(tmp_path: Path, _global_provider: Any, global_spans: Any) -> None:
    run_weather_agent(_global_provider, "first")
    first = list(global_spans.get_finished_spans())
    global_spans.clear()
    run_weather_agent(_global_provider, "second")
    second = list(global_spans.get_finished_spans())
    mixed = [span for pair in zip(first, second, strict=True) for span in pair]
    (tmp_path / "spans.jsonl").write_text(collector_lines(*[mixed[i : i + 3] for i in range(0, len(mixed), 3)]))
    result = fold(str(tmp_path / "spans.jsonl"), "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    traces = lines(tmp_path / "out" / "traces.jsonl")
    expected = [folded_in_process(first), folded_in_process(second)]
    assert sorted(map(json.dumps, traces)) == sorted(map(json.dumps, expected))
    assert {m["metadata"]["name"] for m in lines(tmp_path / "out" / "traces.meta.jsonl")} == {"first", "second"}


def test_pretty_request_with_base64_ids_and_gzip(tmp_path: Path, weather_spans: list[ReadableSpan]) -> None:
    pretty = json.dumps(otlp_json(weather_spans, hex_ids=False), indent=2)  # protobuf JSON mapping: base64, enum names
    assert '"SPAN_KIND_CLIENT"' in pretty
    (tmp_path / "request.json").write_text(pretty)
    with gzip.open(tmp_path / "lines.jsonl.gz", "wt") as fh:
        fh.write(collector_lines(weather_spans))
    for name in ("request.json", "lines.jsonl.gz"):
        out = tmp_path / f"out-{name}"
        result = fold(str(tmp_path / name), "-o", str(out), "--format", "agentv")
        assert result.exit_code == 0, result.output
        (doc,) = lines(out / "traces.agentv.jsonl")
        assert [e["type"] for e in doc["trace"]].count("tool_result") == 3
        assert doc["trace_summary"]["toolNames"] == ["convert_temperature", "get_weather"]


def test_unparented_calls_are_stitched(tmp_path: Path, _global_provider: Any, global_spans: Any) -> None:
    run_weather_agent(_global_provider, agent=None)  # zero-code: every call and tool run its own trace
    spans = list(global_spans.get_finished_spans())
    assert len({s.context.trace_id for s in spans}) == 6
    (tmp_path / "spans.jsonl").write_text(collector_lines(*[[s] for s in spans]))
    result = fold(str(tmp_path / "spans.jsonl"), "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    (events,) = lines(tmp_path / "out" / "traces.jsonl")
    assert [e["role"] for e in events] == WEATHER_ROLES
    (meta,) = [m["metadata"] for m in lines(tmp_path / "out" / "traces.meta.jsonl")]
    assert len(meta["otel_trace_ids"]) == 6
    result = fold(str(tmp_path / "spans.jsonl"), "-o", str(tmp_path / "apart"), "--no-stitch")
    assert len(lines(tmp_path / "apart" / "traces.jsonl")) == 6  # each call and each tool run on its own


def test_a_run_stitched_at_the_source_folds_as_one(tmp_path: Path, _global_provider: Any, global_spans: Any) -> None:
    """spanfold's own zero-code spans: one trace id, each call a local root; one span per request line."""
    run_weather_agent(_global_provider, agent=None, source_stitch=True)
    spans = list(global_spans.get_finished_spans())
    assert len({s.context.trace_id for s in spans}) == 1
    (tmp_path / "spans.jsonl").write_text(collector_lines(*[[s] for s in spans]))
    result = fold(str(tmp_path / "spans.jsonl"), "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    (events,) = lines(tmp_path / "out" / "traces.jsonl")
    assert [e["role"] for e in events] == WEATHER_ROLES


def test_calls_of_two_processes_are_never_stitched_together(
    tmp_path: Path, _global_provider: Any, global_spans: Any
) -> None:
    """Two copies of one zero-code agent (same prompts, same call ids from their own mock servers), interleaved in
    one span file: each process's calls make its own conversation."""
    runs = []
    for service in ("worker-a", "worker-b"):
        global_spans.clear()
        run_weather_agent(_global_provider, agent=None)
        runs.append([in_process(s, service) for s in global_spans.get_finished_spans()])
    interleaved = [[span] for pair in zip(*runs, strict=True) for span in pair]
    (tmp_path / "spans.jsonl").write_text(collector_lines(*interleaved))
    result = fold(str(tmp_path / "spans.jsonl"), "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    traces = lines(tmp_path / "out" / "traces.jsonl")
    metas = [m["metadata"] for m in lines(tmp_path / "out" / "traces.meta.jsonl")]
    assert [[e["role"] for e in t] for t in traces] == [WEATHER_ROLES, WEATHER_ROLES]
    assert sorted(m["service"] for m in metas) == ["worker-a", "worker-b"]
    assert [len(m["otel_trace_ids"]) for m in metas] == [6, 6]


def _bad_inputs(spans: list[ReadableSpan]) -> dict[str, tuple[str, str]]:
    good = collector_lines(spans)
    zero = otlp_json(spans)
    zero["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["traceId"] = "0" * 32
    short = otlp_json(spans)
    short["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"] = "abcd"
    return {
        "truncated line": (good + good[:50] + "\n", ":2: bad JSON"),
        "zero trace id": (good + json.dumps(zero) + "\n", ":2: resourceSpans[0].scopeSpans[0].spans[1]: traceId is"),
        "short span id": (
            json.dumps(short) + "\n",
            ":1: resourceSpans[0].scopeSpans[0].spans[0]: spanId must be 8 bytes",
        ),
        "metrics": ('{"resourceMetrics": []}\n', ":1: not an OTLP trace export request: no resourceSpans (it has"),
        "a trace file": ('[{"role": "user", "content": "hi"}]\n', ":1: not an OTLP trace export request"),
        "pretty, broken": ('{\n  "resourceSpans": [\n    {,\n', ":3: bad JSON"),
    }


def test_bad_input_names_file_and_line_and_leaves_output_alone(
    tmp_path: Path, weather_spans: list[ReadableSpan]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "traces.jsonl").write_text("earlier\n")
    (tmp_path / "good.jsonl").write_text(collector_lines(weather_spans))
    for label, (content, expected) in _bad_inputs(weather_spans).items():
        bad = tmp_path / "bad.jsonl"
        bad.write_text(content)
        result = fold(str(tmp_path / "good.jsonl"), str(bad), "-o", str(out))
        assert result.exit_code == 2, label
        assert result.output.startswith(f"{bad}{expected}"), (label, result.output)
        assert "Traceback" not in result.output
        assert sorted(p.name for p in out.iterdir()) == ["traces.jsonl"], label
        assert (out / "traces.jsonl").read_text() == "earlier\n"
    result = fold(str(tmp_path / "missing.jsonl"), "-o", str(out))
    assert result.exit_code == 2 and result.output.startswith(f"{tmp_path / 'missing.jsonl'}: cannot read")
    (tmp_path / "a-file").write_text("")
    result = fold(str(tmp_path / "good.jsonl"), "-o", str(tmp_path / "a-file" / "out"))
    assert result.exit_code == 2 and result.output.startswith(f"{tmp_path / 'a-file' / 'out'}: cannot write")


def test_fold_holds_everything_whatever_the_environment(tmp_path: Path, weather_spans: list[ReadableSpan]) -> None:
    """The SPANFOLD_* variables of the in-process tracer (limits, format, disabled) never change what fold writes."""
    assert spanfiles.UNBOUNDED.keys() == {name for name in config.OPTIONS if name.startswith("max_")}
    assert set(spanfiles.UNBOUNDED.values()) == {sys.maxsize}
    (tmp_path / "spans.jsonl").write_text(collector_lines(weather_spans))
    env = {
        "SPANFOLD_MAX_ATTRIBUTE_BYTES_PER_TRACE": "100",
        "SPANFOLD_MAX_SPANS_PER_TRACE": "1",
        "SPANFOLD_MAX_TRACES_IN_FLIGHT": "1",
        "SPANFOLD_TRACE_TIMEOUT": "abc",  # not even read
        "SPANFOLD_FORMAT": "agentv",
        "SPANFOLD_DISABLED": "true",
        "SPANFOLD_FILE_PER_TRACE": "true",
    }
    result = fold(str(tmp_path / "spans.jsonl"), "-o", str(tmp_path / "out"), env=env)
    assert result.exit_code == 0, result.output
    (events,) = lines(tmp_path / "out" / "traces.jsonl")
    assert events == folded_in_process(weather_spans)
    (meta,) = [m["metadata"] for m in lines(tmp_path / "out" / "traces.meta.jsonl")]
    assert meta["status"] == "complete" and meta["span_count"] == 7
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["traces.jsonl", "traces.meta.jsonl"]


def test_fold_appends_to_the_traces_already_there(tmp_path: Path, weather_spans: list[ReadableSpan]) -> None:
    (tmp_path / "spans.jsonl").write_text(collector_lines(weather_spans))
    out = tmp_path / "out"
    assert fold(str(tmp_path / "spans.jsonl"), "-o", str(out)).exit_code == 0
    result = fold(str(tmp_path / "spans.jsonl"), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "into 1 trace(s)" in result.output
    assert lines(out / "traces.jsonl") == [folded_in_process(weather_spans)] * 2  # the first run's trace is kept
    metas = [m["metadata"] for m in lines(out / "traces.meta.jsonl")]
    assert [m["span_count"] for m in metas] == [7, 7]
    assert oct((out / "traces.jsonl").stat().st_mode & 0o777) == oct(0o600)


def test_bad_input_creates_no_output_directory(tmp_path: Path, weather_spans: list[ReadableSpan]) -> None:
    good = collector_lines(weather_spans).encode()
    corrupt = bytearray(gzip.compress(good * 20))
    corrupt[20:40] = bytes(20)  # deflate data broken, header intact
    cases = {
        "empty.jsonl": (b"", ": no spans in this file"),
        "blank.jsonl": (b"\n\n", ": no spans in this file"),
        "corrupt.jsonl.gz": (bytes(corrupt), ":1: cannot read: Error -3 while decompressing data"),
        "cut.jsonl.gz": (gzip.compress(good * 20)[:-30], ":20: cannot read: Compressed file ended"),  # the last line
        "deep.jsonl": (b"[" * 5000 + b"]" * 5000 + b"\n", ":1: bad JSON: nested too deeply"),
        "deep-second.jsonl": (good + b'{"resourceSpans": ' + b"[" * 5000 + b"]" * 5000 + b"}\n", ":2: bad JSON"),
    }
    for name, (content, expected) in cases.items():
        (tmp_path / name).write_bytes(content)
        result = fold(str(tmp_path / name), "-o", str(tmp_path / "new" / "out"))
        assert result.exit_code == 2, (name, result.output)
        assert result.output.startswith(f"{tmp_path / name}{expected}"), (name, result.output)
        assert len(result.output.splitlines()) == 1 and "Traceback" not in result.output, name
        assert not (tmp_path / "new").exists(), name


def test_an_unwritable_trace_file_is_named(tmp_path: Path, weather_spans: list[ReadableSpan]) -> None:
    (tmp_path / "spans.jsonl").write_text(collector_lines(weather_spans))
    (tmp_path / "out" / "traces.meta.jsonl").mkdir(parents=True)
    result = fold(str(tmp_path / "spans.jsonl"), "-o", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert result.output.splitlines() == [f"{tmp_path / 'out' / 'traces.meta.jsonl'}: cannot write: Is a directory"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["traces.jsonl", "traces.meta.jsonl"]
    assert (tmp_path / "out" / "traces.jsonl").read_text() == ""

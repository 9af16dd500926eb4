"""``format="otlp-json"``: each trace's spans as one OTLP/JSON line, the Collector file exporter's layout. The line
parses into an ``ExportTraceServiceRequest`` (opentelemetry-proto's ``json_format``) equal to what the SDK's own OTLP
encoder makes of the same spans, and ``spanfold fold`` folds it back to the trace the Invariant writer wrote."""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from google.protobuf.json_format import MessageToDict, Parse
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan

from spanfold import config
from spanfold.cli import main
from spanfold.exporter.files.writers import JsonFileWriter, JsonlWriter
from spanfold.exporter.pipeline.assembler import Assembler
from spanfold.exporter.records import from_readable
from spanfold.trace.model import Trace, TraceMeta

from .conftest import WEATHER_ROLES, run_weather_agent


def _both_formats(tmp_path: Path, spans: list[ReadableSpan]) -> tuple[Path, Path]:
    """The spans folded once, written by an Invariant writer and an otlp-json writer side by side."""
    inv, otlp = tmp_path / "inv", tmp_path / "otlp"
    writers = [JsonlWriter(inv, "invariant"), JsonlWriter(otlp, "otlp-json")]
    assembler = Assembler(writers, config.load({}, environ={}))
    for span in spans:
        assembler.add(from_readable(span), 0.0)
    assembler.flush(0.0, final=True)
    return inv / "traces.jsonl", otlp / "traces.otlp.jsonl"


def _ids_as_base64(node: Any) -> Any:
    """OTLP/JSON (hex ids) -> the plain protobuf JSON mapping (base64 bytes), for ``json_format.Parse``."""
    if isinstance(node, list):
        return [_ids_as_base64(v) for v in node]
    if not isinstance(node, dict):
        return node
    ids = ("traceId", "spanId", "parentSpanId")
    return {k: base64.b64encode(bytes.fromhex(v)).decode() if k in ids else _ids_as_base64(v) for k, v in node.items()}


def _spans_by_id(request: ExportTraceServiceRequest, *, scope_version: bool = True) -> dict[bytes, dict[str, Any]]:
    out = {}
    for rs in request.resource_spans:
        resource = MessageToDict(rs.resource)
        for ss in rs.scope_spans:
            for span in ss.spans:
                out[span.span_id] = {"resource": resource, "scope": ss.scope.name, "span": MessageToDict(span)}
    return out


def _fold(path: Path, out: Path) -> list[Any]:
    result = CliRunner().invoke(main, ["fold", str(path), "-o", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in (out / "traces.jsonl").read_text(encoding="utf-8").splitlines()]


def test_a_run_as_otlp_json_folds_back_to_the_same_trace(tmp_path: Path, weather_spans: list[ReadableSpan]) -> None:
    invariant, otlp = _both_formats(tmp_path, weather_spans)
    (line,) = otlp.read_text(encoding="utf-8").splitlines()
    assert line.startswith('{"resourceSpans":[{"resource":{"attributes":[')
    assert not (otlp.parent / "traces.meta.jsonl").exists()
    expected = [json.loads(x) for x in invariant.read_text(encoding="utf-8").splitlines()]
    assert [e["role"] for e in expected[0]] == WEATHER_ROLES
    assert _fold(otlp, tmp_path / "back") == expected
    meta = [json.loads(x) for x in (tmp_path / "back" / "traces.meta.jsonl").read_text().splitlines()]
    inv_meta = [json.loads(x) for x in (invariant.parent / "traces.meta.jsonl").read_text().splitlines()]
    assert meta[0]["metadata"]["trace_id"] == inv_meta[0]["metadata"]["trace_id"]


def test_the_line_is_the_sdk_encoders_request_in_otlp_json(tmp_path: Path, weather_spans: list[ReadableSpan]) -> None:
    _, otlp = _both_formats(tmp_path, weather_spans)
    (line,) = otlp.read_text(encoding="utf-8").splitlines()
    doc = json.loads(line)
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16  # hex, not base64
    assert isinstance(span["startTimeUnixNano"], str) and isinstance(span["kind"], int)
    parsed = Parse(json.dumps(_ids_as_base64(doc)), ExportTraceServiceRequest())  # the proto JSON mapping accepts it
    ours, sdk = _spans_by_id(parsed), _spans_by_id(encode_spans(weather_spans))
    assert ours.keys() == sdk.keys() and len(ours) == 7
    priced = {span_id for span_id, span in ours.items() if _cost_keys(span)}
    calls = {i for i, s in sdk.items() if s["span"]["name"].startswith("chat ")}
    assert priced == (calls if importlib.util.find_spec("genai_prices") else set())  # the fold prices each call
    for span_id, theirs in sdk.items():
        mine = ours[span_id]
        if span_id in priced:
            assert _cost_keys(mine) == COST_KEYS
            mine["span"]["attributes"] = [a for a in mine["span"]["attributes"] if a["key"] not in COST_KEYS]
        assert mine == theirs, span_id  # besides its cost, each span is the SDK encoder's


COST_KEYS = {"gen_ai.usage.cost.amount", "gen_ai.usage.cost.currency", "gen_ai.usage.cost.source"}


def _cost_keys(span: dict[str, Any]) -> set[str]:
    return {a["key"] for a in span["span"].get("attributes", [])} & COST_KEYS


def test_a_zero_code_run_is_one_line_and_folds_back_stitched(
    tmp_path: Path, _global_provider: Any, global_spans: Any
) -> None:
    run_weather_agent(_global_provider, agent=None)  # no invoke_agent span: three traces stitched into one
    spans = list(global_spans.get_finished_spans())
    assert len({s.context.trace_id for s in spans}) > 1
    invariant, otlp = _both_formats(tmp_path, spans)
    (line,) = otlp.read_text(encoding="utf-8").splitlines()
    resource_spans = json.loads(line)["resourceSpans"]
    assert len({s["traceId"] for rs in resource_spans for ss in rs["scopeSpans"] for s in ss["spans"]}) > 1
    expected = [json.loads(x) for x in invariant.read_text(encoding="utf-8").splitlines()]
    assert len(expected) == 1 and [e["role"] for e in expected[0]] == WEATHER_ROLES
    assert _fold(otlp, tmp_path / "back") == expected


def test_init_writes_otlp_json_from_the_environment(tmp_path: Path) -> None:
    """``SPANFOLD_FORMAT=otlp-json`` in a real process running the demo agent (spanfold.init, the mock server)."""
    script = (
        "import openai, spanfold\n"
        "from spanfold.testing import MockLLMServer, run_agent, scenarios\n"
        "spanfold.init()\n"
        "with MockLLMServer(scenarios.weather_agent) as server:\n"
        "    client = openai.OpenAI(api_key='sk-test', base_url=server.base_url, max_retries=0)\n"
        "    with spanfold.agent('otlp-bot'):\n"
        "        run_agent('openai', client)\n"
    )
    env = {**os.environ, "SPANFOLD_FORMAT": "otlp-json", "SPANFOLD_OUTPUT": str(tmp_path / "out")}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2] / "src"), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == ["traces.otlp.jsonl"]
    assert oct((tmp_path / "out" / "traces.otlp.jsonl").stat().st_mode & 0o777) == "0o600"
    (events,) = _fold(tmp_path / "out" / "traces.otlp.jsonl", tmp_path / "back")
    assert [e["role"] for e in events] == WEATHER_ROLES


def test_a_planted_symlink_is_not_written_through(tmp_path: Path, weather_spans: list[ReadableSpan]) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("")
    out = tmp_path / "otlp"
    out.mkdir(mode=0o700)
    (out / "traces.otlp.jsonl").symlink_to(target)
    writer = JsonlWriter(out, "otlp-json")
    assembler = Assembler([writer], config.load({}, environ={}))
    for span in weather_spans:
        assembler.add(from_readable(span), 0.0)
    assembler.flush(0.0, final=True)
    assert target.read_text() == ""
    assert writer.pending == 1


def test_a_folded_trace_alone_cannot_be_written_as_otlp_json(tmp_path: Path) -> None:
    writer = JsonlWriter(tmp_path, "otlp-json")
    writer.write(Trace(events=[], meta=TraceMeta(trace_id="ab")))  # counted as a fault, nothing written
    writer.flush()
    assert not (tmp_path / "traces.otlp.jsonl").exists()


@pytest.mark.parametrize("value", ["OTLP-JSON", "otlp-json"])
def test_the_format_option_accepts_otlp_json(value: str) -> None:
    assert config.load({}, environ={"SPANFOLD_FORMAT": value}).format == "otlp-json"


def test_file_per_trace_writes_the_request_and_show_opens_it(tmp_path: Path, weather_spans: list[ReadableSpan]) -> None:
    writer = JsonFileWriter(tmp_path / "out", "otlp-json")
    assembler = Assembler([writer], config.load({}, environ={}))
    for span in weather_spans:
        assembler.add(from_readable(span), 0.0)
    assembler.flush(0.0, final=True)
    (path,) = (tmp_path / "out").iterdir()
    assert path.name == format(weather_spans[0].context.trace_id, "032x") + ".json"
    assert json.loads(path.read_text(encoding="utf-8"))["resourceSpans"]
    result = CliRunner().invoke(main, ["show", str(path), "--no-color"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "convert_temperature" in result.output


def test_a_lone_surrogate_keeps_its_trace(tmp_path: Path) -> None:
    from spanfold.exporter.otlp.json_in import read_file
    from spanfold.exporter.records import SpanRecord

    text = "half \ud800 of a pair"
    messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": text}]}], ensure_ascii=False)
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": messages, "weird": (1.5, float("nan"), b"\x00")}
    record = SpanRecord(7, 9, None, "chat m", 1, 2, attrs, kind="CLIENT", resource={"service.name": "s"})
    writer = JsonlWriter(tmp_path, "otlp-json")
    writer.write_spans(Trace(events=[], meta=TraceMeta(trace_id="7")), [record])
    writer.flush()
    raw = (tmp_path / "traces.otlp.jsonl").read_bytes()
    raw.decode("utf-8")  # valid UTF-8
    ((_, decoded),) = list(read_file(tmp_path / "traces.otlp.jsonl"))
    (back,) = decoded.records
    assert back.attributes["gen_ai.input.messages"] == messages
    weird = back.attributes["weird"]
    assert weird[0] == 1.5 and weird[1] != weird[1] and weird[2] == b"\x00"


def test_serve_writes_otlp_json(tmp_path: Path, weather_spans: list[ReadableSpan]) -> None:
    """``spanfold serve --format otlp-json``: the spans it received for a trace, one line, folded back the same."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from spanfold.exporter.pipeline.receiver import ReceiverThread, ServeOptions

    out = tmp_path / "out"
    thread = ReceiverThread(ServeOptions(port=0, output=str(out), format="otlp-json", wait=60))
    receiver = thread.__enter__()
    try:
        exporter = OTLPSpanExporter(endpoint=receiver.url, timeout=10)
        assert exporter.export(weather_spans).name == "SUCCESS"
        exporter.shutdown()
    finally:
        assert thread.stop()
    assert sorted(p.name for p in out.iterdir()) == ["traces.otlp.jsonl"]
    (events,) = _fold(out / "traces.otlp.jsonl", tmp_path / "back")
    assert [e["role"] for e in events] == WEATHER_ROLES

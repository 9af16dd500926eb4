"""Bridge fixtures: real spans of the weather agent (the real openai SDK against the mock server, spanfold's
instrumentation, the real SDK) and their OTLP encodings made by the SDK's own OTLP encoder: protobuf as
``OTLPSpanExporter`` sends it, OTLP/JSON as the Collector's file exporter writes it (hex ids, enums as numbers)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

import spanfold
from spanfold.content.runtime import Runtime
from spanfold.exporter.fold.folding import fold
from spanfold.exporter.records import from_readable
from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor
from spanfold.testing import MockLLMServer, run_agent, scenarios

#: The weather agent's folded trace, role by role (two parallel get_weather calls, then convert_temperature).
WEATHER_ROLES = ["system", "user", "assistant", "tool", "tool", "assistant", "tool", "assistant"]


def proto_body(spans: Sequence[ReadableSpan]) -> bytes:
    """An ``ExportTraceServiceRequest`` exactly as ``OTLPSpanExporter`` serialises it."""
    data: bytes = encode_spans(spans).SerializeToString()
    return data


def _hex_ids(node: Any) -> Any:
    """The protobuf JSON mapping (base64 ids, enum names) -> OTLP/JSON (hex ids, enum numbers)."""
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in ("traceId", "spanId", "parentSpanId"):
            out[key] = base64.b64decode(value).hex()
        else:
            out[key] = _hex_ids(value)
    return out


def otlp_json(spans: Sequence[ReadableSpan], *, hex_ids: bool = True) -> dict[str, Any]:
    """The OTLP/JSON request for ``spans`` (``hex_ids=False``: the plain protobuf JSON mapping, base64 ids)."""
    doc: dict[str, Any] = MessageToDict(encode_spans(spans), use_integers_for_enums=hex_ids)
    return _hex_ids(doc) if hex_ids else doc


def collector_lines(*batches: Sequence[ReadableSpan]) -> str:
    """Collector file-exporter content: one OTLP/JSON request per line."""
    return "".join(json.dumps(otlp_json(b), separators=(",", ":")) + "\n" for b in batches)


def folded_in_process(spans: Sequence[ReadableSpan]) -> list[dict[str, Any]]:
    """What spanfold's own processor folds these spans to (the reference the bridge must reproduce)."""
    records = [from_readable(s) for s in spans]
    return fold(records, trace_id=format(records[0].trace_id, "032x")).to_invariant()


def run_weather_agent(provider: Any, agent: str | None = "bridge-bot", *, source_stitch: bool = False) -> None:
    """The demo's tool loop once, against the mock server, instrumented on ``provider``. Without an agent, each call
    and tool run is its own trace (as another producer makes them) unless ``source_stitch``."""
    import openai

    from spanfold.stitching import conversations

    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider, runtime=Runtime(capture_content=True))
    conversations.activate(conversations.Conversations(stitch=source_stitch))
    try:
        with MockLLMServer(scenarios.weather_agent) as server:
            client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
            if agent is None:
                run_agent("openai", client)
            else:
                with spanfold.agent(agent):
                    run_agent("openai", client)
    finally:
        instrumentor.uninstrument()
        conversations.activate(None)


@pytest.fixture
def weather_spans(_global_provider: Any, global_spans: Any) -> Iterator[list[ReadableSpan]]:
    """The spans of one weather-agent run (an ``invoke_agent`` root, three chat calls, three tool runs)."""
    run_weather_agent(_global_provider)
    spans = list(global_spans.get_finished_spans())
    assert len(spans) == 7, [s.name for s in spans]
    yield spans

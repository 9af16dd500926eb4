"""The weather agent written in each agent framework, against the embedded mock server, with the framework's own
OpenTelemetry spans (and, for the dedupe tests, spanfold's openai patch beside them); and the recordings of the
frameworks that do not install here (tests/recordings/frameworks: real runs, see its README)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from spanfold.content.runtime import Runtime
from spanfold.exporter.fold.folding import fold
from spanfold.exporter.otlp.json_in import decode_request
from spanfold.exporter.records import SpanRecord, from_readable
from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor
from spanfold.trace.model import Trace

RECORDINGS = Path(__file__).resolve().parent.parent / "recordings" / "frameworks"


def folded(spans: list[ReadableSpan] | list[SpanRecord]) -> Trace:
    records = [s if isinstance(s, SpanRecord) else from_readable(s) for s in spans]
    return fold(records, trace_id=format(records[0].trace_id, "032x"))


def invariant(trace: Trace) -> list[dict[str, Any]]:
    return [e.to_invariant() for e in trace.events]


def recording(name: str) -> list[SpanRecord]:
    """The spans of a recorded run (OTLP/JSON, as an OTLP exporter sends them)."""
    decoded = decode_request(json.loads((RECORDINGS / name).read_text(encoding="utf-8")))
    assert not decoded.rejected, decoded.messages
    assert len({r.trace_id for r in decoded.records}) == 1  # one run, one trace
    return decoded.records


def openai_patch() -> OpenAIInstrumentor:
    return OpenAIInstrumentor()


def patch_kwargs(provider: Any) -> dict[str, Any]:
    return {"tracer_provider": provider, "runtime": Runtime(capture_content=True)}


def renumbered(events: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """The events with tool-call ids replaced by ``{prefix}1``, ``{prefix}2`` ... in order of first use (for
    frameworks whose ids are their own)."""
    ids: dict[str, str] = {}

    def new(old: str | None) -> str | None:
        if old is None:
            return None
        return ids.setdefault(old, f"{prefix}{len(ids) + 1}")

    out = json.loads(json.dumps(events))
    for event in out:
        for call in event.get("tool_calls") or ():
            call["id"] = new(call.get("id"))
        if "tool_call_id" in event:
            event["tool_call_id"] = new(event["tool_call_id"])
    return out

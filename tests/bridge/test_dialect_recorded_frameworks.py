"""Frameworks that do not install in the test environment, replayed from recordings of real runs
(tests/recordings/frameworks, README there): Google ADK 2.13 (telemetry schema 2 with content capture on, and the
legacy schema 1 with ``call_llm`` spans) against the mock server's Gemini API, and the Vercel AI SDK 6
(``generateText`` with tools, ``experimental_telemetry``) against its Chat Completions API. Each folds to the flat
trace spanfold's own instrumentation gives of the same conversation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from spanfold import counters
from spanfold.exporter.dialects import adk as dialect_adk

from .frameworks import RECORDINGS, folded, invariant, recording, renumbered
from .test_producers_equivalence import expected

ADK_SYSTEM = expected("")[0]["content"] + '\n\nYou are an agent. Your internal name is "weather_bot".'


def adk_expected() -> list[dict[str, object]]:
    """ADK appends its own line to the instruction it sends; the rest is the weather agent's trace."""
    return [{"role": "system", "content": ADK_SYSTEM}, *expected("call_")[1:]]


def test_adk_schema2() -> None:
    trace = folded(recording("adk_schema2.otlp.json"))
    assert renumbered(invariant(trace), "call_") == adk_expected()
    assert trace.meta.name == "weather_bot"
    assert trace.meta.models == ["gemini-2.0-flash"]
    assert (trace.meta.usage.input_tokens, trace.meta.usage.output_tokens) == (82 + 172 + 230, 14 + 13 + 24)
    tools = [e for e in trace.events if e.role == "tool"]
    assert [e.metadata.get("agent") for e in tools] == ["weather_bot"] * 3


def test_adk_schema1_call_llm_and_its_generate_content_are_one_step() -> None:
    """Schema 1: ``call_llm`` (content) holds ADK's own ``generate_content`` span (no content) of the same call."""
    records = recording("adk_schema1.otlp.json")
    assert sum(r.name == "call_llm" for r in records) == 3
    trace = folded(records)
    assert counters.snapshot().get("fold.duplicate_model_steps") == 3
    assert (trace.meta.usage.input_tokens, trace.meta.usage.output_tokens) == (82 + 172 + 230, 14 + 13 + 24)
    events = invariant(trace)
    assert [(e["role"], e.get("content")) for e in events] == [(e["role"], e.get("content")) for e in adk_expected()]
    calls = [c["function"] for e in events for c in e.get("tool_calls") or ()]
    assert calls == [c["function"] for e in adk_expected() for c in e.get("tool_calls") or ()]


def without_ids(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events with tool-call ids left out (the Gemini API has none: spanfold's patch records none, ADK's own
    spans make some up)."""
    out = json.loads(json.dumps(events))
    for event in out:
        event.pop("tool_call_id", None)
        for call in event.get("tool_calls") or ():
            call.pop("id", None)
    return out


def test_adk_beside_spanfold_gemini_patch() -> None:
    """ADK's ``generate_content`` spans hold spanfold's google-genai patch spans of the same requests (spanfold
    installed in ADK's environment): framework-only, provider-only and both give one trace, tokens counted once."""
    records = recording("adk_schema2_with_spanfold_gemini.otlp.json")
    patch = [r for r in records if r.scope_name == "spanfold.instrumentation.gemini"]
    adk = [r for r in records if r.scope_name == "gcp.vertex.agent"]
    assert len(patch) == 3 and all(r.parent_id in {a.span_id for a in adk} for r in patch)
    provider_only, framework_only = folded(patch), folded(adk)
    counters.reset()
    both = folded(records)
    assert counters.snapshot().get("fold.duplicate_model_steps") == 3
    reference = without_ids(invariant(provider_only))
    assert reference[1:] == without_ids(expected(""))[1:]
    assert without_ids(invariant(framework_only)) == reference
    assert without_ids(invariant(both)) == reference
    tokens = (82 + 172 + 230, 14 + 13 + 24)
    for trace in (provider_only, framework_only, both):
        assert (trace.meta.usage.input_tokens, trace.meta.usage.output_tokens) == tokens
    assert both.meta.name == "weather_bot"
    kept = {e.metadata["span_id"] for e in both.events if e.role == "assistant"}
    assert kept == {format(r.span_id, "016x") for r in patch}  # the provider's spans


def test_adk_merged_tools_span_is_not_a_tool_run() -> None:
    merged = [r for r in recording("adk_schema2.otlp.json") if r.name == "execute_tool (merged)"]
    assert len(merged) == 1
    rewritten = dialect_adk.rewrite(merged[0])
    assert rewritten is not None and rewritten[0] == dialect_adk.NOT_A_STEP


def test_adk_schema2_without_the_capture_variable_carries_no_content() -> None:
    """ADK 2.13 writes messages on its model spans and arguments and results on its tool spans only in the span
    capture modes (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`` / ``SPAN_AND_EVENT``): without
    the variable its own spans name the steps and time them, and hold nothing more to fold."""
    records = recording("adk_schema2_no_capture.otlp.json")
    content = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments"}
    content |= {"gen_ai.tool.call.result", "gcp.vertex.agent.tool_response", "gcp.vertex.agent.llm_request"}
    assert not [k for r in records for k in r.attributes if k in content]
    trace = folded(records)
    assert [(s.kind, s.name) for s in trace.meta.steps] == [
        ("model", None),
        ("tool", "get_weather"),
        ("tool", "get_weather"),
        ("model", None),
        ("tool", "convert_temperature"),
        ("model", None),
    ]
    assert [(e.role, e.content) for e in trace.events] == [("tool", None)] * 3
    assert trace.meta.name == "weather_bot" and trace.meta.status == "complete"


def test_adk_without_the_capture_variable_beside_spanfold_gemini_patch_has_every_output() -> None:
    """The same run with spanfold's google-genai patch on (``spanfold.init()`` in the ADK process): the patch records
    each model call with its content, and each tool's output is the function response the next call sends (ADK sends
    every result back), so the trace is whole without ADK's content."""
    records = recording("adk_schema2_no_capture_with_spanfold_gemini.otlp.json")
    assert not [r for r in records if "gen_ai.tool.call.result" in r.attributes]
    trace = folded(records)
    assert without_ids(invariant(trace)) == without_ids(adk_expected())
    assert trace.meta.name == "weather_bot"


def test_vercel_ai_generate_text() -> None:
    records = recording("vercel_ai_generate_text.otlp.json")
    assert {r.name for r in records} == {"ai.generateText", "ai.generateText.doGenerate", "ai.toolCall"}
    trace = folded(records)
    assert invariant(trace) == expected("call_mock_")
    assert trace.meta.name == "weather-bot"  # experimental_telemetry.functionId
    assert trace.meta.service == "weather-bot-node"
    assert (trace.meta.usage.input_tokens, trace.meta.usage.output_tokens) == (58 + 164 + 228, 14 + 13 + 24)
    first = next(e for e in trace.events if e.role == "assistant")
    assert first.metadata["provider"] == "openai" and first.metadata["response_id"] == "chatcmpl-mock-1"


def test_vercel_ai_stream_text() -> None:
    """``streamText``: the SDK runs the tools while the step's stream is still open (each ``ai.toolCall`` span ends
    before its ``ai.streamText.doStream`` span); the trace is the same."""
    records = recording("vercel_ai_stream_text.otlp.json")
    steps = sorted((r for r in records if r.name == "ai.streamText.doStream"), key=lambda r: r.start_ns)
    tools = [r for r in records if r.name == "ai.toolCall"]
    assert any(steps[0].start_ns < t.end_ns < steps[0].end_ns for t in tools)
    trace = folded(records)
    assert invariant(trace) == expected("call_mock_")
    assert trace.meta.name == "weather-bot"
    assert (trace.meta.usage.input_tokens, trace.meta.usage.output_tokens) == (58 + 164 + 228, 14 + 13 + 24)


def test_through_spanfold_serve() -> None:
    """A Node app's AI SDK spans and an ADK app's, as their OTLP/HTTP JSON exporters post them to ``spanfold serve``
    (real HTTP on loopback): each trace is written as the in-process fold gives it."""
    pytest.importorskip("aiohttp")
    from .test_receiver import Served

    server = Served(wait=60)
    for name in ("vercel_ai_generate_text.otlp.json", "adk_schema2.otlp.json"):
        body = (RECORDINGS / name).read_bytes()
        status, _, answer = server.post(body, "application/json")
        assert (status, json.loads(answer)) == (200, {})
    written = {trace[0]["content"]: trace for trace in server.stop()}
    assert len(written) == 2
    vercel, adk = written[expected("")[0]["content"]], written[ADK_SYSTEM]
    assert vercel == expected("call_mock_")
    assert vercel == invariant(folded(recording("vercel_ai_generate_text.otlp.json")))
    assert adk == invariant(folded(recording("adk_schema2.otlp.json")))

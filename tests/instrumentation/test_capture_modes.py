"""Capture modes as the conventions define them (issue 50, item 2):
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` / ``capture_content`` = NO_CONTENT, SPAN_ONLY, EVENT_ONLY or
SPAN_AND_EVENT. Real openai SDK calls against the mock server through ``spanfold.init()``: the model spans, the
``gen_ai.client.inference.operation.details`` events an application's LoggerProvider receives (an in-memory log
exporter), and the folded flat trace, sync and streamed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import opentelemetry._logs
import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

from spanfold import config
from spanfold.testing import MockLLMServer, scenarios
from spanfold.testing.agents import PROVIDERS, run_agent

from ..conftest import traced_into

pytest.importorskip("openai")

DETAILS = "gen_ai.client.inference.operation.details"
CONTENT = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions")
#: What a span carries that is content (OpenInference's shown input and output too).
SHOWN = ("input.value", "output.value", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")


@pytest.fixture
def logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryLogRecordExporter]:
    """The application's SDK LoggerProvider, exporting to memory (as the global one, for this test only)."""
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    monkeypatch.setattr(opentelemetry._logs, "get_logger_provider", lambda: provider)
    yield exporter
    provider.shutdown()


def _run(tmp_path: Path, mode: str, global_spans: Any, *, stream: bool) -> tuple[list[dict[str, Any]], list[Any]]:
    """The weather agent run under ``mode``: its flat trace and its model spans."""
    global_spans.clear()
    with MockLLMServer(scenarios.weather_agent) as server, traced_into(tmp_path / mode, capture_content=mode) as traced:  # type: ignore[arg-type]
        run_agent("openai", PROVIDERS["openai"].client(server), stream=stream)
        trace = traced.one()
    models = [s for s in global_spans.get_finished_spans() if s.attributes.get("gen_ai.operation.name") == "chat"]
    return trace, models


def _details(logs: InMemoryLogRecordExporter) -> list[Any]:
    return [r.log_record for r in logs.get_finished_logs() if r.log_record.event_name == DETAILS]


@pytest.mark.parametrize("stream", [False, True], ids=["sync", "stream"])
def test_modes_fold_alike_and_put_content_where_the_conventions_say(
    tmp_path: Path, global_spans: Any, logs: InMemoryLogRecordExporter, stream: bool
) -> None:
    traces = {}
    for mode in ("span_only", "event_only", "span_and_event", "no_content"):
        logs.clear()
        trace, models = _run(tmp_path, mode, global_spans, stream=stream)
        traces[mode] = trace
        events = _details(logs)
        assert len(models) >= 2, mode
        on_spans = [key for span in models for key in (*CONTENT, *SHOWN) if key in span.attributes]
        if mode == "event_only":
            assert on_spans == []  # no content on a model span; a tool run, which has no event, keeps its own
            tools = [s for s in global_spans.get_finished_spans() if s.name.startswith("execute_tool")]
            assert tools and all("gen_ai.tool.call.result" in span.attributes for span in tools)
        elif mode == "no_content":  # the messages' structure alone (roles, tool names and ids), as before
            assert "Paris" not in repr([dict(span.attributes) for span in global_spans.get_finished_spans()])
        else:
            assert "gen_ai.output.messages" in models[0].attributes
        if mode in ("span_only", "no_content"):
            assert events == [], mode
            continue
        # One event per model call, in the call span's context, its attributes the span's GenAI ones and the
        # content as structured values (the conventions' example), not the JSON text a span carries.
        assert len(events) == len(models), mode
        for span, event in zip(models, events, strict=True):
            assert event.span_id == span.context.span_id
            assert event.trace_id == span.context.trace_id
            fields = dict(event.attributes)
            repeated = {
                k: v for k, v in span.attributes.items() if k.startswith(("gen_ai.", "server.")) and k not in CONTENT
            }
            assert {k: fields[k] for k in repeated} == repeated
            assert {"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.response.id"} <= set(repeated)
            inputs = fields["gen_ai.input.messages"]
            assert isinstance(inputs, (list, tuple)) and inputs[0]["role"] in ("system", "user")
            assert inputs[0]["parts"][0]["content"]  # text, not only its structure
            outputs = fields["gen_ai.output.messages"]
            assert outputs[0]["role"] == "assistant" and outputs[0]["finish_reason"]
            assert [d["name"] for d in fields["gen_ai.tool.definitions"]] == ["get_weather", "convert_temperature"]
            if mode == "span_and_event":  # the same content, on the span as JSON text
                assert json.loads(span.attributes["gen_ai.output.messages"]) == json.loads(json.dumps(outputs))
    # The flat trace is the same whichever way the content travelled; without content, it holds none.
    assert traces["event_only"] == traces["span_only"]
    assert traces["span_and_event"] == traces["span_only"]
    assert "Paris" in json.dumps(traces["span_only"])
    assert "Paris" not in json.dumps(traces["no_content"])


def test_event_only_without_an_application_logger_provider(tmp_path: Path, global_spans: Any) -> None:
    """No application LoggerProvider: spanfold's own, set nowhere globally, hands the events to the fold."""
    assert not isinstance(opentelemetry._logs.get_logger_provider(), LoggerProvider)
    expected, _ = _run(tmp_path, "span_only", global_spans, stream=False)
    trace, models = _run(tmp_path, "event_only", global_spans, stream=False)
    assert trace == expected
    assert not any(key in span.attributes for span in models for key in CONTENT)
    assert not isinstance(opentelemetry._logs.get_logger_provider(), LoggerProvider)


@pytest.mark.parametrize(
    ("raw", "mode"),
    [
        ("EVENT_ONLY", "event_only"),
        ("span_and_event", "span_and_event"),
        ("NO_CONTENT", "no_content"),
        ("Span_Only", "span_only"),
        ("true", "span_only"),
        ("false", "no_content"),
    ],
)
def test_the_variable_takes_every_mode(raw: str, mode: str) -> None:
    env = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": raw}
    assert config.load(environ=env).capture_content == mode
    assert config.load({"capture_content": raw}, environ={}).capture_content == mode


def test_unknown_modes_are_refused_by_name() -> None:
    with pytest.raises(config.ConfigError, match=r"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT='EVENTS'.*"
                       r"EVENT_ONLY or SPAN_AND_EVENT"):  # fmt: skip
        config.load(environ={"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENTS"})
    with pytest.raises(config.ConfigError, match="capture_content=3: expected true, NO_CONTENT"):
        config.load({"capture_content": 3}, environ={})
    assert config.load({"capture_content": True}, environ={}).capture_content == "span_only"
    assert config.load({"capture_content": False}, environ={}).capture_content == "no_content"


def test_a_frameworks_own_model_steps_fold_alike_in_event_only(tmp_path: Path, global_spans: Any) -> None:
    """smolagents' model steps (instrumentation/invocations/model_steps.py, not a client patch) have their event too."""
    pytest.importorskip("smolagents")
    from ..frameworks.test_smolagents import QUESTION, tool_agent, weather_replies

    traces = {}
    for mode in ("span_only", "event_only"):
        global_spans.clear()
        with MockLLMServer() as server, traced_into(tmp_path / mode, capture_content=mode) as traced:  # type: ignore[arg-type]
            weather_replies(server)
            tool_agent(server).run(QUESTION)
            traces[mode] = traced.one()
        models = [s for s in global_spans.get_finished_spans() if s.name.startswith("chat ")]
        assert len(models) == 3
        assert any(key in span.attributes for span in models for key in CONTENT) == (mode == "span_only")
    assert traces["event_only"] == traces["span_only"]

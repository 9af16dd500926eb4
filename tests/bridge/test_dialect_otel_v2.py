"""The official OpenTelemetry OpenAI instrumentation (``opentelemetry-instrumentation-openai-v2`` 2.4b0, on
``opentelemetry-util-genai`` 0.4b0) on the real SDK against the mock server:

* latest experimental attributes (``gen_ai_latest_experimental``): the spans already speak the contract, no rewriter
  touches them;
* the older per-message log events: :class:`GenAIEventLogProcessor` buffers them by span id and the fold reads
  them through ``exporter.dialect_genai_events``, also on the folding processor's worker.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider

from spanfold import counters
from spanfold.exporter.dialects import genai_events as events
from spanfold.exporter.dialects.dispatch import REWRITERS
from spanfold.exporter.dialects.genai_event_logs import GenAIEventLogProcessor
from spanfold.exporter.files.writers import MemoryWriter
from spanfold.exporter.pipeline.processor import FoldingSpanProcessor
from spanfold.exporter.records import from_readable
from spanfold.testing import MockLLMServer, scenarios

from .producers import Harness, chat_agent, environ, instrumented, plain_tool, run_otel_v2_events, run_otel_v2_latest
from .test_producers_equivalence import ANSWER, SECOND_CALL_INPUT, SECOND_CALL_OUTPUT, expected

EXPECTED = expected("call_mock_")
EVENTS_ENV = {"OTEL_SEMCONV_STABILITY_OPT_IN": "", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}


@pytest.fixture
def harness(_global_provider: Any, _global_exporter: Any) -> Iterator[Harness]:
    events.BUFFER.clear()
    yield Harness(_global_provider, _global_exporter)
    events.BUFFER.clear()


def model_spans(run: Any) -> list[Any]:
    return [s for s in run.spans if s.name.startswith("chat ")]


# --- latest experimental attributes ------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_latest_attributes_fold_through_the_contract(harness: Harness, stream: bool) -> None:
    run = run_otel_v2_latest(harness, stream=stream)
    spans = model_spans(run)
    assert len(spans) == 3
    for span in spans:
        record = from_readable(span)
        assert [rewrite(record) for rewrite in REWRITERS] == [None] * len(REWRITERS)
        assert span.instrumentation_scope.name == "opentelemetry.util.genai.handler"
    assert run.invariant() == EXPECTED
    assert counters.snapshot().get("faults", 0) == 0


def test_latest_attributes_without_content_keep_models_and_usage(harness: Harness) -> None:
    run = run_otel_v2_latest(harness, capture="NO_CONTENT")
    assert all("gen_ai.input.messages" not in (s.attributes or {}) for s in model_spans(run))
    trace = run.fold()
    assert trace.events == []
    assert trace.meta.models == ["gpt-4o-mini"]
    usage = [(s.attributes or {})["gen_ai.usage.input_tokens"] for s in model_spans(run)]
    assert trace.meta.usage.input_tokens == sum(usage) > 0


# --- per-message log events --------------------------------------------------------------------------------------


def test_events_are_buffered_by_span_and_taken_by_the_fold(harness: Harness) -> None:
    run = run_otel_v2_events(harness)
    spans = model_spans(run)
    assert len(spans) == 3
    for span in spans:  # the spans carry no message; every one has its events waiting
        assert "gen_ai.input.messages" not in (span.attributes or {})
        assert span.context.span_id in events.BUFFER

    name, attrs = events.rewrite(from_readable(spans[1]))
    assert spans[1].context.span_id not in events.BUFFER  # taken
    assert name == "chat gpt-4o-mini"
    assert json.loads(attrs["gen_ai.input.messages"]) == SECOND_CALL_INPUT
    assert json.loads(attrs["gen_ai.output.messages"]) == SECOND_CALL_OUTPUT
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.usage.output_tokens"] == (spans[1].attributes or {})["gen_ai.usage.output_tokens"]


@pytest.mark.parametrize("stream", [False, True])
def test_events_fold_to_the_flat_trace(harness: Harness, stream: bool) -> None:
    run = run_otel_v2_events(harness, stream=stream)
    assert run.answer == ANSWER
    assert run.invariant() == EXPECTED
    assert len(events.BUFFER) == 0
    assert counters.snapshot().get("faults", 0) == 0


def test_events_without_content_keep_roles_tool_names_and_ids(harness: Harness) -> None:
    run = run_otel_v2_events(harness, capture=False)

    def calls(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
        return [{"id": i, "type": "function", "function": {"name": n, "arguments": {}}} for i, n in pairs]

    assert run.invariant() == [
        {"role": "system", "content": None},
        {"role": "user", "content": None},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": calls(("call_mock_1", "get_weather"), ("call_mock_2", "get_weather")),
        },
        {"role": "tool", "content": None, "tool_call_id": "call_mock_1"},
        {"role": "tool", "content": None, "tool_call_id": "call_mock_2"},
        {"role": "assistant", "content": None, "tool_calls": calls(("call_mock_3", "convert_temperature"))},
        {"role": "tool", "content": None, "tool_call_id": "call_mock_3"},
        {"role": "assistant", "content": None},
    ]
    assert run.fold().meta.usage.output_tokens > 0


def test_events_through_the_folding_processor() -> None:
    """The whole pipeline: the instrumentation's logs into the log processor, its spans into a
    ``FoldingSpanProcessor`` whose worker folds the trace (the events are buffered before their span ends)."""
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    writer = MemoryWriter()
    folding = FoldingSpanProcessor([writer], stitch=False)
    provider = TracerProvider()
    provider.add_span_processor(folding)
    logs = LoggerProvider()
    logs.add_log_record_processor(GenAIEventLogProcessor())
    try:
        with (
            environ(**EVENTS_ENV),
            instrumented(OpenAIInstrumentor(), tracer_provider=provider, logger_provider=logs),
            MockLLMServer(scenarios.weather_agent) as server,
            provider.get_tracer("weather-run").start_as_current_span("weather run"),
        ):
            import openai

            client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
            assert chat_agent(client, plain_tool, []) == ANSWER
        assert folding.force_flush(30_000)
    finally:
        provider.shutdown()
    (trace,) = writer.traces
    assert [e.to_invariant() for e in trace.events] == EXPECTED
    assert trace.meta.status == "complete"
    assert len(events.BUFFER) == 0


# --- the buffer --------------------------------------------------------------------------------------------------


def test_buffer_is_bounded_and_counts_what_it_drops() -> None:
    buffer = events.EventBuffer(max_spans=2)
    for span_id in (1, 2, 3):
        buffer.add(span_id, "gen_ai.user.message", {"content": str(span_id)})
    buffer.add(3, "gen_ai.choice", {"index": 0, "message": {"content": "hi"}})
    assert 1 not in buffer
    assert len(buffer) == 2
    assert counters.snapshot()["genai_events_dropped"] == 1
    assert buffer.take(3) == [
        ("gen_ai.user.message", {"content": "3"}),
        ("gen_ai.choice", {"index": 0, "message": {"content": "hi"}}),
    ]
    assert buffer.take(3) == []


def test_processor_keeps_only_genai_events_in_a_span() -> None:
    """Logs that are not GenAI message events, or are emitted outside any span, are not buffered."""
    from opentelemetry._logs import LogRecord

    buffer = events.EventBuffer()
    logs = LoggerProvider()
    logs.add_log_record_processor(GenAIEventLogProcessor(buffer))
    logger = logs.get_logger("test")
    provider = TracerProvider()
    logger.emit(LogRecord(event_name="gen_ai.user.message", body={"content": "outside"}))
    with provider.get_tracer("t").start_as_current_span("chat m") as span:
        logger.emit(LogRecord(event_name="gen_ai.user.message", body={"content": "inside"}))
        logger.emit(LogRecord(event_name="app.audit", body={"content": "not ours"}))
        logger.emit(LogRecord(body="a plain log line"))
    assert len(buffer) == 1
    assert buffer.take(span.get_span_context().span_id) == [("gen_ai.user.message", {"content": "inside"})]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_starts_with_an_empty_buffer() -> None:
    buffer = events.EventBuffer()
    buffer.add(7, "gen_ai.user.message", {"content": "the parent's"})
    pid = os.fork()
    if pid == 0:  # the child: its buffer is empty and usable
        buffer.add(8, "gen_ai.user.message", {"content": "the child's"})
        os._exit(0 if len(buffer) == 1 and 7 not in buffer else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert buffer.take(7) == [("gen_ai.user.message", {"content": "the parent's"})]

"""The model-call log events of both vocabularies fold to the same trace: the older per-message events
(``gen_ai.system.message`` ... ``gen_ai.choice``, bodies; ``openai-v2``, OpenLLMetry's event mode) and the current
conventions' one ``gen_ai.client.inference.operation.details`` event per call (the span's attributes with the
messages as structured values; ``genai-openai``). The events are emitted through the OTel SDK's ``LoggerProvider``
in the span's context, as the instrumentations emit them, into ``GenAIEventLogProcessor``; the spans carry no content.

Runs in every venv (no instrumentation needed); the real instrumentations are ``tests/bridge/test_dialect_otel_v2.py``
(main venv) and ``test_genai_openai.py`` (``.ci/genai-openai``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry._logs import LogRecord
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanfold import counters
from spanfold.exporter.dialects import genai_events
from spanfold.exporter.dialects.genai_event_logs import GenAIEventLogProcessor
from spanfold.exporter.fold.folding import fold
from spanfold.exporter.records import SpanRecord, from_readable

SYSTEM, QUESTION, RESULT, ANSWER = "Be brief.", "Weather in Paris?", "Paris: 18°C, sunny", "Sunny, 18°C."
ARGUMENTS = '{"city": "Paris"}'

#: Per call: the input messages and the reply (role, text, tool call), as a chat API has them.
CALLS: list[tuple[list[dict[str, Any]], dict[str, Any], str]] = [
    (
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}],
        {"role": "assistant", "content": None, "call": ("call_1", "get_weather", ARGUMENTS)},
        "tool_calls",
    ),
    (
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": None, "call": ("call_1", "get_weather", ARGUMENTS)},
            {"role": "tool", "content": RESULT, "id": "call_1"},
        ],
        {"role": "assistant", "content": ANSWER},
        "stop",
    ),
]

EXPECTED = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": QUESTION},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
        ],
    },
    {"role": "tool", "content": RESULT, "tool_call_id": "call_1"},
    {"role": "assistant", "content": ANSWER},
]


def per_message(inputs: list[dict[str, Any]], reply: dict[str, Any], reason: str) -> list[LogRecord]:
    """openai-v2's events: one per input message, a ``gen_ai.choice`` for the reply."""

    def chat_shaped(message: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"content": message["content"]} if message["content"] is not None else {}
        if "call" in message:
            call_id, name, arguments = message["call"]
            body["tool_calls"] = [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            ]
        if "id" in message:
            body["id"] = message["id"]
        return body

    records = [LogRecord(event_name=f"gen_ai.{m['role']}.message", body=chat_shaped(m)) for m in inputs]
    choice: dict[str, Any] = {
        "index": 0,
        "finish_reason": reason,
        "message": {"role": "assistant", **chat_shaped(reply)},
    }
    return [*records, LogRecord(event_name="gen_ai.choice", body=choice)]


def details(inputs: list[dict[str, Any]], reply: dict[str, Any], reason: str) -> list[LogRecord]:
    """genai-openai's event: the call's attributes, the messages in the contract's shape as structured values."""

    def parts(message: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if message["role"] == "tool":
            return [{"type": "tool_call_response", "id": message["id"], "response": message["content"]}]
        if message["content"] is not None:
            out.append({"type": "text", "content": message["content"]})
        if "call" in message:
            call_id, name, _ = message["call"]
            out.append({"type": "tool_call", "id": call_id, "name": name, "arguments": {"city": "Paris"}})
        return out

    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": [{"role": m["role"], "parts": parts(m), "name": None} for m in inputs],
        "gen_ai.output.messages": [{"role": "assistant", "parts": parts(reply), "finish_reason": reason}],
    }
    return [LogRecord(event_name=genai_events.DETAILS_EVENT, attributes=attributes)]


@pytest.fixture(autouse=True)
def _empty_buffer() -> Iterator[None]:
    genai_events.BUFFER.clear()
    yield
    genai_events.BUFFER.clear()


def folded(vocabulary: Any) -> list[dict[str, Any]]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    logs = LoggerProvider()
    logs.add_log_record_processor(GenAIEventLogProcessor())
    logger = logs.get_logger("an.instrumentation")
    tracer = provider.get_tracer("an.instrumentation")
    with tracer.start_as_current_span("agent run"):
        for n, (inputs, reply, reason) in enumerate(CALLS, 1):
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.response.id": f"chatcmpl-{n}",
                "gen_ai.response.finish_reasons": (reason,),
                "gen_ai.usage.input_tokens": 20 * n,
                "gen_ai.usage.output_tokens": 5,
            }
            with tracer.start_as_current_span("chat gpt-4o-mini", attributes=attributes):
                for record in vocabulary(inputs, reply, reason):
                    logger.emit(record)
    records = [from_readable(s) for s in spans.get_finished_spans()]
    trace = fold(records, trace_id=format(records[0].trace_id, "032x"))
    assert len(genai_events.BUFFER) == 0
    assert trace.meta.usage.input_tokens == 60
    reasons = [e.metadata.get("finish_reasons") for e in trace.events if "model" in e.metadata]
    assert reasons == [["tool_calls"], ["stop"]]
    return trace.to_invariant()


def test_both_vocabularies_fold_to_the_same_trace() -> None:
    older, current = folded(per_message), folded(details)
    assert older == EXPECTED
    assert current == EXPECTED
    assert counters.snapshot().get("faults", 0) == 0


def test_the_span_own_messages_win_over_a_details_event() -> None:
    """``span_and_event``: the span carries the messages too; the event's are not read over them (and it is taken)."""
    genai_events.BUFFER.add(7, genai_events.DETAILS_EVENT, {"gen_ai.input.messages": ({"role": "user", "parts": ()},)})
    span = '[{"role":"user","parts":[{"type":"text","content":"hi"}]}]'
    record = SpanRecord(1, 7, None, "chat m", 0, 1, attributes={"gen_ai.input.messages": span})
    rewritten = genai_events.rewrite(record)
    assert rewritten is not None
    assert rewritten[1]["gen_ai.input.messages"] == span
    assert 7 not in genai_events.BUFFER

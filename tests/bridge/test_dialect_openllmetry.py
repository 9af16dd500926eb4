"""OpenLLMetry on the real SDKs against the mock server, read by ``exporter.dialect_openllmetry``:

* ``opentelemetry-instrumentation-openai`` 0.62: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (the contract:
  no rewrite);
* ``opentelemetry-instrumentation-anthropic`` 0.53.4, the last release that writes the older
  ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` attributes (with ``tool_calls.M.*``), rewritten into the contract;
* traceloop ``@tool`` spans (``traceloop.span.kind=tool``, entity input / output), made as the traceloop SDK makes them
  (see ``producers.traceloop_tool``: the SDK itself is not installable beside the current OpenTelemetry SDK).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from spanfold import counters
from spanfold.exporter.dialects import openllmetry as dialect
from spanfold.exporter.dialects.dispatch import REWRITERS
from spanfold.exporter.records import from_readable

from .producers import Harness, environ, run_openllmetry
from .test_producers_equivalence import ANSWER, QUESTION, SYSTEM, expected


@pytest.fixture
def harness(_global_provider: Any, _global_exporter: Any) -> Iterator[Harness]:
    yield Harness(_global_provider, _global_exporter)


def tool_part(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def response(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": text}]}


def test_openai_spans_already_speak_the_contract(harness: Harness) -> None:
    run = run_openllmetry(harness)
    chats = run.named("openai.chat")
    assert len(chats) == 3
    for span in chats:
        assert "gen_ai.input.messages" in (span.attributes or {})
        assert [rewrite(from_readable(span)) for rewrite in REWRITERS] == [None] * len(REWRITERS)
    assert run.invariant() == expected("call_mock_")


def test_traceloop_tool_spans_pair_with_the_model_calls(harness: Harness) -> None:
    run = run_openllmetry(harness)
    tools = run.named("get_weather.tool") + run.named("convert_temperature.tool")
    assert len(tools) == 3
    name, attrs = dialect.rewrite(from_readable(tools[2]))
    assert name == "execute_tool convert_temperature"
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["gen_ai.tool.name"] == "convert_temperature"
    assert json.loads(attrs["gen_ai.tool.call.arguments"]) == {"celsius": 18, "to": "fahrenheit"}
    assert attrs["gen_ai.tool.call.result"] == "18°C is 64.4°F"  # the JSON string the decorator wrote, decoded
    assert "gen_ai.tool.call.id" not in attrs  # traceloop does not know the model's call id ...

    tool_events = [e for e in run.fold().events if e.role == "tool"]
    by_span = {format(s.context.span_id, "016x"): s for s in tools}
    assert [(e.tool_call_id, e.name) for e in tool_events] == [  # ... the fold pairs by name and arguments
        ("call_mock_1", "get_weather"),
        ("call_mock_2", "get_weather"),
        ("call_mock_3", "convert_temperature"),
    ]
    assert [json.loads(by_span[e.metadata["span_id"]].attributes["traceloop.entity.input"]) for e in tool_events] == [
        {"args": [], "kwargs": {"city": "Paris"}},
        {"args": [], "kwargs": {"city": "Tokyo"}},
        {"args": [], "kwargs": {"celsius": 18, "to": "fahrenheit"}},
    ]


def test_legacy_prompt_attributes_are_rewritten(harness: Harness) -> None:
    run = run_openllmetry(harness, api="anthropic")
    chats = run.named("anthropic.chat")
    assert len(chats) == 3
    last = chats[2]
    raw = last.attributes or {}
    assert "gen_ai.input.messages" not in raw
    assert raw["gen_ai.prompt.5.role"] == "user"  # the tool results: a user turn of tool_result blocks
    assert raw["gen_ai.completion.0.finish_reason"] == "end_turn"

    name, attrs = dialect.rewrite(from_readable(last))
    assert name == f"chat {raw['gen_ai.request.model']}"
    assert json.loads(attrs["gen_ai.input.messages"]) == [
        {"role": "system", "parts": [{"type": "text", "content": SYSTEM}]},
        {"role": "user", "parts": [{"type": "text", "content": QUESTION}]},
        {
            "role": "assistant",  # the calls once: the tool_use blocks in .content are the .tool_calls.M.* again
            "parts": [
                tool_part("toolu_mock_1", "get_weather", {"city": "Paris"}),
                tool_part("toolu_mock_2", "get_weather", {"city": "Tokyo"}),
            ],
        },
        response("toolu_mock_1", "Paris: 18°C, sunny"),
        response("toolu_mock_2", "Tokyo: 24°C, cloudy"),
        {
            "role": "assistant",
            "parts": [tool_part("toolu_mock_3", "convert_temperature", {"celsius": 18, "to": "fahrenheit"})],
        },
        response("toolu_mock_3", "18°C is 64.4°F"),
    ]
    assert json.loads(attrs["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": ANSWER}], "finish_reason": "end_turn"}
    ]
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.response.finish_reasons"] == ["end_turn"]
    assert attrs["gen_ai.provider.name"] == "anthropic"  # from gen_ai.system "Anthropic"
    assert attrs["gen_ai.usage.cache_read.input_tokens"] == raw["gen_ai.usage.cache_read_input_tokens"]
    assert run.invariant() == expected("toolu_mock_")
    assert counters.snapshot().get("faults", 0) == 0


def test_legacy_spans_without_content_keep_models_and_usage(harness: Harness) -> None:
    with environ(TRACELOOP_TRACE_CONTENT="false"):
        run = run_openllmetry(harness, api="anthropic")
    chats = run.named("anthropic.chat")
    assert chats
    assert not any(k.startswith("gen_ai.prompt.") for s in chats for k in (s.attributes or {}))
    trace = run.fold()
    # no messages; the tool spans keep their names and timing (no call id, arguments or result to pair them by)
    assert [e.to_invariant() for e in trace.events] == [{"role": "tool", "content": None}] * 3
    assert [e.name for e in trace.events] == ["get_weather", "get_weather", "convert_temperature"]
    assert trace.meta.models == [chats[0].attributes["gen_ai.response.model"]]
    assert trace.meta.usage.input_tokens == sum(s.attributes["gen_ai.usage.input_tokens"] for s in chats)


def test_other_openllmetry_spans_are_not_steps() -> None:
    """Workflow and task spans group, they are no steps; embeddings are no model steps (a step beside the
    conversation: tests/bridge/test_dialect_rag_steps.py)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.semconv_ai import SpanAttributes, TraceloopSpanKindValues

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("traceloop.tracer")
    for kind in (TraceloopSpanKindValues.WORKFLOW, TraceloopSpanKindValues.TASK):
        with tracer.start_as_current_span(f"weather.{kind.value}") as span:
            span.set_attribute(SpanAttributes.TRACELOOP_SPAN_KIND, kind.value)
    with tracer.start_as_current_span("openai.embeddings") as span:
        span.set_attribute(SpanAttributes.LLM_REQUEST_TYPE, "embedding")
    records = [from_readable(s) for s in exporter.get_finished_spans()]
    workflow, task, embeddings = [dialect.rewrite(r) for r in records]
    assert (workflow, task) == (None, None)
    assert embeddings is not None and embeddings[1]["gen_ai.operation.name"] == "embeddings"


def test_a_tool_result_with_text_and_an_image_keeps_its_text() -> None:
    """An Anthropic ``tool_result`` whose content mixes text and an image (the JSON content list OpenLLMetry writes)
    keeps both: the text part is converted once (it used to be converted twice, which lost its text)."""
    from spanfold.exporter.fold.folding import fold
    from spanfold.exporter.records import SpanRecord

    blocks = [
        {"type": "text", "text": "18 degrees"},
        {"type": "image", "source": {"type": "url", "url": "https://example.invalid/sky.png"}},
    ]
    content = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": blocks}]
    attrs = {
        "llm.request.type": "chat",
        "gen_ai.request.model": "claude-x",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": json.dumps(content),
    }
    name, rewritten = dialect.rewrite(SpanRecord(1, 2, None, "anthropic.chat", 0, 1, attrs))
    assert name == "chat claude-x"
    (message,) = json.loads(rewritten["gen_ai.input.messages"])
    assert message["role"] == "tool"
    (part,) = message["parts"]
    assert part["response"][0] == {"type": "text", "content": "18 degrees"}
    trace = fold([SpanRecord(1, 2, None, "anthropic.chat", 0, 1, attrs)], trace_id="t")
    assert "18 degrees" in json.dumps(trace.events[0].content)

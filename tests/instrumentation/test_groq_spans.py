"""Groq spans, attribute by attribute: the real ``groq`` SDK over real HTTP to the mock server's Groq route."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import groq
import pytest
from opentelemetry.sdk.trace import TracerProvider

from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.groq import GroqInstrumentor
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec

from .conftest import Spans, spans_of

MODEL = "llama-3.3-70b-versatile"


@pytest.fixture
def groq_spans() -> Iterator[Spans]:
    with spans_of(GroqInstrumentor()) as spans:
        yield spans


def client(server: MockLLMServer) -> groq.Groq:
    return groq.Groq(api_key="gsk-test", base_url=server.groq_base_url, max_retries=0)


def test_span_attributes_of_a_tool_call(groq_spans: Spans, mock: MockLLMServer) -> None:
    mock.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]))
    result = client(mock).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Weather?"}], temperature=0.2, max_completion_tokens=99
    )
    assert type(result) is groq.types.chat.ChatCompletion
    span = groq_spans.one()
    attrs = groq_spans.attrs(span)
    assert span.name == f"chat {MODEL}"
    assert attrs["gen_ai.provider.name"] == "groq"
    assert attrs["server.address"] == "127.0.0.1" and attrs["server.port"] == mock.port
    assert attrs["gen_ai.request.temperature"] == 0.2 and attrs["gen_ai.request.max_tokens"] == 99
    assert attrs["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert attrs["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "call_mock_1", "name": "get_weather", "arguments": {"city": "Paris"}}
            ],
            "finish_reason": "tool_call",
        }
    ]
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (
        result.usage.prompt_tokens,  # type: ignore[union-attr]
        result.usage.completion_tokens,  # type: ignore[union-attr]
    )


def test_stream_usage_comes_from_x_groq(groq_spans: Spans, mock: MockLLMServer) -> None:
    mock.script(Reply.text("Fast inference."))
    chunks = list(
        client(mock).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}], stream=True)
    )
    assert isinstance(chunks[-1], groq.types.chat.ChatCompletionChunk)
    assert chunks[-1].usage is None and chunks[-1].x_groq is not None  # groq's own place for it
    attrs = groq_spans.attrs()
    assert attrs["gen_ai.usage.output_tokens"] == chunks[-1].x_groq.usage.completion_tokens  # type: ignore[union-attr]
    assert attrs["gen_ai.output.messages"][0]["parts"] == [{"type": "text", "content": "Fast inference."}]


def test_raw_response_and_untouched_streaming_response(groq_spans: Spans, mock: MockLLMServer) -> None:
    mock.script(Reply.text("Raw."), Reply.text("Streamed raw."))
    raw = client(mock).chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": "A"}]
    )
    assert raw.parse().choices[0].message.content == "Raw."
    with client(mock).chat.completions.with_streaming_response.create(
        model=MODEL, messages=[{"role": "user", "content": "B"}]
    ) as response:
        assert json.loads(response.read())["choices"][0]["message"]["content"] == "Streamed raw."
    (span, opaque) = groq_spans.finished()
    assert groq_spans.attrs(span)["gen_ai.output.messages"][0]["parts"] == [{"type": "text", "content": "Raw."}]
    assert "gen_ai.output.messages" not in (opaque.attributes or {})


def _sse(deltas: list[dict[str, Any]]) -> str:
    base = {"id": "chatcmpl-r", "object": "chat.completion.chunk", "created": 1, "model": "qwen/qwen3-32b"}
    events = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "x_groq": {"id": "req_1"}})
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"


def test_reasoning_field_and_image_input(groq_spans: Spans, mock: MockLLMServer) -> None:
    body = _sse([{"role": "assistant", "reasoning": "A cat, "}, {"reasoning": "clearly."}, {"content": "A cat."}])
    mock.script(Reply.raw(200, body, "text/event-stream"))
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    stream = client(mock).chat.completions.create(
        model="qwen/qwen3-32b",
        messages=[{"role": "user", "content": [{"type": "text", "text": "What is this?"}, image]}],
        stream=True,
        reasoning_format="parsed",
    )
    assert [c.choices[0].delta.reasoning for c in stream] == ["A cat, ", "clearly.", None, None]
    attrs = groq_spans.attrs()
    assert attrs["gen_ai.input.messages"][0]["parts"][1]["modality"] == "image"
    assert attrs["gen_ai.output.messages"][0]["parts"] == [
        {"type": "reasoning", "content": "A cat, clearly."},
        {"type": "text", "content": "A cat."},
    ]


def test_uninstrument_restores_the_sdk() -> None:
    original = groq.resources.chat.completions.Completions.create
    instrumentor = GroqInstrumentor()
    instrumentor.instrument(tracer_provider=TracerProvider(), runtime=Runtime())
    assert groq.resources.chat.completions.Completions.create is not original
    instrumentor.uninstrument()
    assert groq.resources.chat.completions.Completions.create is original

"""Cohere spans: the real ``cohere`` v2 client over real HTTP to the mock server's ``/v2/chat``."""

from __future__ import annotations

import json
from collections.abc import Iterator

import cohere
import pytest
from opentelemetry.sdk.trace import TracerProvider

from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.cohere import CohereInstrumentor
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec

from .conftest import Spans, spans_of

MODEL = "command-a-03-2025"


@pytest.fixture
def cohere_spans() -> Iterator[Spans]:
    with spans_of(CohereInstrumentor()) as spans:
        yield spans


def client(server: MockLLMServer) -> cohere.ClientV2:
    return cohere.ClientV2(api_key="co-test", base_url=server.cohere_base_url, max_retries=0)


def test_tool_plan_sdk_history_and_document_results(cohere_spans: Spans, mock: MockLLMServer) -> None:
    mock.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]), Reply.text("Sunny."))
    first = client(mock).chat(model=MODEL, messages=[{"role": "user", "content": "Weather?"}])
    call = first.message.tool_calls[0]  # type: ignore[index]
    client(mock).chat(
        model=MODEL,
        messages=[
            {"role": "user", "content": "Weather?"},
            first.message,  # the SDK's own response message, tool plan and all
            {"role": "tool", "tool_call_id": call.id, "content": [{"type": "document", "document": {"data": "18°C"}}]},
        ],
        p=0.9,
        k=40,
        stop_sequences=["END"],
    )
    one, two = cohere_spans.finished()
    assert cohere_spans.attrs(one)["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": first.message.tool_plan},
                {"type": "tool_call", "id": call.id, "name": "get_weather", "arguments": {"city": "Paris"}},
            ],
            "finish_reason": "tool_call",
        }
    ]
    attrs = cohere_spans.attrs(two)
    assert attrs["gen_ai.provider.name"] == "cohere"
    assert (attrs["server.address"], attrs["server.port"]) == ("127.0.0.1", mock.port)
    assert attrs["gen_ai.request.top_p"] == 0.9 and attrs["gen_ai.request.top_k"] == 40
    assert attrs["gen_ai.request.stop_sequences"] == ("END",)
    messages = attrs["gen_ai.input.messages"]
    assert messages[1]["parts"][0] == {"type": "reasoning", "content": first.message.tool_plan}
    assert messages[2] == {"role": "tool", "parts": [{"type": "tool_call_response", "id": call.id, "response": "18°C"}]}
    assert attrs["gen_ai.response.finish_reasons"] == ("COMPLETE",)
    assert attrs["gen_ai.usage.input_tokens"] == mock.requests[-1].input_tokens


def _sse(events: list[dict[str, object]]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


async def test_async_stream_with_thinking_and_max_tokens(cohere_spans: Spans, mock: MockLLMServer) -> None:
    def content(kind: str, text: str) -> dict[str, object]:
        return {"message": {"content": {kind: text}}}

    body = _sse(
        [
            {"type": "message-start", "id": "c-1", "delta": {"message": {"role": "assistant"}}},
            {
                "type": "content-start",
                "index": 0,
                "delta": {"message": {"content": {"type": "thinking", "thinking": ""}}},
            },
            {"type": "content-delta", "index": 0, "delta": content("thinking", "Blue, ")},
            {"type": "content-delta", "index": 0, "delta": content("thinking", "surely.")},
            {"type": "content-end", "index": 0},
            {"type": "content-start", "index": 1, "delta": {"message": {"content": {"type": "text", "text": ""}}}},
            {"type": "content-delta", "index": 1, "delta": content("text", "The sky is")},
            {"type": "content-end", "index": 1},
            {
                "type": "message-end",
                "delta": {"finish_reason": "MAX_TOKENS", "usage": {"tokens": {"input_tokens": 5, "output_tokens": 9}}},
            },
        ]
    )
    mock.script(Reply.raw(200, body, "text/event-stream"))
    aclient = cohere.AsyncClientV2(api_key="co-test", base_url=mock.cohere_base_url, max_retries=0)
    events = [e async for e in aclient.chat_stream(model=MODEL, messages=[{"role": "user", "content": "Sky?"}])]
    assert [e.type for e in events][-1] == "message-end"
    attrs = cohere_spans.attrs()
    assert attrs["gen_ai.response.id"] == "c-1"
    assert attrs["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [{"type": "reasoning", "content": "Blue, surely."}, {"type": "text", "content": "The sky is"}],
            "finish_reason": "length",
        }
    ]
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (5, 9)


def test_uninstrument_restores_the_sdk() -> None:
    from cohere.v2.client import V2Client

    original = V2Client.chat_stream
    instrumentor = CohereInstrumentor()
    instrumentor.instrument(tracer_provider=TracerProvider(), runtime=Runtime())
    assert V2Client.chat_stream is not original
    instrumentor.uninstrument()
    assert V2Client.chat_stream is original

"""Mistral spans: the ``mistralai`` SDK over real HTTP to the mock server's Mistral route, attribute by attribute."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from mistralai.client import Mistral, models
from opentelemetry.sdk.trace import TracerProvider

from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.mistral import MistralInstrumentor
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec

from .conftest import Spans, spans_of

MODEL = "mistral-small-latest"


@pytest.fixture
def mistral_spans() -> Iterator[Spans]:
    with spans_of(MistralInstrumentor()) as spans:
        yield spans


def client(server: MockLLMServer) -> Mistral:
    return Mistral(api_key="mistral-test", server_url=server.mistral_server_url)


def test_history_with_sdk_objects_images_and_params(mistral_spans: Spans, mock: MockLLMServer) -> None:
    """The SDK's own message objects (``UNSET`` fields) in the history, an image as a plain URL, Mistral's
    parameter names."""
    mock.script(Reply.text("Noted."), Reply.text("A cat."))
    first = client(mock).chat.complete(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
    assistant = first.choices[0].message
    assert isinstance(assistant, models.AssistantMessage)
    image = {"type": "image_url", "image_url": "data:image/png;base64,iVBORw0KGgo="}
    client(mock).chat.complete(
        model=MODEL,
        messages=[
            {"role": "user", "content": "Hi"},
            assistant,
            models.UserMessage(content=[models.TextChunk(text="What is this?"), image]),  # type: ignore[list-item]
        ],
        random_seed=7,
        top_k=5,
        max_tokens=50,
    )
    attrs = mistral_spans.attrs(mistral_spans.finished()[1])
    assert attrs["gen_ai.request.seed"] == 7 and attrs["gen_ai.request.top_k"] == 5
    assert attrs["gen_ai.request.max_tokens"] == 50
    assert attrs["gen_ai.provider.name"] == "mistral_ai"
    assert (attrs["server.address"], attrs["server.port"]) == ("127.0.0.1", mock.port)
    messages = attrs["gen_ai.input.messages"]
    assert messages[1] == {"role": "assistant", "parts": [{"type": "text", "content": "Noted."}]}
    assert messages[2]["parts"][0] == {"type": "text", "content": "What is this?"}
    assert messages[2]["parts"][1]["modality"] == "image"


def test_content_chunks_thinking_and_object_arguments(mistral_spans: Spans, mock: MockLLMServer) -> None:
    """A magistral-style answer: content as chunks (thinking, text), tool arguments as an object, ``model_length``."""
    body = {
        "id": "cmpl-1",
        "object": "chat.completion",
        "model": "magistral-medium-latest",
        "created": 1,
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
        "choices": [
            {
                "index": 0,
                "finish_reason": "model_length",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": [{"type": "text", "text": "Paris first."}]},
                        {"type": "text", "text": "Checking."},
                    ],
                    "tool_calls": [
                        {"id": "abcDEF123", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
                    ],
                },
            }
        ],
    }
    mock.script(Reply.raw(200, json.dumps(body)))
    client(mock).chat.complete(model="magistral-medium-latest", messages=[{"role": "user", "content": "Weather?"}])
    (output,) = mistral_spans.attrs()["gen_ai.output.messages"]
    assert output == {
        "role": "assistant",
        "parts": [
            {"type": "reasoning", "content": "Paris first."},
            {"type": "text", "content": "Checking."},
            {"type": "tool_call", "id": "abcDEF123", "name": "get_weather", "arguments": {"city": "Paris"}},
        ],
        "finish_reason": "length",
    }


async def test_agents_stream_async(mistral_spans: Spans, mock: MockLLMServer) -> None:
    mock.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Tokyo"})], text="Let me check."))
    stream = await client(mock).agents.stream_async(agent_id="ag:weather", messages=[{"role": "user", "content": "?"}])
    events = [event async for event in stream]
    assert isinstance(events[-1], models.CompletionEvent)
    span = mistral_spans.one()
    attrs = mistral_spans.attrs(span)
    assert span.name == "chat agent ag:weather"
    assert attrs["gen_ai.output.messages"][0]["parts"] == [
        {"type": "text", "content": "Let me check."},
        {"type": "tool_call", "id": "mockcall1", "name": "get_weather", "arguments": {"city": "Tokyo"}},
    ]
    assert attrs["gen_ai.usage.output_tokens"] == events[-1].data.usage.completion_tokens  # type: ignore[union-attr]


def test_uninstrument_restores_the_sdk() -> None:
    from mistralai.client.chat import Chat

    original = Chat.complete
    instrumentor = MistralInstrumentor()
    instrumentor.instrument(tracer_provider=TracerProvider(), runtime=Runtime())
    assert Chat.complete is not original
    instrumentor.uninstrument()
    assert Chat.complete is original

"""Ollama spans: the real ``ollama`` SDK over real HTTP to the mock server's ``/api/chat`` and ``/api/generate``."""

from __future__ import annotations

import json
from collections.abc import Iterator

import ollama
import pytest
from opentelemetry.sdk.trace import TracerProvider

from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.ollama import OllamaInstrumentor
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec

from .conftest import Spans, spans_of

MODEL = "llama3.2"
PNG = "iVBORw0KGgoAAAANSUhEUg=="


@pytest.fixture
def ollama_spans() -> Iterator[Spans]:
    with spans_of(OllamaInstrumentor()) as spans:
        yield spans


def test_chat_positional_options_images_and_tool_calls(ollama_spans: Spans, mock: MockLLMServer) -> None:
    mock.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]))

    def get_weather(city: str) -> str:
        """Get the weather in a city."""
        return city

    response = ollama.Client(host=mock.ollama_host).chat(
        MODEL,
        [{"role": "user", "content": "Weather here?", "images": [PNG]}],
        tools=[get_weather],
        options={"temperature": 0.1, "num_predict": 64, "seed": 3, "stop": ["###"]},
    )
    assert isinstance(response, ollama.ChatResponse)
    span = ollama_spans.one()
    attrs = ollama_spans.attrs(span)
    assert span.name == f"chat {MODEL}"
    assert attrs["gen_ai.provider.name"] == "ollama"
    assert (attrs["server.address"], attrs["server.port"]) == ("127.0.0.1", mock.port)
    assert attrs["gen_ai.request.temperature"] == 0.1 and attrs["gen_ai.request.max_tokens"] == 64
    assert attrs["gen_ai.request.seed"] == 3 and attrs["gen_ai.request.stop_sequences"] == ("###",)
    assert attrs["gen_ai.input.messages"] == [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "Weather here?"},
                {"type": "blob", "modality": "image", "mime_type": "image/png", "content": PNG},
            ],
        }
    ]
    assert attrs["gen_ai.tool.definitions"][0]["name"] == "get_weather"
    assert attrs["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": None, "name": "get_weather", "arguments": {"city": "Paris"}}],
            "finish_reason": "tool_call",
        }
    ]
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs["gen_ai.usage.input_tokens"] == response.prompt_eval_count
    assert attrs["gen_ai.usage.output_tokens"] == response.eval_count


def test_generate_streamed_with_system_and_thinking(ollama_spans: Spans, mock: MockLLMServer) -> None:
    lines = [
        {"model": MODEL, "created_at": "t", "response": "", "thinking": "Short ", "done": False},
        {"model": MODEL, "created_at": "t", "response": "", "thinking": "answer.", "done": False},
        {"model": MODEL, "created_at": "t", "response": "Blue.", "done": False},
        {"model": MODEL, "created_at": "t", "response": "", "done": True, "done_reason": "length",
         "prompt_eval_count": 7, "eval_count": 3},
    ]  # fmt: skip
    mock.script(Reply.raw(200, "".join(json.dumps(line) + "\n" for line in lines), "application/x-ndjson"))
    parts = list(
        ollama.Client(host=mock.ollama_host).generate(MODEL, "Sky colour?", system="Be brief.", think=True, stream=True)
    )
    assert [p.response for p in parts] == ["", "", "Blue.", ""]
    span = ollama_spans.one()
    attrs = ollama_spans.attrs(span)
    assert span.name == f"text_completion {MODEL}"
    assert attrs["gen_ai.operation.name"] == "text_completion"
    assert attrs["gen_ai.system_instructions"] == [{"type": "text", "content": "Be brief."}]
    assert attrs["gen_ai.input.messages"] == [{"role": "user", "parts": [{"type": "text", "content": "Sky colour?"}]}]
    assert attrs["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [{"type": "reasoning", "content": "Short answer."}, {"type": "text", "content": "Blue."}],
            "finish_reason": "length",
        }
    ]
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (7, 3)


async def test_async_generate_and_an_error_line_mid_stream(ollama_spans: Spans, mock: MockLLMServer) -> None:
    body = json.dumps({"model": MODEL, "created_at": "t", "response": "Hal", "done": False}) + "\n"
    body += json.dumps({"error": "model runner has unexpectedly stopped"}) + "\n"
    mock.script(Reply.text("Fine."), Reply.raw(200, body, "application/x-ndjson"))
    client = ollama.AsyncClient(host=mock.ollama_host)
    assert (await client.generate(model=MODEL, prompt="Hi")).response == "Fine."
    with pytest.raises(ollama.ResponseError, match="unexpectedly stopped"):
        async for _ in await client.generate(model=MODEL, prompt="Again", stream=True):
            pass
    ok, failed = ollama_spans.finished()
    assert ollama_spans.attrs(ok)["gen_ai.output.messages"][0]["parts"] == [{"type": "text", "content": "Fine."}]
    assert failed.attributes is not None and failed.attributes["error.type"] == "ollama.ResponseError"


def test_uninstrument_restores_the_sdk() -> None:
    original = ollama.Client.chat
    instrumentor = OllamaInstrumentor()
    instrumentor.instrument(tracer_provider=TracerProvider(), runtime=Runtime())
    assert ollama.Client.chat is not original
    instrumentor.uninstrument()
    assert ollama.Client.chat is original

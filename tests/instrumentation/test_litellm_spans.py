"""LiteLLM: one model step per call, named after the provider LiteLLM routed to, whatever the route (the openai SDK
inside, LiteLLM's own HTTP client) and whichever of spanfold's SDK instrumentations are on; tokens counted once."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.anthropic.patches import AnthropicInstrumentor
from spanfold.instrumentation.providers.groq import GroqInstrumentor
from spanfold.instrumentation.providers.litellm import LiteLLMInstrumentor
from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec

from .conftest import Spans

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm is imported: no remote price list
litellm = pytest.importorskip("litellm")


@pytest.fixture
def all_spans() -> Iterator[Spans]:
    """LiteLLM's instrumentation and those of the SDKs it may call, all on one provider."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rt = Runtime(capture_content=True)
    instrumentors = [LiteLLMInstrumentor(), OpenAIInstrumentor(), AnthropicInstrumentor(), GroqInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider, runtime=rt)
    try:
        yield Spans(exporter, rt, provider, instrumentors[0])
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()


@pytest.fixture
def mock() -> Iterator[MockLLMServer]:
    with MockLLMServer() as server:
        yield server


def _one(all_spans: Spans) -> dict[str, Any]:
    span = all_spans.one()
    assert span.instrumentation_scope is not None
    assert span.instrumentation_scope.name == "spanfold.instrumentation.litellm"
    return all_spans.attrs(span)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_openai_route_is_one_step_with_its_tokens_once(
    all_spans: Spans, mock: MockLLMServer, stream: bool
) -> None:
    mock.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]))
    request: dict[str, Any] = {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "Weather?"}]}
    request.update(api_base=mock.base_url, api_key="sk-test", max_retries=0, temperature=0.3)
    if stream:
        request["stream_options"] = {"include_usage": True}
        chunks = [chunk async for chunk in await litellm.acompletion(**request, stream=True)]
        assert chunks
    else:
        await litellm.acompletion(**request)
    attrs = _one(all_spans)  # not a second span from the openai SDK LiteLLM called
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.request.model"] == "gpt-4o-mini" and attrs["gen_ai.request.temperature"] == 0.3
    assert (attrs["server.address"], attrs["server.port"]) == ("127.0.0.1", mock.port)
    assert attrs["gen_ai.output.messages"][0]["parts"] == [
        {"type": "tool_call", "id": "call_mock_1", "name": "get_weather", "arguments": {"city": "Paris"}}
    ]
    assert attrs["gen_ai.usage.input_tokens"] == mock.requests[0].input_tokens


def test_groq_route_names_groq(all_spans: Spans, mock: MockLLMServer) -> None:
    mock.script(Reply.text("Fast."))
    response = litellm.completion(
        model="groq/llama-3.3-70b-versatile",
        messages=[{"role": "user", "content": "Hi"}],
        api_base=f"{mock.groq_base_url}/openai/v1",
        api_key="gsk-test",
    )
    assert response.choices[0].message.content == "Fast."
    attrs = _one(all_spans)
    assert attrs["gen_ai.provider.name"] == "groq"
    assert attrs["gen_ai.request.model"] == "llama-3.3-70b-versatile"
    assert mock.last_request.path == "/openai/v1/chat/completions"


def test_anthropic_route_through_litellms_own_client(all_spans: Spans, mock: MockLLMServer) -> None:
    mock.script(Reply.text("Bonjour."))
    response = litellm.completion(
        model="anthropic/claude-sonnet-5",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        api_base=f"{mock.anthropic_base_url}/v1/messages",
        api_key="sk-ant-test",
        max_tokens=64,
    )
    assert response.choices[0].message.content == "Bonjour."
    attrs = _one(all_spans)
    assert attrs["gen_ai.provider.name"] == "anthropic"
    assert attrs["gen_ai.usage.output_tokens"] == response.usage.completion_tokens
    assert mock.last_request.api == "messages"


def test_uninstrument_restores_litellm() -> None:
    original = litellm.completion
    instrumentor = LiteLLMInstrumentor()
    instrumentor.instrument(tracer_provider=TracerProvider(), runtime=Runtime())
    assert litellm.completion is not original and litellm.main.completion is not original
    instrumentor.uninstrument()
    assert litellm.completion is original and litellm.main.completion is original


async def test_a_stream_without_close_has_none_through_spanfold(all_spans: Spans, mock: MockLLMServer) -> None:
    """litellm's async stream has no ``close``: ``getattr(stream, "close", None)`` is None with spanfold too (code
    that closes what it can must not get a method that raises)."""
    mock.script(Reply.text("Sunny."))
    request: dict[str, Any] = {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "Weather?"}]}
    request.update(api_base=mock.base_url, api_key="sk-test", max_retries=0, stream=True)
    stream = await litellm.acompletion(**request)
    sdk_has_close = hasattr(stream.__wrapped__, "close")
    assert (getattr(stream, "close", None) is not None) == sdk_has_close
    assert [chunk async for chunk in stream]
    assert _one(all_spans)["gen_ai.output.messages"][0]["parts"] == [{"type": "text", "content": "Sunny."}]

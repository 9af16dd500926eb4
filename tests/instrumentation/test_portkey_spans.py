"""Portkey (issue 48): the real ``portkey-ai`` SDK, whose vendored copy of the openai SDK the openai patch never sees,
over real HTTP to the mock server. Its calls are traced as the provider the gateway routes them to, the objects it
returns untouched, and priced as that provider at Portkey's own gateway URL (carried to the mock by an httpx
transport that changes only where the connection goes)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from portkey_ai import AsyncPortkey, Portkey
from portkey_ai._vendor.openai.types.chat import ChatCompletionChunk
from portkey_ai.api_resources.types.chat_complete_type import ChatCompletions

import spanfold
from spanfold import counters
from spanfold.instrumentation.providers.portkey import PortkeyInstrumentor
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec, Usage

from ..exporter.test_cost_endpoints import ToMock
from .conftest import Spans, spans_of

QUESTION = [{"role": "user", "content": "Weather in Paris?"}]


@pytest.fixture
def portkey_spans() -> Iterator[Spans]:
    with spans_of(PortkeyInstrumentor()) as spans:
        yield spans


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        ("openai", "gpt-4o-mini", "openai"),
        ("anthropic", "claude-3-5-haiku", "anthropic"),
        ("@azure-openai", "gpt-4o-mini", "azure.ai.openai"),
        (None, "@openai/gpt-4o-mini", "openai"),
        (None, "gpt-4o-mini", "portkey"),
    ],
    ids=["openai", "anthropic", "catalog-slug", "model-prefix", "unsaid"],
)
def test_a_call_is_the_provider_the_gateway_reaches(
    portkey_spans: Spans, mock: MockLLMServer, provider: str | None, model: str, expected: str
) -> None:
    mock.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]))
    client = Portkey(api_key="pk-test", base_url=mock.base_url, provider=provider)
    result = client.chat.completions.create(model=model, messages=QUESTION, temperature=0.2)
    assert type(result) is ChatCompletions  # Portkey's own type, as without spanfold
    assert mock.requests[0].body == {"model": model, "messages": QUESTION, "temperature": 0.2}
    span = portkey_spans.one()
    attrs = portkey_spans.attrs(span)
    assert span.name == f"chat {model}"
    assert attrs["gen_ai.provider.name"] == expected
    assert attrs["server.address"] == "127.0.0.1" and attrs["server.port"] == mock.port
    assert attrs["gen_ai.request.temperature"] == 0.2
    assert attrs["gen_ai.output.messages"][0]["parts"] == [
        {"type": "tool_call", "id": "call_mock_1", "name": "get_weather", "arguments": {"city": "Paris"}}
    ]
    assert attrs["gen_ai.usage.input_tokens"] == result.usage.prompt_tokens  # type: ignore[union-attr]


def test_a_stream_gives_the_vendored_chunks_and_ends_the_span(portkey_spans: Spans, mock: MockLLMServer) -> None:
    mock.script(Reply.text("Sunny in Paris."))
    client = Portkey(api_key="pk-test", base_url=mock.base_url, provider="openai")
    chunks = list(client.chat.completions.create(model="gpt-4o-mini", messages=QUESTION, stream=True))
    assert chunks and all(type(c) is ChatCompletionChunk for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Sunny in Paris."
    attrs = portkey_spans.attrs()
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.output.messages"][0]["parts"] == [{"type": "text", "content": "Sunny in Paris."}]


def test_an_async_call(portkey_spans: Spans, mock: MockLLMServer) -> None:
    mock.script(Reply.text("Async."))

    async def call() -> Any:
        return await AsyncPortkey(api_key="pk-test", base_url=mock.base_url, provider="groq").chat.completions.create(
            model="llama-3.1-8b-instant", messages=QUESTION
        )

    assert asyncio.run(call()).choices[0].message.content == "Async."
    attrs = portkey_spans.attrs()
    assert attrs["gen_ai.provider.name"] == "groq" and attrs["gen_ai.response.id"] == "chatcmpl-mock-1"


TOKENS = (1000, 200)


def priced(tmp_path: Path, provider: str | None) -> dict[str, Any]:
    """One call through Portkey's gateway URL, folded; the run's metadata."""
    pytest.importorskip("genai_prices")
    spanfold.init(output=str(tmp_path))
    try:
        with MockLLMServer() as server:
            server.script(Reply.text("Hello.", usage=Usage(*TOKENS)))
            client = Portkey(
                api_key="pk-test",
                base_url="https://api.portkey.ai/v1",
                provider=provider,
                http_client=httpx.Client(transport=ToMock(server)),
            )
            with spanfold.agent("gateway"):
                client.chat.completions.create(model="gpt-4o-mini", messages=QUESTION)
            assert spanfold.flush(timeout=30)
        (line,) = (tmp_path / "traces.meta.jsonl").read_text().splitlines()
        metadata: dict[str, Any] = json.loads(line)["metadata"]
        return metadata
    finally:
        spanfold.shutdown()


def test_priced_as_the_provider_at_portkeys_gateway(tmp_path: Path) -> None:
    meta = priced(tmp_path, "openai")
    (step,) = [s for s in meta["steps"] if s["kind"] == "model"]
    assert step["cost"]["priced_by"] == "genai-prices" and step["cost"]["amount"] > 0


def test_a_call_whose_provider_the_client_does_not_say_is_priced_by_nobody(tmp_path: Path) -> None:
    before = counters.snapshot().get("cost.unknown_model", 0)
    meta = priced(tmp_path, None)
    (step,) = [s for s in meta["steps"] if s["kind"] == "model"]
    assert "cost" not in step
    assert counters.snapshot()["cost.unknown_model"] == before + 1

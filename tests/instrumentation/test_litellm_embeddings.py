"""LiteLLM ``embedding`` / ``aembedding``: the real ``litellm`` over real HTTP to the mock server (routed to OpenAI's
``/v1/embeddings`` through the openai SDK), one ``embeddings {model}`` span at LiteLLM's level (the openai SDK call
inside makes none: tokens once), and a run's folded metadata steps: embeddings (the upstream model and provider,
tokens, inputs, LiteLLM's own cost), then the model call."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import litellm
import pytest

import spanfold
from spanfold.instrumentation.providers.litellm import LiteLLMInstrumentor
from spanfold.testing import MockLLMServer, Reply, count_tokens

from ..conftest import Traced
from .conftest import Spans, spans_of

MODEL = "text-embedding-3-small"
TEXTS = ["Paris is the capital of France.", "Tokyo is the capital of Japan."]


@pytest.fixture
def litellm_spans() -> Iterator[Spans]:
    with spans_of(LiteLLMInstrumentor()) as spans:
        yield spans


def test_embedding_span(litellm_spans: Spans, mock: MockLLMServer) -> None:
    out = litellm.embedding(f"openai/{MODEL}", TEXTS, api_base=mock.base_url, api_key="k", dimensions=8)
    assert [len(d["embedding"]) for d in out.data] == [8, 8]
    span = litellm_spans.one()
    attrs = litellm_spans.attrs(span)
    assert span.name == f"embeddings {MODEL}"
    assert (attrs["gen_ai.operation.name"], attrs["gen_ai.provider.name"]) == ("embeddings", "openai")
    assert attrs["spanfold.embeddings.input_count"] == 2
    assert attrs["gen_ai.embeddings.dimension.count"] == 8
    assert attrs["gen_ai.usage.input_tokens"] == sum(count_tokens(t) for t in TEXTS)
    assert (attrs["server.address"], attrs["server.port"]) == ("127.0.0.1", mock.port)


def test_folded_run(traced: Traced) -> None:
    question = "What is the capital of France?"

    async def run(base_url: str) -> None:
        with spanfold.agent("rag"):
            await litellm.aembedding(model=f"openai/{MODEL}", input=[question], api_base=base_url, api_key="k")
            await litellm.acompletion(
                model="openai/gpt-4o-mini",
                messages=[{"role": "user", "content": question}],
                api_base=base_url,
                api_key="k",
            )

    with MockLLMServer() as server:
        server.script(Reply.text("Paris."))
        asyncio.run(run(server.base_url))
    traced.traces()
    metas: list[dict[str, Any]] = [line.get("metadata", line) for line in traced.metas()]
    (meta,) = [m for m in metas if m.get("name") == "rag"]
    embeddings, model = meta["steps"]  # one step each: the openai SDK's calls inside made none
    assert (embeddings["kind"], embeddings["model"], embeddings["inputs"]) == ("embeddings", MODEL, 1)
    assert embeddings["usage"]["input_tokens"] == count_tokens(question)
    assert embeddings["cost"]["amount"] > 0
    assert embeddings["event"] == 0 and embeddings["start"] < model["start"]
    assert model["kind"] == "model" and model["event"] == 1

"""Ollama ``embed``: the real ``ollama`` SDK over real HTTP to the mock server's ``/api/embed``, its
``embeddings {model}`` span (positional arguments too), and a run's folded metadata steps: embeddings (model, tokens,
inputs; a local model no price knows, so no cost), then the model call."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import ollama
import pytest

import spanfold
from spanfold.instrumentation.providers.ollama import OllamaInstrumentor
from spanfold.testing import MockLLMServer, Reply, count_tokens
from spanfold.testing.wire.embeddings import vector

from ..conftest import Traced
from .conftest import Spans, spans_of

MODEL = "nomic-embed-text"
TEXTS = ["Paris is the capital of France.", "Tokyo is the capital of Japan."]


@pytest.fixture
def ollama_spans() -> Iterator[Spans]:
    with spans_of(OllamaInstrumentor()) as spans:
        yield spans


def test_embed_span(ollama_spans: Spans, mock: MockLLMServer) -> None:
    out = ollama.Client(host=mock.ollama_host).embed(MODEL, TEXTS, dimensions=8)  # positional, as the SDK allows
    assert [list(v) for v in out.embeddings] == [vector(t, 8) for t in TEXTS]  # as without spanfold
    span = ollama_spans.one()
    attrs = ollama_spans.attrs(span)
    assert span.name == f"embeddings {MODEL}"
    assert (attrs["gen_ai.operation.name"], attrs["gen_ai.provider.name"]) == ("embeddings", "ollama")
    assert (attrs["gen_ai.request.model"], attrs["gen_ai.response.model"]) == (MODEL, MODEL)
    assert attrs["spanfold.embeddings.input_count"] == 2
    assert attrs["gen_ai.embeddings.dimension.count"] == 8
    assert attrs["gen_ai.usage.input_tokens"] == sum(count_tokens(t) for t in TEXTS)
    assert mock.last_request.path == "/api/embed"


def test_failure(ollama_spans: Spans, mock: MockLLMServer) -> None:
    mock.script_embeddings(Reply.error(500, "model not loaded"))
    with pytest.raises(ollama.ResponseError, match="model not loaded"):
        ollama.Client(host=mock.ollama_host).embed(model=MODEL, input="x")
    assert ollama_spans.one().status.status_code.name == "ERROR"


def test_folded_run(traced: Traced) -> None:
    question = "What is the capital of France?"

    async def run(client: ollama.AsyncClient) -> None:
        with spanfold.agent("rag"):
            await client.embed(model=MODEL, input=question)
            await client.chat(model="llama3.2", messages=[{"role": "user", "content": question}])

    with MockLLMServer() as server:
        server.script(Reply.text("Paris."))
        asyncio.run(run(ollama.AsyncClient(host=server.ollama_host)))
    traced.traces()
    metas: list[dict[str, Any]] = [line.get("metadata", line) for line in traced.metas()]
    (meta,) = [m for m in metas if m.get("name") == "rag"]
    embeddings, model = meta["steps"]
    assert (embeddings["kind"], embeddings["model"], embeddings["inputs"]) == ("embeddings", MODEL, 1)
    assert embeddings["usage"]["input_tokens"] == count_tokens(question)
    assert "cost" not in embeddings  # a local model: no price
    assert embeddings["event"] == 0 and embeddings["start"] < model["start"]
    assert model["kind"] == "model" and model["event"] == 1

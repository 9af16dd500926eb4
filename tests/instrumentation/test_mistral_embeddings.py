"""Mistral embeddings: the real ``mistralai`` SDK over real HTTP to the mock server (``/v1/embeddings``, Mistral's
body), its ``embeddings {model}`` span, and a run's folded metadata steps: embeddings (model, tokens, inputs, cost),
then the model call."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from mistralai.client import Mistral
from mistralai.client.errors import SDKError

import spanfold
from spanfold.instrumentation.providers.mistral import MistralInstrumentor
from spanfold.testing import MockLLMServer, Reply, count_tokens
from spanfold.testing.wire.embeddings import vector

from ..conftest import Traced
from .conftest import Spans, spans_of

MODEL = "mistral-embed"
TEXTS = ["Paris is the capital of France.", "Tokyo is the capital of Japan."]
PRICE_PER_TOKEN = 0.1 / 1_000_000  # genai-prices' mistral-embed: $0.10 per million input tokens


@pytest.fixture
def mistral_spans() -> Iterator[Spans]:
    with spans_of(MistralInstrumentor()) as spans:
        yield spans


def _client(server: MockLLMServer) -> Mistral:
    return Mistral(api_key="mistral-test", server_url=server.mistral_server_url)


def test_embeddings_span(mistral_spans: Spans, mock: MockLLMServer) -> None:
    out = _client(mock).embeddings.create(model=MODEL, inputs=TEXTS, output_dimension=8)
    assert [d.embedding for d in out.data] == [vector(t, 8) for t in TEXTS]  # as without spanfold
    span = mistral_spans.one()
    attrs = mistral_spans.attrs(span)
    assert span.name == f"embeddings {MODEL}"
    assert (attrs["gen_ai.operation.name"], attrs["gen_ai.provider.name"]) == ("embeddings", "mistral_ai")
    assert (attrs["gen_ai.request.model"], attrs["gen_ai.response.model"]) == (MODEL, MODEL)
    assert attrs["spanfold.embeddings.input_count"] == 2
    assert attrs["gen_ai.embeddings.dimension.count"] == 8
    assert attrs["gen_ai.usage.input_tokens"] == sum(count_tokens(t) for t in TEXTS)
    assert mock.last_request.path == "/mistral/v1/embeddings"
    assert mock.last_request.body["output_dimension"] == 8  # Mistral's own name on the wire


def test_failure(mistral_spans: Spans, mock: MockLLMServer) -> None:
    mock.script_embeddings(Reply.error(500, "embeddings down"))
    with pytest.raises(SDKError):
        _client(mock).embeddings.create(model=MODEL, inputs="x")
    assert mistral_spans.one().status.status_code.name == "ERROR"


def test_folded_run(traced: Traced) -> None:
    question = "What is the capital of France?"

    async def run(client: Mistral) -> None:
        with spanfold.agent("rag"):
            await client.embeddings.create_async(model=MODEL, inputs=[question])
            await client.chat.complete_async(
                model="mistral-small-latest", messages=[{"role": "user", "content": question}]
            )

    with MockLLMServer() as server:
        server.script(Reply.text("Paris."))
        asyncio.run(run(_client(server)))
    traced.traces()
    metas: list[dict[str, Any]] = [line.get("metadata", line) for line in traced.metas()]
    (meta,) = [m for m in metas if m.get("name") == "rag"]
    embeddings, model = meta["steps"]
    assert (embeddings["kind"], embeddings["model"], embeddings["inputs"]) == ("embeddings", MODEL, 1)
    assert embeddings["usage"]["input_tokens"] == count_tokens(question)
    assert embeddings["cost"]["amount"] == pytest.approx(count_tokens(question) * PRICE_PER_TOKEN)
    assert embeddings["event"] == 0 and embeddings["start"] < model["start"]
    assert model["kind"] == "model" and model["event"] == 1

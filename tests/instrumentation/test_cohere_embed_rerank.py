"""Cohere embed and rerank: the real ``cohere`` v2 client over real HTTP to the mock server's ``/v2/embed`` and
``/v2/rerank``, their spans (``embeddings {model}``; a rerank the conventions' ``retrieval`` that Phoenix shows as a
reranker), and a run's folded metadata steps one by one: embeddings (model, tokens, inputs, cost), rerank (model,
``top_k``, query, the documents by index in the reranker's order), the model call; the event list unchanged."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import cohere
import pytest

import spanfold
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.cohere import CohereInstrumentor
from spanfold.testing import MockLLMServer, Reply, count_tokens
from spanfold.testing.wire.embeddings import vector
from spanfold.testing.wire.rag.cohere import relevance

from ..conftest import Traced
from .conftest import Spans, spans_of

EMBED = "embed-v4.0"
RERANK = "rerank-v3.5"
QUESTION = "What is the capital of France?"
DOCS = ["Bananas are a yellow fruit.", "Paris is the capital of France.", "Tokyo is the capital of Japan."]
PRICE_PER_TOKEN = 0.12 / 1_000_000  # genai-prices' embed-v4.0: $0.12 per million input tokens


@pytest.fixture
def cohere_spans() -> Iterator[Spans]:
    with spans_of(CohereInstrumentor()) as spans:
        yield spans


def _client(server: MockLLMServer) -> cohere.ClientV2:
    return cohere.ClientV2(api_key="co-test", base_url=server.cohere_base_url, max_retries=0)


def test_embed_span(cohere_spans: Spans, mock: MockLLMServer) -> None:
    out = _client(mock).embed(
        model=EMBED, input_type="search_document", texts=DOCS[:2], embedding_types=["float", "int8"], output_dimension=8
    )
    assert out.embeddings.float_ == [vector(DOCS[0], 8), vector(DOCS[1], 8)]  # as without spanfold
    assert out.embeddings.int8 is not None and len(out.embeddings.int8[0]) == 8
    span = cohere_spans.one()
    attrs = cohere_spans.attrs(span)
    assert span.name == f"embeddings {EMBED}"
    assert (attrs["gen_ai.operation.name"], attrs["gen_ai.provider.name"]) == ("embeddings", "cohere")
    assert attrs["gen_ai.request.model"] == EMBED
    assert attrs["spanfold.embeddings.input_count"] == 2
    assert attrs["gen_ai.embeddings.dimension.count"] == 8
    assert attrs["gen_ai.request.encoding_formats"] == ("float", "int8")
    assert attrs["gen_ai.usage.input_tokens"] == count_tokens(DOCS[0]) + count_tokens(DOCS[1])
    assert (attrs["server.address"], attrs["server.port"]) == ("127.0.0.1", mock.port)
    assert mock.last_request.path == "/v2/embed"


def test_rerank_span(cohere_spans: Spans, mock: MockLLMServer) -> None:
    out = _client(mock).rerank(model=RERANK, query=QUESTION, documents=DOCS, top_n=2)
    order = sorted(range(len(DOCS)), key=lambda i: -relevance(QUESTION, DOCS[i]))[:2]
    assert [r.index for r in out.results] == order
    span = cohere_spans.one()
    attrs = dict(span.attributes or {})
    assert span.name == f"retrieval {RERANK}"
    assert attrs["gen_ai.operation.name"] == "retrieval"
    assert attrs["openinference.span.kind"] == "RERANKER"  # what Phoenix shows it as
    assert (attrs["gen_ai.retrieval.query.text"], attrs["gen_ai.retrieval.top_k"]) == (QUESTION, 2)
    documents = json.loads(str(attrs["gen_ai.retrieval.documents"]))
    assert documents == [{"id": str(r.index), "score": r.relevance_score} for r in out.results]


def test_capture_off_keeps_no_query(cohere_spans: Spans, mock: MockLLMServer) -> None:
    cohere_spans.use(Runtime(capture_content=False))
    _client(mock).rerank(model=RERANK, query=QUESTION, documents=DOCS)
    attrs = dict(cohere_spans.one().attributes or {})
    assert "gen_ai.retrieval.query.text" not in attrs and "input.value" not in attrs
    assert [d["id"] for d in json.loads(str(attrs["gen_ai.retrieval.documents"]))] == ["1", "2", "0"]


def _meta(traced: Traced) -> dict[str, Any]:
    traced.traces()
    metas = [line.get("metadata", line) for line in traced.metas()]
    (meta,) = [m for m in metas if m.get("name") == "rag"]
    return meta


def test_folded_rag_run(traced: Traced) -> None:
    with MockLLMServer() as server:
        server.script(Reply.text("Paris."))
        client = _client(server)
        with spanfold.agent("rag"):
            client.embed(model=EMBED, input_type="search_query", texts=[QUESTION], embedding_types=["float"])
            ranked = client.rerank(model=RERANK, query=QUESTION, documents=DOCS, top_n=1)
            best = DOCS[ranked.results[0].index]
            client.chat(model="command-a-03-2025", messages=[{"role": "user", "content": f"{best}\n{QUESTION}"}])
    meta = _meta(traced)
    embeddings, rerank, model = meta["steps"]
    tokens = count_tokens(QUESTION)
    assert (embeddings["kind"], embeddings["model"], embeddings["inputs"]) == ("embeddings", EMBED, 1)
    assert embeddings["usage"]["input_tokens"] == tokens
    assert embeddings["cost"]["amount"] == pytest.approx(tokens * PRICE_PER_TOKEN)
    assert rerank["kind"] == "rerank"
    assert (rerank["model"], rerank["top_k"], rerank["query"]) == (RERANK, 1, QUESTION)
    assert rerank["documents"] == [{"id": "1", "score": relevance(QUESTION, DOCS[1])}]
    assert embeddings["start"] < rerank["start"] < model["start"]
    assert embeddings["event"] == rerank["event"] == 0  # before the prompt the reranked text went into
    assert model["kind"] == "model" and model["event"] == 1
    assert meta["cost"]["by_model"][EMBED] == pytest.approx(embeddings["cost"]["amount"])


def test_async_and_failed_calls_in_a_run(traced: Traced) -> None:
    async def run(server: MockLLMServer) -> None:
        client = cohere.AsyncClientV2(api_key="co-test", base_url=server.cohere_base_url, max_retries=0)
        with spanfold.agent("rag"):
            await client.embed(model=EMBED, input_type="search_query", texts=["a", "b"], embedding_types=["float"])
            with pytest.raises(cohere.core.ApiError):
                await client.rerank(model=RERANK, query="q", documents=["x"])
            await client.rerank(model=RERANK, query="q", documents=["x", "y"])

    with MockLLMServer() as server:
        server.script_embeddings(Reply(), Reply.error(500, "rerank down"))
        asyncio.run(run(server))
    first, failed, rerank = _meta(traced)["steps"]
    assert (first["kind"], first["inputs"]) == ("embeddings", 2)
    assert failed["kind"] == "rerank" and failed["error"]["type"].endswith("InternalServerError")
    assert rerank["kind"] == "rerank" and [d["id"] for d in rerank["documents"]] != []

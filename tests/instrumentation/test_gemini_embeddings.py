"""google-genai ``embed_content``: the real SDK over real HTTP to the mock server (the Developer API's
``:batchEmbedContents``; Vertex AI's ``:predict`` for a text embedding model, ``:embedContent`` and
``:batchEmbedContents`` for a Gemini one), its ``embeddings {model}`` span, and a run's folded metadata steps: the
embeddings step (model, tokens, inputs, cost) before the model call; the event list unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from google import genai
from google.genai import errors, types

import spanfold
from spanfold.instrumentation.providers.gemini.patches import GeminiInstrumentor
from spanfold.testing import MockLLMServer, Reply, count_tokens
from spanfold.testing.wire.embeddings import vector

from ..conftest import Traced
from .conftest import Spans, spans_of
from .test_gemini_fold import client_for  # Vertex AI with dummy credentials: no network

MODEL = "gemini-embedding-001"
TEXTS = ["Paris is the capital of France.", "Tokyo is the capital of Japan."]
PRICE_PER_TOKEN = 0.15 / 1_000_000  # genai-prices' gemini-embedding-001: $0.15 per million input tokens


@pytest.fixture
def gemini_spans() -> Iterator[Spans]:
    with spans_of(GeminiInstrumentor()) as spans:
        yield spans


def _client(server: MockLLMServer) -> genai.Client:
    return genai.Client(api_key="mock-key", http_options={"base_url": server.gemini_base_url})


@pytest.mark.parametrize(
    ("model", "contents", "route"),
    [
        ("text-embedding-005", TEXTS, ":predict"),  # each instance's tokens in its statistics
        ("gemini-embedding-001", TEXTS[0], ":embedContent"),
        ("gemini-embedding-001", TEXTS, ":batchEmbedContents"),
    ],
    ids=["predict", "embed-content", "batch"],
)
def test_vertex_ai_embed_content_span(
    gemini_spans: Spans, mock: MockLLMServer, model: str, contents: Any, route: str
) -> None:
    texts = contents if isinstance(contents, list) else [contents]
    client = client_for(mock, vertex=True)
    out = client.models.embed_content(
        model=model, contents=contents, config=types.EmbedContentConfig(output_dimensionality=8)
    )
    assert [e.values for e in out.embeddings or []] == [vector(t, 8) for t in texts]  # as without spanfold
    assert mock.last_request.path.endswith(f"/publishers/google/models/{model}{route}")
    span = gemini_spans.one()
    attrs = gemini_spans.attrs(span)
    assert span.name == f"embeddings {model}"
    assert (attrs["gen_ai.operation.name"], attrs["gen_ai.provider.name"]) == ("embeddings", "gcp.vertex_ai")
    assert attrs["spanfold.embeddings.input_count"] == len(texts)
    assert attrs["gen_ai.embeddings.dimension.count"] == 8
    assert attrs["gen_ai.usage.input_tokens"] == sum(count_tokens(t) for t in texts)


def test_embed_content_span(gemini_spans: Spans, mock: MockLLMServer) -> None:
    config = types.EmbedContentConfig(output_dimensionality=8, task_type="RETRIEVAL_DOCUMENT")
    client = _client(mock)  # kept: a Client closes its HTTP client when collected
    out = client.models.embed_content(model=MODEL, contents=TEXTS, config=config)
    assert [e.values for e in out.embeddings or []] == [vector(t, 8) for t in TEXTS]  # as without spanfold
    span = gemini_spans.one()
    attrs = gemini_spans.attrs(span)
    assert span.name == f"embeddings {MODEL}"
    assert (attrs["gen_ai.operation.name"], attrs["gen_ai.provider.name"]) == ("embeddings", "gcp.gemini")
    assert attrs["spanfold.embeddings.input_count"] == 2
    assert attrs["gen_ai.embeddings.dimension.count"] == 8
    assert attrs["gen_ai.usage.input_tokens"] == sum(count_tokens(t) for t in TEXTS)
    assert mock.last_request.path.endswith(f"/models/{MODEL}:batchEmbedContents")


def test_failure(gemini_spans: Spans, mock: MockLLMServer) -> None:
    mock.script_embeddings(Reply.error(500, "embeddings down"))
    client = _client(mock)
    with pytest.raises(errors.ServerError):
        client.models.embed_content(model=MODEL, contents="x")
    span = gemini_spans.one()
    assert span.status.status_code.name == "ERROR"
    assert gemini_spans.attrs(span)["spanfold.embeddings.input_count"] == 1


def _meta(traced: Traced) -> dict[str, Any]:
    traced.traces()
    (meta,) = [m for m in (line.get("metadata", line) for line in traced.metas()) if m.get("name") == "rag"]
    return meta


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_folded_run(traced: Traced, use_async: bool) -> None:
    question = "What is the capital of France?"

    async def arun(client: genai.Client) -> None:
        with spanfold.agent("rag"):
            await client.aio.models.embed_content(model=MODEL, contents=question)
            await client.aio.models.generate_content(model="gemini-2.5-flash", contents=question)

    with MockLLMServer() as server:
        server.script(Reply.text("Paris."))
        client = _client(server)
        if use_async:
            asyncio.run(arun(client))
        else:
            with spanfold.agent("rag"):
                client.models.embed_content(model=MODEL, contents=question)
                client.models.generate_content(model="gemini-2.5-flash", contents=question)
    embeddings, model = _meta(traced)["steps"]
    assert (embeddings["kind"], embeddings["model"], embeddings["inputs"]) == ("embeddings", MODEL, 1)
    assert embeddings["usage"]["input_tokens"] == count_tokens(question)
    assert embeddings["cost"]["amount"] == pytest.approx(count_tokens(question) * PRICE_PER_TOKEN)
    assert embeddings["event"] == 0 and embeddings["start"] < model["start"]
    assert model["kind"] == "model" and model["event"] == 1


def test_a_vertex_ai_text_embedding_model_is_counted_not_priced(traced: Traced) -> None:
    """genai-prices has no price for Vertex AI's text-embedding-005: the step keeps its tokens and says no cost
    (never a cost of 0)."""
    question = "What is the capital of France?"
    with MockLLMServer() as server:
        client = client_for(server, vertex=True)
        with spanfold.agent("rag"):
            client.models.embed_content(model="text-embedding-005", contents=question)
    (embeddings,) = _meta(traced)["steps"]
    assert (embeddings["kind"], embeddings["model"], embeddings["inputs"]) == ("embeddings", "text-embedding-005", 1)
    assert embeddings["usage"]["input_tokens"] == count_tokens(question)
    assert "cost" not in embeddings
    meta = _meta(traced)
    assert "cost" not in meta and "cost_usd" not in meta  # the run's only call had no price: no total either

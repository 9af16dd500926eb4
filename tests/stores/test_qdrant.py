"""Qdrant searches under spanfold.init(): a real in-memory collection (``QdrantClient(":memory:")``, Qdrant's local
mode), its vectors from the mock server's embeddings route (a hashed bag of words: documents sharing the question's
words rank first), searched with ``query_points`` inside ``spanfold.agent`` before the model call the retrieved text
fills. The folded run's metadata steps, one by one: the embeddings call, the retrieval (``retrieval qdrant``, the
collection as the store, the ``limit`` as ``top_k``, the points' ids and scores as Qdrant ranked them, the payload
text only with content capture on), the model call; sync and async."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from qdrant_client import AsyncQdrantClient, QdrantClient, models

import spanfold
from spanfold.testing import MockLLMServer, Reply

from ..conftest import Traced

EMBEDDINGS = "text-embedding-3-small"
QUESTION = "What is the capital of France?"
DOCS = {1: "Paris is the capital of France.", 2: "Bananas are a yellow fruit.", 3: "Tokyo is the capital of Japan."}
COLLECTION = "facts"


def _vectors(server: MockLLMServer, texts: list[str]) -> list[list[float]]:
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    return [d.embedding for d in client.embeddings.create(model=EMBEDDINGS, input=texts).data]


def _points(server: MockLLMServer) -> list[models.PointStruct]:
    vectors = _vectors(server, list(DOCS.values()))
    return [
        models.PointStruct(id=i, vector=v, payload={"text": t}) for (i, t), v in zip(DOCS.items(), vectors, strict=True)
    ]


def _prompt(found: models.QueryResponse) -> list[dict[str, str]]:
    context = "\n".join(str((p.payload or {})["text"]) for p in found.points)
    system = f"Answer from the context:\n{context}"
    return [{"role": "system", "content": system}, {"role": "user", "content": QUESTION}]


def _sync(server: MockLLMServer) -> models.QueryResponse:
    store = QdrantClient(":memory:")
    store.create_collection(COLLECTION, vectors_config=models.VectorParams(size=16, distance=models.Distance.COSINE))
    store.upsert(COLLECTION, points=_points(server))  # indexing: outside the run
    llm = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    with spanfold.agent("rag"):
        (query,) = _vectors(server, [QUESTION])
        found = store.query_points(COLLECTION, query=query, limit=2)
        llm.chat.completions.create(model="gpt-4o-mini", messages=_prompt(found))  # type: ignore[arg-type]
    return found


def _async(server: MockLLMServer) -> models.QueryResponse:
    async def run() -> models.QueryResponse:
        store = AsyncQdrantClient(":memory:")
        params = models.VectorParams(size=16, distance=models.Distance.COSINE)
        await store.create_collection(COLLECTION, vectors_config=params)
        await store.upsert(COLLECTION, points=_points(server))
        llm = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        with spanfold.agent("rag"):
            (query,) = _vectors(server, [QUESTION])
            found = await store.query_points(COLLECTION, query=query, limit=2)
            await llm.chat.completions.create(model="gpt-4o-mini", messages=_prompt(found))  # type: ignore[arg-type]
        return found

    return asyncio.run(run())


def _run(traced: Traced, *, use_async: bool) -> tuple[models.QueryResponse, list[dict[str, Any]], dict[str, Any]]:
    with MockLLMServer() as server:
        server.script(Reply.text("Paris."))
        found = _async(server) if use_async else _sync(server)
    runs = [(t, m.get("metadata", m)) for t, m in zip(traced.traces(), traced.metas(), strict=True)]
    (run,) = [(t, m) for t, m in runs if m.get("name") == "rag"]
    return found, *run


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_query_points_is_a_retrieval_step(traced: Traced, global_spans: Any, use_async: bool) -> None:
    found, events, meta = _run(traced, use_async=use_async)
    assert [p.id for p in found.points] == [1, 3]  # as without spanfold: the points sharing the question's words
    assert [e["role"] for e in events] == ["system", "user", "assistant"]
    assert DOCS[1] in events[0]["content"]
    embeddings, retrieval, model = meta["steps"]
    assert embeddings["kind"] == "embeddings" and embeddings["inputs"] == 1
    assert retrieval["kind"] == "retrieval"
    assert (retrieval["store"], retrieval["top_k"]) == (COLLECTION, 2)
    assert "query" not in retrieval  # a vector is no query text
    assert [(d["id"], d["text"]) for d in retrieval["documents"]] == [("1", DOCS[1]), ("3", DOCS[3])]
    assert [d["score"] for d in retrieval["documents"]] == [pytest.approx(p.score) for p in found.points]
    assert embeddings["start"] < retrieval["start"] < model["start"]
    assert retrieval["event"] == 0  # before the prompt it filled
    (span,) = [s for s in global_spans.get_finished_spans() if s.name.startswith("retrieval")]
    assert span.name == "retrieval qdrant"


def test_capture_off_keeps_ids_and_scores(traced_off: Traced) -> None:
    _found, _events, meta = _run(traced_off, use_async=False)
    retrieval = meta["steps"][1]
    assert [sorted(d) for d in retrieval["documents"]] == [["id", "score"], ["id", "score"]]
    assert [d["id"] for d in retrieval["documents"]] == ["1", "3"]


def test_a_missing_collection_raises_as_before(traced: Traced) -> None:
    store = QdrantClient(":memory:")
    with spanfold.agent("rag"), pytest.raises(ValueError, match="not found"):
        store.query_points("nowhere", query=[0.0] * 16)
    (meta,) = [line.get("metadata", line) for line in (traced.traces() and traced.metas())]
    (step,) = meta["steps"]
    assert (step["kind"], step["store"], step["top_k"], step["error"]["type"]) == (
        "retrieval",
        "nowhere",
        10,
        "ValueError",
    )

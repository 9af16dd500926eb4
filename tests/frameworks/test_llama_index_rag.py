"""A LlamaIndex RAG query against the mock server, end to end (the llama-index venv of ``.ci/frameworks``): three
nodes indexed into an in-memory ``VectorStoreIndex`` through ``OpenAIEmbedding`` (the mock server's hashed bag of
words: nodes sharing the question's words rank first), asked through a query engine whose node postprocessor of the
test's own keeps the best ``top_n`` (a rerank), the answer from LlamaIndex's ``OpenAI`` LLM. The folded run's
metadata steps, one by one: the retrieval (the vector store, ``top_k``, the query, the nodes with their scores), the
embeddings call it made, the rerank, the model call; sync (``query``) and async (``aquery``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.embeddings.openai import OpenAIEmbedding
from llama_index.llms.openai import OpenAI

import spanfold
from spanfold.testing import MockLLMServer, Reply, count_tokens

from ..conftest import Traced
from ..rag_corpus import DOCS, EMBEDDINGS, QUESTION


@pytest.fixture(autouse=True)
def _no_downloaded_tokenizer() -> Any:
    """LlamaIndex's default tokenizer (tiktoken's) downloads its encoding: words instead."""
    before = Settings._tokenizer
    Settings.tokenizer = str.split
    yield
    Settings._tokenizer = before


class KeepBest(BaseNodePostprocessor):
    """A reranker of the test's own: the ``top_n`` best scored nodes, best first."""

    top_n: int = 1

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> Any:
        return sorted(nodes, key=lambda n: n.score or 0.0, reverse=True)[: self.top_n]


def _index(server: MockLLMServer) -> VectorStoreIndex:
    embed = OpenAIEmbedding(model=EMBEDDINGS, api_base=server.base_url, api_key="k", max_retries=0)
    nodes = [TextNode(text=text, id_=ident) for ident, text in DOCS.items()]
    return VectorStoreIndex(nodes, embed_model=embed)  # indexing: outside the run


def _run(traced: Traced, server: MockLLMServer, *, use_async: bool) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
    index = _index(server)
    llm = OpenAI(model="gpt-4o-mini", api_base=server.base_url, api_key="k", max_retries=0)
    engine = index.as_query_engine(llm=llm, similarity_top_k=2, node_postprocessors=[KeepBest(top_n=1)])
    server.script(Reply.text("Paris."))

    async def arun() -> Any:
        with spanfold.agent("rag"):
            return await engine.aquery(QUESTION)

    if use_async:
        response = asyncio.run(arun())
    else:
        with spanfold.agent("rag"):
            response = engine.query(QUESTION)
    runs = [(t, m.get("metadata", m)) for t, m in zip(traced.traces(), traced.metas(), strict=True)]
    (run,) = [(t, m) for t, m in runs if m.get("name") == "rag"]
    return response, *run


@pytest.mark.parametrize("use_async", [False, True], ids=["query", "aquery"])
def test_query_engine_steps(traced: Traced, use_async: bool) -> None:
    with MockLLMServer() as server:
        response, events, meta = _run(traced, server, use_async=use_async)
    assert str(response) == "Paris."
    assert [n.node.node_id for n in response.source_nodes] == ["paris"]  # as without spanfold
    assert events[-1] == {"role": "assistant", "content": "Paris."}
    assert any(DOCS["paris"] in str(e["content"]) for e in events[:-1])  # retrieved text where the engine put it
    retrieval, embeddings, rerank, model = meta["steps"]
    assert retrieval["kind"] == "retrieval"
    assert (retrieval["store"], retrieval["top_k"], retrieval["query"]) == ("SimpleVectorStore", 2, QUESTION)
    assert [d["id"] for d in retrieval["documents"]] == ["paris", "tokyo"]  # the nodes sharing the question's words
    scores = [d["score"] for d in retrieval["documents"]]
    assert scores[0] > scores[1] > 0
    assert [d["text"] for d in retrieval["documents"]] == [DOCS["paris"], DOCS["tokyo"]]
    assert embeddings["kind"] == "embeddings" and embeddings["model"] == EMBEDDINGS
    assert embeddings["inputs"] == 1
    assert embeddings["usage"]["input_tokens"] == count_tokens(QUESTION)
    assert retrieval["start"] <= embeddings["start"] and retrieval["duration_ms"] >= embeddings["duration_ms"]
    assert rerank["kind"] == "rerank"
    assert (rerank["store"], rerank["top_k"], rerank["query"]) == ("KeepBest", 1, QUESTION)
    assert [(d["id"], d["score"], d["text"]) for d in rerank["documents"]] == [("paris", scores[0], DOCS["paris"])]
    assert retrieval["start"] < rerank["start"] < model["start"]
    assert model["kind"] == "model" and model["model"].startswith("gpt-4o-mini")
    # cost: the venv has no genai-prices (the cost extra); the embeddings' price is tested in test_langchain_rag.py


def test_capture_off_keeps_ids_and_scores(traced_off: Traced) -> None:
    with MockLLMServer() as server:
        _response, _events, meta = _run(traced_off, server, use_async=False)
    retrieval, _embeddings, rerank, _model = meta["steps"]
    assert "query" not in retrieval and "query" not in rerank
    assert [sorted(d) for d in retrieval["documents"]] == [["id", "score"], ["id", "score"]]
    assert [d["id"] for d in rerank["documents"]] == ["paris"]


def test_a_failing_retriever_raises_as_before(traced: Traced) -> None:
    class Broken(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            raise LookupError("index offline")

    with spanfold.agent("rag"), pytest.raises(LookupError, match="index offline"):
        Broken().retrieve("q")
    (meta,) = [line.get("metadata", line) for line in (traced.traces() and traced.metas())]
    (step,) = meta["steps"]
    assert (step["kind"], step["store"], step["error"]["type"]) == ("retrieval", "Broken", "LookupError")

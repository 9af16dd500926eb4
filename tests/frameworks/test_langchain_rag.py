"""A LangChain RAG agent against the mock server, end to end: documents indexed through ``OpenAIEmbeddings`` into a
retriever of the test's own over an in-memory store (langchain-core's ``InMemoryVectorStore`` needs numpy, which the
venv lacks; this one ranks by cosine in plain Python and puts each score in the document's metadata), asked through
``BaseRetriever.invoke`` / ``ainvoke``, the answer from ``ChatOpenAI`` with the retrieved text in the prompt. The
folded trace's metadata steps, one by one: the retrieval (store, ``top_k``, the query and the documents in the order
the store returned them), the embeddings call it made, the model call."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_openai import ChatOpenAI, OpenAIEmbeddings

import spanfold
from spanfold.testing import MockLLMServer, Reply, count_tokens
from spanfold.trace.model import TraceMeta
from spanfold.trace.render import render_trace

from ..conftest import Traced
from ..rag_corpus import DOCS, EMBEDDINGS, QUESTION


class MemoryRetriever(BaseRetriever):
    """Documents and their vectors in memory; the query embedded through ``embeddings``, the ``k`` nearest first."""

    embeddings: Any
    vectors: dict[str, list[float]]
    search_kwargs: dict[str, Any]

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        q = self.embeddings.embed_query(query)
        scored = sorted(
            (
                (sum(a * b for a, b in zip(q, v, strict=True)) / (math.hypot(*q) * math.hypot(*v)), i)
                for i, v in self.vectors.items()
            ),
            reverse=True,
        )
        k = self.search_kwargs["k"]
        return [Document(DOCS[i], id=i, metadata={"score": round(score, 4)}) for score, i in scored[:k]]


def _store(server: MockLLMServer) -> MemoryRetriever:
    embeddings = OpenAIEmbeddings(
        model=EMBEDDINGS, base_url=server.base_url, api_key="k", check_embedding_ctx_length=False, max_retries=0
    )
    vectors = dict(zip(DOCS, embeddings.embed_documents(list(DOCS.values())), strict=True))
    return MemoryRetriever(embeddings=embeddings, vectors=vectors, search_kwargs={"k": 2})


def _answer(server: MockLLMServer, context: str) -> list[Any]:
    return [SystemMessage(f"Answer from the context:\n{context}"), HumanMessage(QUESTION)]


def _run(traced: Traced, server: MockLLMServer, *, use_async: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    retriever = _store(server)  # indexing: outside the run
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="k", max_retries=0)  # type: ignore[arg-type]
    server.script(Reply.text("Paris."))

    async def arun() -> None:
        with spanfold.agent("rag"):
            docs = await retriever.ainvoke(QUESTION)  # BaseRetriever runs the sync lookup in an executor
            await llm.ainvoke(_answer(server, "\n".join(d.page_content for d in docs)))

    if use_async:
        asyncio.run(arun())
    else:
        with spanfold.agent("rag"):
            docs = retriever.invoke(QUESTION)
            llm.invoke(_answer(server, "\n".join(d.page_content for d in docs)))
    traces = traced.traces()
    metas = [line.get("metadata", line) for line in traced.metas()]
    runs = [(t, m) for t, m in zip(traces, metas, strict=True) if m.get("name") == "rag"]
    assert len(runs) == 1
    return runs[0]


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_rag_agent_steps(traced: Traced, use_async: bool) -> None:
    with MockLLMServer() as server:
        events, meta = _run(traced, server, use_async=use_async)
    assert [e["role"] for e in events] == ["system", "user", "assistant"]  # the conversation, as the model saw it
    assert "Paris is the capital of France." in events[0]["content"]  # retrieved text where the app put it
    retrieval, embeddings, model = meta["steps"]
    assert retrieval["kind"] == "retrieval"
    assert (retrieval["store"], retrieval["top_k"], retrieval["query"]) == ("MemoryRetriever", 2, QUESTION)
    ids = [d["id"] for d in retrieval["documents"]]
    assert ids == ["paris", "tokyo"]  # as the store ranked them: the words the question shares
    scores = [d["score"] for d in retrieval["documents"]]
    assert scores[0] > scores[1] > 0
    assert [d["text"] for d in retrieval["documents"]] == [DOCS["paris"], DOCS["tokyo"]]
    assert retrieval["event"] == 0  # before the prompt it filled
    assert embeddings["kind"] == "embeddings" and embeddings["model"] == EMBEDDINGS
    assert embeddings["inputs"] == 1
    assert embeddings["usage"]["input_tokens"] == count_tokens(QUESTION)
    assert retrieval["start"] <= embeddings["start"] < model["start"]
    assert retrieval["duration_ms"] >= embeddings["duration_ms"]
    assert model["kind"] == "model" and model["event"] == 2
    assert meta["cost"]["by_model"][EMBEDDINGS] == pytest.approx(embeddings["cost"]["amount"])
    lines = render_trace([], TraceMeta.from_dict(meta))  # spanfold show: a line per step beside the conversation
    assert any("retrieval" in line and "MemoryRetriever" in line and "2 documents" in line for line in lines)
    sent = f"{EMBEDDINGS}, 1 input, {count_tokens(QUESTION)} tokens, $"  # what it was sent: it answers no tokens
    assert any(sent in line for line in lines), lines


def test_capture_off_keeps_ids_not_text(traced_off: Traced) -> None:
    with MockLLMServer() as server:
        _events, meta = _run(traced_off, server, use_async=False)
    retrieval = meta["steps"][0]
    assert retrieval["kind"] == "retrieval" and "query" not in retrieval
    assert [sorted(d) for d in retrieval["documents"]] == [["id", "score"], ["id", "score"]]
    assert [d["id"] for d in retrieval["documents"]] == ["paris", "tokyo"]


def test_a_failing_retriever_raises_as_before(traced: Traced) -> None:
    from langchain_core.retrievers import BaseRetriever

    class Broken(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Any]:
            raise LookupError("index offline")

    with spanfold.agent("rag"), pytest.raises(LookupError, match="index offline"):
        Broken().invoke("q")
    (meta,) = [line.get("metadata", line) for line in (traced.traces() and traced.metas())]
    (step,) = meta["steps"]
    assert (step["kind"], step["store"], step["error"]["type"]) == ("retrieval", "Broken", "LookupError")

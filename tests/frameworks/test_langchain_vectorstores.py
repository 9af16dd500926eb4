"""LangChain vector stores searched directly under spanfold.init(): langchain-core's ``InMemoryVectorStore`` over
``OpenAIEmbeddings`` against the mock server (its embeddings route: a hashed bag of words, so documents sharing the
question's words rank first), its documents added outside the run, searched inside ``spanfold.agent`` before the model
call the retrieved text fills. The folded run's metadata steps, field by field: the retrieval (``retrieval
InMemoryVectorStore``: the store's class, ``k`` as ``top_k``, the query, the documents' ids, scores and text), the
embeddings call it made nested in it, the model call; one span per search (the store's ``similarity_search`` calls its
own ``similarity_search_with_score``; a retriever over the store calls the store), a store class defined after
``init()`` traced too, capture off, a failing store."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_openai import ChatOpenAI, OpenAIEmbeddings

import spanfold
from spanfold.testing import MockLLMServer, Reply, count_tokens

from ..conftest import Traced
from ..rag_corpus import DOCS, EMBEDDINGS, QUESTION


def _store(server: MockLLMServer) -> InMemoryVectorStore:
    embeddings = OpenAIEmbeddings(
        model=EMBEDDINGS, base_url=server.base_url, api_key="k", check_embedding_ctx_length=False, max_retries=0
    )
    store = InMemoryVectorStore(embeddings)
    store.add_documents([Document(text, id=i) for i, text in DOCS.items()])  # indexing: outside the run
    return store


def _texts(found: list[Any]) -> str:
    return "\n".join((d[0] if isinstance(d, tuple) else d).page_content for d in found)


def _run(traced: Traced, search: str) -> tuple[list[Any], list[dict[str, Any]], dict[str, Any]]:
    """Search the store with its method ``search`` (k=2), then ask the model with what it found."""
    with MockLLMServer() as server:
        store = _store(server)
        llm = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="k", max_retries=0)  # type: ignore[arg-type]
        server.script(Reply.text("Paris."))

        def prompt(found: list[Any]) -> list[Any]:
            return [SystemMessage(f"Answer from the context:\n{_texts(found)}"), HumanMessage(QUESTION)]

        async def arun() -> list[Any]:
            with spanfold.agent("rag"):
                found: list[Any] = await getattr(store, search)(QUESTION, k=2)
                await llm.ainvoke(prompt(found))
            return found

        if search.startswith("a"):
            found = asyncio.run(arun())
        else:
            with spanfold.agent("rag"):
                found = getattr(store, search)(QUESTION, k=2)
                llm.invoke(prompt(found))
    runs = [(t, m.get("metadata", m)) for t, m in zip(traced.traces(), traced.metas(), strict=True)]
    (run,) = [(t, m) for t, m in runs if m.get("name") == "rag"]
    return found, *run


def _retrieval_spans(spans: Any) -> list[Any]:
    return [s for s in spans.get_finished_spans() if s.name.startswith("retrieval")]


@pytest.mark.parametrize("search", ["similarity_search", "asimilarity_search_with_score"])
def test_a_store_search_is_a_retrieval_step(traced: Traced, global_spans: Any, search: str) -> None:
    found, events, meta = _run(traced, search)
    docs = [d[0] if isinstance(d, tuple) else d for d in found]
    assert [d.id for d in docs] == ["paris", "tokyo"]  # as without spanfold: the documents sharing the question's words
    assert [e["role"] for e in events] == ["system", "user", "assistant"]
    assert DOCS["paris"] in events[0]["content"]
    retrieval, embeddings, model = meta["steps"]
    assert retrieval["kind"] == "retrieval"
    assert (retrieval["store"], retrieval["top_k"], retrieval["query"]) == ("InMemoryVectorStore", 2, QUESTION)
    assert [(d["id"], d["text"]) for d in retrieval["documents"]] == [
        ("paris", DOCS["paris"]),
        ("tokyo", DOCS["tokyo"]),
    ]
    scores = [d.get("score") for d in retrieval["documents"]]
    if search == "similarity_search":
        assert scores == [None, None]  # plain documents: the store gave no score
    else:  # the store's score, as it paired each document with it: InMemoryVectorStore's cosine similarity
        assert scores == [pytest.approx(score) for _doc, score in found]
        assert scores[0] > scores[1] > 0
    assert embeddings["kind"] == "embeddings" and embeddings["inputs"] == 1  # the query embedded inside the search
    assert embeddings["usage"]["input_tokens"] == count_tokens(QUESTION)
    assert retrieval["start"] <= embeddings["start"] < model["start"]
    assert retrieval["duration_ms"] >= embeddings["duration_ms"]
    assert retrieval["event"] == 0  # before the prompt it filled
    assert model["kind"] == "model" and model["event"] == 2
    (span,) = _retrieval_spans(global_spans)  # one search, one span: the store's inner searches run untouched
    assert span.name == "retrieval InMemoryVectorStore"


def test_a_retriever_over_the_store_is_one_retrieval(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer() as server:
        retriever = _store(server).as_retriever(search_kwargs={"k": 2})
        with spanfold.agent("rag"):
            docs = retriever.invoke(QUESTION)
    assert [d.id for d in docs] == ["paris", "tokyo"]
    (meta,) = [m.get("metadata", m) for m in traced.metas() if m.get("metadata", m).get("name") == "rag"]
    retrieval, embeddings = meta["steps"]
    assert (retrieval["store"], retrieval["top_k"], retrieval["query"]) == ("InMemoryVectorStore", 2, QUESTION)
    assert [d["id"] for d in retrieval["documents"]] == ["paris", "tokyo"]
    assert embeddings["kind"] == "embeddings"
    (span,) = _retrieval_spans(global_spans)  # the retriever's: the store's search inside it is part of it
    assert span.name == "retrieval InMemoryVectorStore"


def test_capture_off_keeps_ids_and_scores(traced_off: Traced) -> None:
    found, _events, meta = _run(traced_off, "similarity_search_with_score")
    retrieval = meta["steps"][0]
    assert retrieval["kind"] == "retrieval" and "query" not in retrieval
    assert (retrieval["store"], retrieval["top_k"]) == ("InMemoryVectorStore", 2)
    assert [sorted(d) for d in retrieval["documents"]] == [["id", "score"], ["id", "score"]]
    assert [(d["id"], d["score"]) for d in retrieval["documents"]] == [
        (doc.id, pytest.approx(score)) for doc, score in found
    ]


class _Letters(Embeddings):
    """A vector per text: how often each of a few letters occurs in it."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [float(text.lower().count(c)) for c in "aeiou"]


def test_a_store_class_defined_after_init_is_traced(traced: Traced, global_spans: Any) -> None:
    class Shelf(VectorStore):  # a store package imported after init(): its own similarity_search, abstract in the base
        def __init__(self, texts: Iterable[str]) -> None:
            self.docs = [Document(t, id=str(i)) for i, t in enumerate(texts)]

        def add_texts(self, texts: Iterable[str], metadatas: Any = None, **kwargs: Any) -> list[str]:
            raise NotImplementedError

        @classmethod
        def from_texts(cls, texts: list[str], embedding: Any, metadatas: Any = None, **kwargs: Any) -> Shelf:
            return cls(texts)

        def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
            return [d for d in self.docs if set(query.split()) & set(d.page_content.split())][:k]

    class Subshelf(InMemoryVectorStore):  # a store subclassing a store, its own search calling the parent's
        def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
            return super().similarity_search(query, k=k, **kwargs)

    sub = Subshelf(_Letters())
    sub.add_texts(["banana", "kiwi"], ids=["b", "k"])
    fruit = Shelf(["red apple", "green pear", "red cherry"])
    with spanfold.agent("rag"):
        shelf_found = fruit.similarity_search("red")
        sub_found = sub.similarity_search("bananas", k=1)
        # the base's asimilarity_search: runs similarity_search in an executor, part of the same search
        async_found = asyncio.run(fruit.asimilarity_search("green", k=1))
    assert ([d.id for d in shelf_found], [d.id for d in sub_found], [d.id for d in async_found]) == (
        ["0", "2"],
        ["b"],
        ["1"],
    )
    (meta,) = [m.get("metadata", m) for m in traced.metas()]
    shelf, subshelf, in_executor = meta["steps"]
    assert (shelf["store"], shelf["top_k"], shelf["query"]) == ("Shelf", 4, "red")  # k: LangChain's default
    assert [d["id"] for d in shelf["documents"]] == ["0", "2"]
    assert (subshelf["store"], subshelf["top_k"], [d["id"] for d in subshelf["documents"]]) == ("Subshelf", 1, ["b"])
    assert (in_executor["store"], in_executor["top_k"], in_executor["query"]) == ("Shelf", 1, "green")
    assert [d["id"] for d in in_executor["documents"]] == ["1"]
    assert [s.name for s in _retrieval_spans(global_spans)] == [
        "retrieval Shelf",
        "retrieval Subshelf",
        "retrieval Shelf",
    ]


class _Offline(_Letters):
    def embed_query(self, text: str) -> list[float]:
        raise LookupError("embeddings offline")


def test_a_failing_search_raises_as_before(traced: Traced) -> None:
    store = InMemoryVectorStore(_Offline())
    with spanfold.agent("rag"), pytest.raises(LookupError, match="embeddings offline"):
        store.similarity_search(QUESTION, k=3)
    (meta,) = [m.get("metadata", m) for m in traced.metas()]
    (step,) = meta["steps"]
    assert (step["kind"], step["store"], step["top_k"], step["query"], step["error"]["type"]) == (
        "retrieval",
        "InMemoryVectorStore",
        3,
        QUESTION,
        "LookupError",
    )

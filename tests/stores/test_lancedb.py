"""LanceDB searches under spanfold.init(): a real table in a local directory database (``tmp_path``), its rows' vectors
from the mock server's embeddings route (a hashed bag of words: rows sharing the question's words rank first), searched
inside ``spanfold.agent`` before the model call the retrieved text fills: a vector search collected with ``to_list``
(sync) and ``to_arrow`` (async). The folded run's metadata steps, one by one: the embeddings call, the retrieval
(``retrieval lancedb``: the table as the store, the ``limit`` as ``top_k``, the rows' ids, distances and text), the
model call. Then a full-text and a hybrid search (the query text; a hybrid's legs not traced again), capture off, a
failing search."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import lancedb
import openai
import pytest
from lancedb.index import FTS

import spanfold
from spanfold.testing import MockLLMServer, Reply
from spanfold.testing.wire.embeddings import vector

from ..conftest import Traced
from ..rag_corpus import DOCS, EMBEDDINGS, QUESTION


def _vectors(server: MockLLMServer, texts: list[str]) -> list[list[float]]:
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    return [d.embedding for d in client.embeddings.create(model=EMBEDDINGS, input=texts).data]


def _rows(vectors: list[list[float]]) -> list[dict[str, Any]]:
    return [{"id": i, "text": t, "vector": v} for (i, t), v in zip(DOCS.items(), vectors, strict=True)]


def _prompt(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    system = "Answer from the context:\n" + "\n".join(str(row["text"]) for row in rows)
    return [{"role": "system", "content": system}, {"role": "user", "content": QUESTION}]


def _sync(server: MockLLMServer, directory: Path) -> list[dict[str, Any]]:
    facts = lancedb.connect(directory).create_table("facts", _rows(_vectors(server, list(DOCS.values()))))
    llm = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    with spanfold.agent("rag"):
        (query,) = _vectors(server, [QUESTION])
        found: list[dict[str, Any]] = facts.search(query).limit(2).to_list()
        llm.chat.completions.create(model="gpt-4o-mini", messages=_prompt(found))  # type: ignore[arg-type]
    return found


def _async(server: MockLLMServer, directory: Path) -> list[dict[str, Any]]:
    async def run() -> list[dict[str, Any]]:
        db = await lancedb.connect_async(directory)
        facts = await db.create_table("facts", _rows(_vectors(server, list(DOCS.values()))))
        llm = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        with spanfold.agent("rag"):
            (query,) = _vectors(server, [QUESTION])
            found: list[dict[str, Any]] = (await facts.vector_search(query).limit(2).to_arrow()).to_pylist()
            await llm.chat.completions.create(model="gpt-4o-mini", messages=_prompt(found))  # type: ignore[arg-type]
        return found

    return asyncio.run(run())


def _run(traced: Traced, directory: Path, *, use_async: bool) -> tuple[list[Any], list[Any], dict[str, Any]]:
    with MockLLMServer() as server:
        server.script(Reply.text("Paris."))
        found = _async(server, directory) if use_async else _sync(server, directory)
    runs = [(t, m.get("metadata", m)) for t, m in zip(traced.traces(), traced.metas(), strict=True)]
    (run,) = [(t, m) for t, m in runs if m.get("name") == "rag"]
    return found, *run


def _retrieval_spans(spans: Any) -> list[Any]:
    return [s for s in spans.get_finished_spans() if s.name.startswith("retrieval")]


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_vector_search_is_a_retrieval_step(traced: Traced, global_spans: Any, tmp_path: Path, use_async: bool) -> None:
    found, events, meta = _run(traced, tmp_path / "db", use_async=use_async)
    assert [row["id"] for row in found] == ["paris", "tokyo"]  # as without spanfold: the rows sharing the words
    assert [e["role"] for e in events] == ["system", "user", "assistant"]
    assert DOCS["paris"] in events[0]["content"]
    embeddings, retrieval, model = meta["steps"]
    assert embeddings["kind"] == "embeddings" and embeddings["inputs"] == 1
    assert retrieval["kind"] == "retrieval"
    assert (retrieval["store"], retrieval["top_k"]) == ("facts", 2)
    assert "query" not in retrieval  # a vector is no query text
    assert [(d["id"], d["text"]) for d in retrieval["documents"]] == [
        ("paris", DOCS["paris"]),
        ("tokyo", DOCS["tokyo"]),
    ]
    distances = [d["score"] for d in retrieval["documents"]]
    assert distances == [pytest.approx(row["_distance"]) for row in found]
    assert 0 <= distances[0] < distances[1]  # distances: lower is closer
    assert embeddings["start"] < retrieval["start"] < model["start"]
    assert retrieval["duration_ms"] >= 0 and retrieval["event"] == 0  # before the prompt it filled
    assert model["kind"] == "model" and model["event"] == 2
    (span,) = _retrieval_spans(global_spans)
    assert span.name == "retrieval lancedb"


def _table(directory: Path) -> Any:
    facts = lancedb.connect(directory).create_table("facts", _rows([vector(t) for t in DOCS.values()]))
    facts.create_index("text", config=FTS())
    return facts


def _steps(traced: Traced) -> list[dict[str, Any]]:
    (meta,) = [line.get("metadata", line) for line in traced.metas()]
    steps: list[dict[str, Any]] = meta["steps"]
    return steps


def test_full_text_and_hybrid_searches(traced: Traced, global_spans: Any, tmp_path: Path) -> None:
    facts = _table(tmp_path / "db")
    with spanfold.agent("rag"):
        words = facts.search("capital France", query_type="fts").to_list()  # no limit: LanceDB's 10
        both = facts.search(query_type="hybrid").vector(vector(QUESTION)).text("capital France").limit(2).to_list()
    assert [row["id"] for row in words] == ["paris", "tokyo"] and [row["id"] for row in both] == ["paris", "tokyo"]
    fts, hybrid = _steps(traced)
    assert (fts["store"], fts["top_k"], fts["query"]) == ("facts", 10, "capital France")
    assert [(d["id"], d["text"]) for d in fts["documents"]] == [("paris", DOCS["paris"]), ("tokyo", DOCS["tokyo"])]
    assert [d["score"] for d in fts["documents"]] == [pytest.approx(row["_score"]) for row in words]  # BM25
    assert (hybrid["store"], hybrid["top_k"], hybrid["query"]) == ("facts", 2, "capital France")
    assert [d["score"] for d in hybrid["documents"]] == [pytest.approx(row["_relevance_score"]) for row in both]
    assert [d["id"] for d in hybrid["documents"]] == ["paris", "tokyo"]
    # a hybrid search's vector and full-text legs are part of it (its context carried into its thread pool)
    assert [s.name for s in _retrieval_spans(global_spans)] == ["retrieval lancedb", "retrieval lancedb"]


def test_async_full_text_and_hybrid_searches(traced: Traced, global_spans: Any, tmp_path: Path) -> None:
    _table(tmp_path / "db")

    async def run() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        facts = await (await lancedb.connect_async(tmp_path / "db")).open_table("facts")
        with spanfold.agent("rag"):
            words = await (await facts.search("yellow fruit", query_type="fts")).to_list()
            hybrid = facts.query().nearest_to(vector(QUESTION)).nearest_to_text("capital France").limit(2)
            both = await hybrid.to_list()
        return words, both

    words, both = asyncio.run(run())
    assert [row["id"] for row in words] == ["bananas"] and [row["id"] for row in both] == ["paris", "tokyo"]
    fts, hybrid = _steps(traced)
    assert (fts["store"], fts["top_k"], fts["query"]) == ("facts", 10, "yellow fruit")
    assert [(d["id"], d["score"]) for d in fts["documents"]] == [("bananas", pytest.approx(words[0]["_score"]))]
    assert (hybrid["store"], hybrid["top_k"], hybrid["query"]) == ("facts", 2, "capital France")
    assert [(d["id"], d["score"]) for d in hybrid["documents"]] == [
        (row["id"], pytest.approx(row["_relevance_score"])) for row in both
    ]
    # the hybrid's legs (gathered in its task) are part of it
    assert [s.name for s in _retrieval_spans(global_spans)] == ["retrieval lancedb", "retrieval lancedb"]


def test_capture_off_keeps_ids_and_distances(traced_off: Traced, tmp_path: Path) -> None:
    facts = _table(tmp_path / "db")
    with spanfold.agent("rag"):
        found = facts.search(vector(QUESTION)).limit(2).to_list()
        facts.search("capital France", query_type="fts").limit(1).to_list()
    near, words = _steps(traced_off)
    assert (near["store"], near["top_k"], "query" in near, "query" in words) == ("facts", 2, False, False)
    assert [sorted(d) for d in near["documents"]] == [["id", "score"], ["id", "score"]]
    assert [(d["id"], d["score"]) for d in near["documents"]] == [
        (row["id"], pytest.approx(row["_distance"])) for row in found
    ]


def test_a_failing_search_raises_as_before(traced: Traced, tmp_path: Path) -> None:
    facts = _table(tmp_path / "db")
    with spanfold.agent("rag"), pytest.raises(ValueError, match="nowhere"):
        facts.search(vector(QUESTION)).where("nowhere > 1").limit(3).to_list()
    (step,) = _steps(traced)
    assert (step["kind"], step["store"], step["top_k"], step["error"]["type"]) == (
        "retrieval",
        "facts",
        3,
        "ValueError",
    )

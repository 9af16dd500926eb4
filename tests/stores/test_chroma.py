"""Chroma queries under spanfold.init(): a real collection in an in-process ``EphemeralClient`` (and, async, in a
``chroma run`` server reached through ``AsyncHttpClient``), embedded by an embedding function of the test's own, never
Chroma's default (it downloads a model): Chroma's ``OpenAIEmbeddingFunction`` pointed at the mock server's embeddings
route, or the same hashed bag of words computed in the test. Queried with ``Collection.query`` inside
``spanfold.agent`` before the model call the retrieved text fills. The folded run's metadata steps, one by one: the
retrieval (``retrieval chroma``: the collection as the store, ``n_results`` as ``top_k``, the one query text, the
records' ids, distances as scores and documents), the embeddings call the collection made for the query text, nested
in it, and the model call; several queries in one call; capture off; a failing query."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chromadb
import openai
import pytest
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import OpenAIEmbeddingFunction

import spanfold
from spanfold.testing import MockLLMServer, Reply, count_tokens
from spanfold.testing.wire.embeddings import vector

from ..conftest import Traced

EMBEDDINGS = "text-embedding-3-small"
QUESTION = "What is the capital of France?"
DOCS = {"paris": "Paris is the capital of France.", "bananas": "Bananas are a yellow fruit.", "tokyo": "Tokyo is big."}


def _settings() -> chromadb.Settings:
    """A client's settings (each its own: a client sets its implementation in them)."""
    return chromadb.Settings(anonymized_telemetry=False)


class HashedWords(EmbeddingFunction[Documents]):
    """The mock server's embeddings, computed here: a hashed bag of words (texts sharing words are near)."""

    def __init__(self) -> None:
        pass

    def __call__(self, input: Documents) -> Embeddings:
        import numpy as np

        return [np.array(vector(text), dtype=np.float32) for text in input]

    @staticmethod
    def name() -> str:
        return "hashed-words"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> HashedWords:
        return HashedWords()


@pytest.fixture
def client() -> Iterator[Any]:
    """An in-process client; its collections (shared by every EphemeralClient of the process) dropped after."""
    store = chromadb.EphemeralClient(settings=_settings())
    yield store
    for collection in store.list_collections():
        store.delete_collection(collection.name)


def _openai_embeddings(server: MockLLMServer, monkeypatch: pytest.MonkeyPatch) -> OpenAIEmbeddingFunction:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("CHROMA_OPENAI_API_KEY", "k")
    return OpenAIEmbeddingFunction(model_name=EMBEDDINGS, api_base=server.base_url)


def _prompt(found: Any) -> list[dict[str, str]]:
    system = "Answer from the context:\n" + "\n".join(found["documents"][0])
    return [{"role": "system", "content": system}, {"role": "user", "content": QUESTION}]


def _rag(traced: Traced, ask: Any) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
    """``ask(server)`` indexes and queries; the run named ``rag`` it made."""
    with MockLLMServer() as server:
        server.script(Reply.text("Paris."))
        found = ask(server)
    runs = [(t, m.get("metadata", m)) for t, m in zip(traced.traces(), traced.metas(), strict=True)]
    (run,) = [(t, m) for t, m in runs if m.get("name") == "rag"]
    return found, *run


def _check_rag_steps(found: Any, events: list[dict[str, Any]], meta: dict[str, Any], spans: Any) -> None:
    assert found["ids"] == [["paris", "tokyo"]]  # as without spanfold: the records sharing the question's words
    assert [e["role"] for e in events] == ["system", "user", "assistant"]
    assert DOCS["paris"] in events[0]["content"]
    retrieval, embeddings, model = meta["steps"]
    assert retrieval["kind"] == "retrieval"
    assert (retrieval["store"], retrieval["top_k"], retrieval["query"]) == ("facts", 2, QUESTION)
    assert [(d["id"], d["text"]) for d in retrieval["documents"]] == [
        ("paris", DOCS["paris"]),
        ("tokyo", DOCS["tokyo"]),
    ]
    distances = [d["score"] for d in retrieval["documents"]]
    assert distances == [pytest.approx(x) for x in found["distances"][0]]
    assert 0 <= distances[0] < distances[1]  # distances: lower is closer
    assert embeddings["kind"] == "embeddings" and embeddings["model"] == EMBEDDINGS  # the query text embedded inside
    assert embeddings["inputs"] == 1 and embeddings["usage"]["input_tokens"] == count_tokens(QUESTION)
    assert retrieval["start"] <= embeddings["start"] < model["start"]
    assert retrieval["duration_ms"] >= embeddings["duration_ms"]
    assert retrieval["event"] == 0  # before the prompt it filled
    assert model["kind"] == "model" and model["event"] == 2
    (span,) = [s for s in spans.get_finished_spans() if s.name.startswith("retrieval")]
    assert span.name == "retrieval chroma"


def test_query_is_a_retrieval_step(
    traced: Traced, global_spans: Any, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def ask(server: MockLLMServer) -> Any:
        facts = client.create_collection("facts", embedding_function=_openai_embeddings(server, monkeypatch))
        facts.add(ids=list(DOCS), documents=list(DOCS.values()))  # indexing: outside the run
        llm = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        with spanfold.agent("rag"):
            found = facts.query(query_texts=[QUESTION], n_results=2)
            llm.chat.completions.create(model="gpt-4o-mini", messages=_prompt(found))  # type: ignore[arg-type]
        return found

    _check_rag_steps(*_rag(traced, ask), global_spans)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[int]:
    """``chroma run`` (the server chromadb ships, in-process Rust) on a free port, its data in ``tmp_path``."""
    port = _free_port()
    chroma = Path(sys.executable).with_name("chroma")
    command = [str(chroma), "run", "--path", str(tmp_path / "chroma"), "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_async_query_is_a_retrieval_step(
    traced: Traced, global_spans: Any, chroma_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    def ask(server: MockLLMServer) -> Any:
        async def run() -> Any:
            remote = await chromadb.AsyncHttpClient(host="127.0.0.1", port=chroma_server, settings=_settings())
            facts = await remote.create_collection("facts", embedding_function=_openai_embeddings(server, monkeypatch))
            await facts.add(ids=list(DOCS), documents=list(DOCS.values()))
            llm = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
            with spanfold.agent("rag"):
                found = await facts.query(query_texts=QUESTION, n_results=2)  # one text, not in a list
                await llm.chat.completions.create(model="gpt-4o-mini", messages=_prompt(found))  # type: ignore[arg-type]
            return found

        return asyncio.run(run())

    _check_rag_steps(*_rag(traced, ask), global_spans)


def _facts(client: Any) -> Any:
    facts = client.create_collection("facts", embedding_function=HashedWords())
    facts.add(ids=list(DOCS), documents=list(DOCS.values()))
    return facts


def _steps(traced: Traced) -> list[dict[str, Any]]:
    (meta,) = [line.get("metadata", line) for line in traced.metas()]
    steps: list[dict[str, Any]] = meta["steps"]
    return steps


def test_several_queries_are_one_step_with_every_record(traced: Traced, client: Any) -> None:
    facts = _facts(client)
    with spanfold.agent("rag"):
        found = facts.query(query_texts=[QUESTION, "a yellow fruit"], n_results=1)  # Chroma's default otherwise: 10
        near = facts.query(query_embeddings=[vector("Tokyo")])
    assert found["ids"] == [["paris"], ["bananas"]]
    batch, default = _steps(traced)
    assert (batch["kind"], batch["store"], batch["top_k"]) == ("retrieval", "facts", 1)
    assert "query" not in batch  # two texts: no one query
    assert [(d["id"], d["text"]) for d in batch["documents"]] == [
        ("paris", DOCS["paris"]),
        ("bananas", DOCS["bananas"]),
    ]
    assert [d["score"] for d in batch["documents"]] == [pytest.approx(found["distances"][i][0]) for i in (0, 1)]
    assert (default["top_k"], "query" in default) == (10, False)  # n_results not given; a vector is no query text
    assert [d["id"] for d in default["documents"]] == near["ids"][0] and near["ids"][0][0] == "tokyo"  # all 3


def test_capture_off_keeps_ids_and_distances(traced_off: Traced, client: Any) -> None:
    facts = _facts(client)
    with spanfold.agent("rag"):
        found = facts.query(query_texts=[QUESTION], n_results=2)
    (retrieval,) = _steps(traced_off)
    assert (retrieval["store"], retrieval["top_k"], "query" in retrieval) == ("facts", 2, False)
    assert [sorted(d) for d in retrieval["documents"]] == [["id", "score"], ["id", "score"]]
    assert [(d["id"], d["score"]) for d in retrieval["documents"]] == [
        (i, pytest.approx(x)) for i, x in zip(found["ids"][0], found["distances"][0], strict=True)
    ]


def test_a_failing_query_raises_as_before(traced: Traced, client: Any) -> None:
    facts = _facts(client)
    with spanfold.agent("rag"), pytest.raises(chromadb.errors.InvalidArgumentError):
        facts.query(query_embeddings=[[0.5, 0.5]], n_results=2)  # 2 dimensions, the collection's have 16
    (step,) = _steps(traced)
    assert (step["kind"], step["store"], step["top_k"], step["error"]["type"]) == (
        "retrieval",
        "facts",
        2,
        "chromadb.errors.InvalidArgumentError",
    )

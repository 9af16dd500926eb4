"""mem0 memory operations under spanfold.init(): a real ``mem0.Memory`` / ``AsyncMemory`` (mem0ai 2.x, in the mem0
venv of ``.ci/frameworks``: it pins protobuf < 7), its openai LLM and embedder pointed at the mock server, its vector
store Qdrant's local mode in the test's directory, its history in a SQLite file there, telemetry off. The mock server
answers mem0's fact-extraction call with the facts the test scripts (JSON, as mem0 asks for); its embeddings are a
hashed bag of words, so a search finds the facts that share the query's words.

Inside ``spanfold.agent``: ``add`` (a ``create_memory`` span: the created memories' ids; the embeddings call, Qdrant
search of existing memories and the extraction call under it), ``search`` (``search_memory``: query, ``top_k``, the
memories found with ids and scores), ``update`` and ``delete`` of one memory, ``delete_all`` of a user's. The spans
and the folded metadata steps are checked field by field; sync and async; capture off; a failing search raises as
before."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("MEM0_TELEMETRY", "False")  # mem0 reads both when imported: no posthog, no ~/.mem0
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="spanfold-mem0-"))
import mem0  # after the two above; collected only where installed (tests/stores/conftest.py)

import spanfold
from spanfold.testing import MockLLMServer, Reply

from ..conftest import Traced

STORE = "facts"
FACTS = ["User plays tennis on Sundays", "User lives in Paris"]
QUESTION = "Where does the user live? Paris?"
NEW_TEXT = "User plays tennis on Saturdays"


def _config(server: MockLLMServer, directory: Path) -> dict[str, Any]:
    openai = {"api_key": "k", "openai_base_url": server.base_url}
    return {
        "llm": {"provider": "openai", "config": {"model": "gpt-4o-mini", **openai}},
        "embedder": {
            "provider": "openai",
            "config": {"model": "text-embedding-3-small", "embedding_dims": 16, **openai},
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {"collection_name": STORE, "embedding_model_dims": 16, "path": str(directory / "qdrant")},
        },
        "history_db_path": str(directory / "history.db"),
    }


def _extracted() -> Reply:
    """mem0's fact extraction answered: ``{"memory": [{"text": ...}]}``."""
    return Reply.text(json.dumps({"memory": [{"text": fact} for fact in FACTS]}))


def _sync(server: MockLLMServer, directory: Path) -> dict[str, Any]:
    memory = mem0.Memory.from_config(_config(server, directory))
    with spanfold.agent("remember"):
        added = memory.add("I play tennis on Sundays and I live in Paris", user_id="alice", run_id="s1")
        found = memory.search(QUESTION, top_k=2, filters={"user_id": "alice"})
        first = added["results"][0]["id"]
        memory.update(first, text=NEW_TEXT)
        memory.delete(first)
        memory.delete_all(user_id="alice")
    return {"added": added, "found": found}


def _async(server: MockLLMServer, directory: Path) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        memory = mem0.AsyncMemory.from_config(_config(server, directory))
        with spanfold.agent("remember"):
            added = await memory.add("I play tennis on Sundays and I live in Paris", user_id="alice", run_id="s1")
            found = await memory.search(QUESTION, top_k=2, filters={"user_id": "alice"})
            first = added["results"][0]["id"]
            await memory.update(first, text=NEW_TEXT)
            await memory.delete(first)
            await memory.delete_all(user_id="alice")
        return {"added": added, "found": found}

    return asyncio.run(run())


def _run(traced: Traced, directory: Path, *, use_async: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    with MockLLMServer() as server:
        server.script(_extracted())
        out = _async(server, directory) if use_async else _sync(server, directory)
    metas = [m.get("metadata", m) for m in traced.metas()]
    ((at, meta),) = [(n, m) for n, m in enumerate(metas) if m.get("name") == "remember"]
    out["events"] = traced.traces()[at]
    return out, meta


def _memory_steps(meta: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in meta["steps"] if s["kind"] == "memory"]


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_memory_operations_are_memory_steps(traced: Traced, global_spans: Any, tmp_path: Path, use_async: bool) -> None:
    out, meta = _run(traced, tmp_path, use_async=use_async)
    added, found = out["added"]["results"], out["found"]["results"]
    assert [(r["memory"], r["event"]) for r in added] == [(f, "ADD") for f in FACTS]  # as without spanfold
    assert [r["memory"] for r in found] == [FACTS[1]]  # the fact sharing the question's words

    create, search, update, delete, delete_all = _memory_steps(meta)
    assert (create["operation"], create["store"]) == ("create_memory", STORE)
    assert create["documents"] == [{"id": r["id"], "score": None, "text": r["memory"]} for r in added]
    assert "query" not in create and "top_k" not in create

    assert (search["operation"], search["store"], search["top_k"], search["query"]) == (
        "search_memory",
        STORE,
        2,
        QUESTION,
    )
    assert search["documents"] == [{"id": found[0]["id"], "score": pytest.approx(found[0]["score"]), "text": FACTS[1]}]

    assert (update["operation"], update["store"]) == ("update_memory", STORE)
    assert update["documents"] == [{"id": added[0]["id"], "score": None, "text": NEW_TEXT}]
    assert (delete["operation"], delete["documents"]) == ("delete_memory", [{"id": added[0]["id"], "score": None}])
    assert (delete_all["operation"], delete_all["store"]) == ("delete_memory", STORE)
    assert "documents" not in delete_all  # mem0 does not say which records it deleted
    assert [s["start"] for s in _memory_steps(meta)] == sorted(s["start"] for s in _memory_steps(meta))
    # mem0's own model call (its fact extraction) is the memory's work: a model step of the run, its tokens counted,
    # never the agent's conversation (the agent said nothing itself: no events)
    (extraction,) = [s for s in meta["steps"] if s["kind"] == "model"]
    assert extraction["usage"]["input_tokens"] > 0 and extraction.get("event") is None
    assert meta["usage"]["input_tokens"] >= extraction["usage"]["input_tokens"]
    assert out["events"] == []

    # what mem0 calls inside nests under the memory spans: the extraction call under create_memory, a search's
    # embeddings and Qdrant search under search_memory
    spans = {s.context.span_id: s for s in global_spans.get_finished_spans()}
    by_name: dict[str, list[Any]] = {}
    for span in spans.values():
        by_name.setdefault(span.name, []).append(span)
    (created,) = by_name["create_memory"]
    (searched,) = by_name["search_memory"]
    assert {s.name for s in spans.values() if s.parent and s.parent.span_id == created.context.span_id} >= {
        "chat gpt-4o-mini",
        "embeddings text-embedding-3-small",
        "retrieval qdrant",
    }
    assert {s.name for s in spans.values() if s.parent and s.parent.span_id == searched.context.span_id} == {
        "embeddings text-embedding-3-small",
        "retrieval qdrant",
    }
    assert created.attributes["gen_ai.memory.record.count"] == 2
    assert (created.attributes["user.id"], created.attributes["gen_ai.conversation.id"]) == ("alice", "s1")
    assert "gen_ai.agent.id" not in created.attributes
    assert searched.attributes["gen_ai.memory.record.count"] == 1
    assert searched.attributes["user.id"] == "alice"
    assert searched.attributes["gen_ai.memory.query.text"] == QUESTION
    (updated,) = by_name["update_memory"]
    assert (updated.attributes["gen_ai.memory.record.id"], updated.attributes["gen_ai.memory.record.count"]) == (
        added[0]["id"],
        1,
    )
    deleted, deleted_all = sorted(by_name["delete_memory"], key=lambda s: s.start_time)
    assert deleted.attributes["gen_ai.memory.record.id"] == added[0]["id"]
    assert "gen_ai.memory.record.id" not in deleted_all.attributes  # every record of the scope
    assert "gen_ai.memory.record.count" not in deleted_all.attributes
    assert deleted_all.attributes["user.id"] == "alice"


def test_capture_off_keeps_ids_and_scores(traced_off: Traced, global_spans: Any, tmp_path: Path) -> None:
    out, meta = _run(traced_off, tmp_path)
    create, search, update, *_ = _memory_steps(meta)
    assert [sorted(d) for d in create["documents"]] == [["id", "score"], ["id", "score"]]
    assert search["documents"] == [
        {"id": out["found"]["results"][0]["id"], "score": pytest.approx(out["found"]["results"][0]["score"])}
    ]
    assert "query" not in search
    assert update["documents"] == [{"id": out["added"]["results"][0]["id"], "score": None}]
    (searched,) = [s for s in global_spans.get_finished_spans() if s.name == "search_memory"]
    assert "gen_ai.memory.query.text" not in searched.attributes
    assert FACTS[1] not in str(searched.attributes)


def test_a_failing_search_raises_as_before(traced: Traced, tmp_path: Path) -> None:
    with MockLLMServer() as server:
        memory = mem0.Memory.from_config(_config(server, tmp_path))
        with spanfold.agent("remember"), pytest.raises(ValueError, match="filters must contain"):
            memory.search(QUESTION, filters={"category": "x"})  # no user, agent or run: mem0 refuses
    (meta,) = [m.get("metadata", m) for m in traced.metas()]
    (step,) = meta["steps"]
    assert (step["kind"], step["operation"], step["store"], step["top_k"], step["error"]["type"]) == (
        "memory",
        "search_memory",
        STORE,
        20,
        "ValueError",
    )

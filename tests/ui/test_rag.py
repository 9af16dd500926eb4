"""``spanfold ui`` and a RAG agent's run (issue 54): the retrieval, the embeddings call it made and the model call
on the waterfall in the order they ran; a retrieval's details give its store, ``top_k``, query and the documents in
the order the store returned them (id, score, text), an embeddings call its model and tokens, and neither borrows the
figures of the message it preceded. A real run: LangChain's ``OpenAIEmbeddings`` and ``ChatOpenAI`` over real HTTP to
the mock server, a retriever of the run's own, ``spanfold.init()`` in a process of its own; the real command, a real
browser."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

expect = pytest.importorskip("playwright.sync_api").expect

RECORD = """
import math, sys
from typing import Any
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
import spanfold
from spanfold.testing import MockLLMServer, Reply
spanfold.init(output=sys.argv[1])
DOCS = {"paris": "Paris is the capital of France.", "bananas": "Bananas are a yellow fruit.",
        "tokyo": "Tokyo is the capital of Japan."}

class Notes(BaseRetriever):
    embeddings: Any
    vectors: dict[str, list[float]]
    search_kwargs: dict[str, Any]

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        q = self.embeddings.embed_query(query)
        cos = lambda v: sum(a * b for a, b in zip(q, v)) / (math.hypot(*q) * math.hypot(*v))
        ranked = sorted(((cos(v), i) for i, v in self.vectors.items()), reverse=True)[: self.search_kwargs["k"]]
        return [Document(DOCS[i], id=i, metadata={"score": round(s, 4)}) for s, i in ranked]

with MockLLMServer() as server:
    emb = OpenAIEmbeddings(model="text-embedding-3-small", base_url=server.base_url, api_key="k",
                           check_embedding_ctx_length=False, max_retries=0)
    notes = Notes(embeddings=emb, vectors=dict(zip(DOCS, emb.embed_documents(list(DOCS.values())))),
                  search_kwargs={"k": 2})
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="k", max_retries=0)
    server.script(Reply.text("Paris."))
    with spanfold.agent("rag"):
        docs = notes.invoke("What is the capital of France?")
        context = "\\n".join(d.page_content for d in docs)
        question = HumanMessage("What is the capital of France?")
        llm.invoke([SystemMessage("Answer from the context:\\n" + context), question])
assert spanfold.flush(timeout=30)
spanfold.shutdown()
"""


@pytest.fixture(scope="module")
def rag_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rag") / "traces"
    subprocess.run([sys.executable, "-c", RECORD, str(out)], check=True, capture_output=True, timeout=120)
    return out


def test_a_retrievals_query_and_documents_are_in_its_details(rag_dir: Path, ui_server: Any, page: Any) -> None:
    metas = [json.loads(line)["metadata"] for line in (rag_dir / "traces.meta.jsonl").read_text().splitlines()]
    (meta,) = [m for m in metas if m["name"] == "rag"]
    server = ui_server([rag_dir])
    server.wait_total(1)
    steps = server.json(f"/api/run/{meta['trace_id']}")["waterfall"]["steps"]
    assert [(s["kind"], s["label"]) for s in steps] == [
        ("retrieval", "Notes"),
        ("embeddings", "text-embedding-3-small"),
        ("model", "gpt-4o-mini"),
    ]
    retrieval, embeddings, model = steps
    assert (retrieval["store"], retrieval["top_k"]) == ("Notes", 2)
    assert retrieval["query"] == "What is the capital of France?"
    assert [d["id"] for d in retrieval["documents"]] == ["paris", "tokyo"]
    assert retrieval["cost"] is None and retrieval["usage"] is None  # not the model call's, whose message it preceded
    assert embeddings["inputs"] == 1 and embeddings["usage"]["input_tokens"] > 0 and embeddings["cost"]["amount"] > 0
    assert model["cost"]["amount"] > 0 and "documents" not in model

    page.goto(f"{server.url}#/run/{meta['trace_id']}/timeline/s1")
    details = page.locator("#step-details")
    expect(details.locator("dd[data-field=store]")).to_have_text("Notes")
    expect(details.locator("dd[data-field=top_k]")).to_have_text("2")
    expect(details.locator(".step-query")).to_have_text("What is the capital of France?")
    rows = details.locator("table.step-documents tr.document")
    expect(rows).to_have_count(2)
    expect(rows.locator("td.doc-id")).to_have_text(["paris", "tokyo"])
    scores = [float(t) for t in rows.locator("td.doc-score").all_inner_texts()]
    assert scores == [round(d["score"], 4) for d in retrieval["documents"]] and scores[0] > scores[1]
    texts = ["Paris is the capital of France.", "Tokyo is the capital of Japan."]
    expect(rows.locator("td.doc-text")).to_have_text(texts)
    expect(details.locator("dt", has_text="finish reason")).to_have_count(0)  # the model call's, not the retrieval's
    expect(details.locator("#step-in-conversation")).to_have_text("Show the message it preceded")

    expect(page.locator(".timeline .wf-row.step-retrieval .bar.retrieval")).to_have_count(1)  # a colour of its own
    expect(page.locator("#run-latency")).to_contain_text("1 retrieval")
    expect(page.locator("#run-latency")).to_contain_text("1 embeddings call")

    page.goto(f"{server.url}#/run/{meta['trace_id']}/timeline/s2")
    expect(details.locator("dd[data-field=inputs]")).to_have_text("1")
    tokens = embeddings["usage"]["input_tokens"]
    expect(details.locator("dt:text-is('tokens') + dd")).to_have_text(f"{tokens} in")  # vectors back: no tokens out
    expect(details.locator("table.step-documents")).to_have_count(0)


def test_an_aside_step_borrows_nothing_from_the_message_it_precedes() -> None:
    """A retrieval the app ran after the model's first answer precedes the second answer: the waterfall gives it its
    own figures (no cost, no tokens of that answer) and keeps the answer's for the model call."""
    from spanfold.trace.decode import invariant_events
    from spanfold.trace.model import Trace, TraceMeta
    from spanfold.ui.steps import waterfall

    answer = {"usage": {"input_tokens": 30, "output_tokens": 5}, "cost": 0.25, "finish_reasons": ["stop"]}
    events = invariant_events(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Let me look.", "model": "m"},
            # an event's metadata: its keys besides role, content ...
            {"role": "assistant", "content": "Found it.", "model": "m", **answer},
        ]
    )
    meta = TraceMeta.from_dict(
        {
            "start": "2026-01-01T00:00:00Z",
            "steps": [
                {"kind": "model", "start": "2026-01-01T00:00:00Z", "duration_ms": 5, "model": "m", "event": 1},
                {
                    "kind": "retrieval",
                    "start": "2026-01-01T00:00:00.010Z",
                    "duration_ms": 3,
                    "store": "S",
                    "top_k": 1,
                    "documents": [{"id": "a", "score": 0.5}],
                    "event": 2,
                },
                {"kind": "model", "start": "2026-01-01T00:00:00.020Z", "duration_ms": 5, "model": "m", "event": 2},
            ],
        }
    )
    _, retrieval, second = waterfall(Trace(events, meta))["steps"]
    assert (retrieval["kind"], retrieval["event"], retrieval["store"]) == ("retrieval", 2, "S")
    assert retrieval["cost"] is None and retrieval["usage"] is None
    assert second["cost"] == {"amount": 0.25, "currency": "USD"} and second["usage"]["input_tokens"] == 30

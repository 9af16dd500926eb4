"""spanfold's own retrieval span (a LangChain retriever's ``invoke``) carries what Arize Phoenix shows of a retriever:
``openinference.span.kind`` ``RETRIEVER``, the query as ``input.value`` and the documents as
``retrieval.documents.{N}.document.id|score|content``, made from what content capture and redaction decided (ids and
scores always, the query and the text with capture on); every name it writes listed in ``semconv.written``. Read back
by OpenInference's dialect, the same span makes the same retrieval step as the conventions' attributes make."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

import spanfold
from spanfold.exporter.dialects import openinference
from spanfold.exporter.records import from_readable

from ..conftest import Traced
from ..semconv.names_check import unlisted

QUESTION = "What is the capital of France?"
FOUND = [("paris", 0.91, "Paris is the capital of France."), ("tokyo", 0.42, "Tokyo is the capital of Japan.")]


class Fixed(BaseRetriever):
    """Two documents, whatever the query, each with its score in its metadata."""

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return [Document(text, id=ident, metadata={"score": score}) for ident, score, text in FOUND]


def _retrieval_span(global_spans: Any) -> Any:
    (span,) = [s for s in global_spans.get_finished_spans() if s.name.startswith("retrieval")]
    return span


def test_phoenix_reads_the_retriever(traced: Traced, global_spans: Any) -> None:
    with spanfold.agent("rag"):
        docs = Fixed().invoke(QUESTION)
    assert [d.id for d in docs] == ["paris", "tokyo"]  # as without spanfold
    span = _retrieval_span(global_spans)
    attrs = dict(span.attributes or {})
    assert attrs["openinference.span.kind"] == "RETRIEVER"
    assert (attrs["input.value"], attrs["input.mime_type"]) == (QUESTION, "text/plain")
    for n, (ident, score, text) in enumerate(FOUND):
        assert attrs[f"retrieval.documents.{n}.document.id"] == ident
        assert attrs[f"retrieval.documents.{n}.document.score"] == score
        assert attrs[f"retrieval.documents.{n}.document.content"] == text
    assert unlisted([span]) == set()
    # Phoenix's names alone (the conventions' taken away) read back as another producer's RETRIEVER span: the same
    record = from_readable(span)
    record.attributes = {k: v for k, v in attrs.items() if not k.startswith("gen_ai.retrieval.")}
    _name, rewritten = openinference.rewrite(record) or ("", {})
    assert rewritten["gen_ai.retrieval.query.text"] == QUESTION
    assert rewritten["gen_ai.retrieval.documents"] == [{"id": i, "score": s, "content": t} for i, s, t in FOUND]


def test_capture_off_shows_ids_and_scores_only(traced_off: Traced, global_spans: Any) -> None:
    with spanfold.agent("rag"):
        Fixed().invoke(QUESTION)
    attrs = dict(_retrieval_span(global_spans).attributes or {})
    assert attrs["openinference.span.kind"] == "RETRIEVER"
    assert "input.value" not in attrs and "gen_ai.retrieval.query.text" not in attrs
    shown = sorted(k for k in attrs if k.startswith("retrieval.documents."))
    assert shown == [f"retrieval.documents.{n}.document.{f}" for n in (0, 1) for f in ("id", "score")]


def test_model_and_agent_spans_carry_no_span_kind(traced: Traced, global_spans: Any) -> None:
    with spanfold.agent("rag"):
        Fixed().invoke(QUESTION)
    kinds = {
        s.name.partition(" ")[0]: (s.attributes or {}).get("openinference.span.kind")
        for s in global_spans.get_finished_spans()
    }
    assert kinds == {"invoke_agent": None, "retrieval": "RETRIEVER"}

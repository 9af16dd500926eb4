"""Other producers' embeddings, retrieval and rerank spans folded into spanfold's metadata steps, one by one.

Produced for real where the producer is in the venv: OpenInference's EMBEDDING spans
(``openinference-instrumentation-openai`` 0.1.66 over the real openai SDK to the mock server), its RETRIEVER and
RERANKER spans through its own ``OITracer`` and attribute helpers (``get_retriever_attributes``,
``get_reranker_attributes`` of ``openinference-instrumentation`` 0.1.72: what its LangChain and LlamaIndex
instrumentations write), OpenLLMetry's embeddings spans (``opentelemetry-instrumentation-openai`` 0.62.4). Built
with the SDK's tracer and the exact names of OpenLLMetry's ``opentelemetry-semantic-conventions-ai`` where its
instrumentation is not installed: the vector stores' search spans and result events (the chromadb, pinecone and
qdrant instrumentations' wrappers), a Cohere rerank span (its ``span_utils``), a 0.53 embeddings span."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv_ai import EventAttributes, Events, LLMRequestTypeValues, SpanAttributes

from spanfold.exporter.fold.folding import fold
from spanfold.exporter.records import from_readable
from spanfold.testing import MockLLMServer, Reply, count_tokens

from .producers import instrumented

EMBEDDINGS = "text-embedding-3-small"
QUESTION = "What is the capital of France?"
DOCS = [("paris", 0.91, "Paris is the capital of France."), ("tokyo", 0.42, "Tokyo is the capital of Japan.")]


@pytest.fixture
def provider() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """A provider of the test's own (the producers' spans only)."""
    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    yield tp, exporter
    tp.shutdown()


def _steps(spans: list[ReadableSpan]) -> list[dict[str, Any]]:
    records = [from_readable(s) for s in spans]
    steps: list[dict[str, Any]] = fold(records, trace_id=format(records[0].trace_id, "032x")).meta.to_dict()["steps"]
    return steps


def _rag(client: openai.OpenAI, tp: TracerProvider) -> None:
    with tp.get_tracer("app").start_as_current_span("rag run"):
        client.embeddings.create(model=EMBEDDINGS, input=["alpha beta", QUESTION], dimensions=4)
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": QUESTION}])


# --- OpenInference -------------------------------------------------------------------------------------------------


def test_openinference_embedding_span(provider: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    from openinference.instrumentation.openai import OpenAIInstrumentor

    tp, exporter = provider
    with instrumented(OpenAIInstrumentor(), tracer_provider=tp), MockLLMServer() as server:
        server.script(Reply.text("Paris."))
        _rag(openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0), tp)
    spans = list(exporter.get_finished_spans())
    assert {(s.attributes or {}).get("openinference.span.kind") for s in spans} >= {"EMBEDDING", "LLM"}
    embeddings, model = _steps(spans)
    assert embeddings["kind"] == "embeddings"
    assert (embeddings["model"], embeddings["inputs"]) == (EMBEDDINGS, 2)
    assert embeddings["usage"]["input_tokens"] == count_tokens("alpha beta") + count_tokens(QUESTION)
    assert embeddings["cost"]["amount"] > 0  # priced like spanfold's own
    assert embeddings["event"] == 0 and embeddings["start"] < model["start"]
    assert model["kind"] == "model" and model["event"] == 1  # its answer, after the question


def _openinference_tracer(tp: TracerProvider) -> Any:
    from openinference.instrumentation import OITracer, TraceConfig

    return OITracer(tp.get_tracer("openinference.instrumentation.test"), config=TraceConfig())


def test_openinference_retriever_and_reranker(provider: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    from openinference.instrumentation import get_reranker_attributes, get_retriever_attributes

    tp, exporter = provider
    tracer = _openinference_tracer(tp)
    found = [{"id": i, "score": s, "content": t} for i, s, t in DOCS]
    with tracer.start_as_current_span("app", openinference_span_kind="chain"):
        with tracer.start_as_current_span("VectorStoreRetriever", openinference_span_kind="retriever") as span:
            span.set_input(QUESTION)
            span.set_attributes(get_retriever_attributes(documents=found))
        with tracer.start_as_current_span("CohereRerank", openinference_span_kind="reranker") as span:
            reordered = [{"id": "tokyo", "score": 0.8, "content": DOCS[1][2]}]
            span.set_attributes(
                get_reranker_attributes(
                    query=QUESTION, model_name="rerank-v3.5", top_k=1, input_documents=found, output_documents=reordered
                )
            )
    retrieval, rerank = _steps(list(exporter.get_finished_spans()))
    assert retrieval["kind"] == "retrieval"
    assert (retrieval["store"], retrieval["query"]) == ("VectorStoreRetriever", QUESTION)
    assert retrieval["documents"] == [{"id": i, "score": s, "text": t} for i, s, t in DOCS]
    assert rerank["kind"] == "rerank"
    assert (rerank["model"], rerank["top_k"], rerank["query"]) == ("rerank-v3.5", 1, QUESTION)
    assert rerank["documents"] == [{"id": "tokyo", "score": 0.8, "text": DOCS[1][2]}]  # its output, its order


# --- OpenLLMetry ---------------------------------------------------------------------------------------------------


def test_openllmetry_embeddings_span(provider: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    tp, exporter = provider
    with instrumented(OpenAIInstrumentor(), tracer_provider=tp), MockLLMServer() as server:
        server.script(Reply.text("Paris."))
        _rag(openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0), tp)
    spans = list(exporter.get_finished_spans())
    assert any(s.name == "openai.embeddings" for s in spans)
    embeddings, model = _steps(spans)
    assert (embeddings["kind"], embeddings["model"], embeddings["inputs"]) == ("embeddings", EMBEDDINGS, 2)
    assert embeddings["usage"]["input_tokens"] == count_tokens("alpha beta") + count_tokens(QUESTION)
    assert model["kind"] == "model"


def test_openllmetry_053_embeddings_and_cohere_rerank(provider: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    tp, exporter = provider
    tracer = tp.get_tracer("opentelemetry.instrumentation.cohere")
    with tracer.start_as_current_span("openai.embeddings") as span:
        span.set_attribute(SpanAttributes.LLM_REQUEST_TYPE, LLMRequestTypeValues.EMBEDDING.value)
        span.set_attribute(SpanAttributes.LLM_SYSTEM, "OpenAI")
        span.set_attribute(SpanAttributes.LLM_REQUEST_MODEL, EMBEDDINGS)
        span.set_attribute(SpanAttributes.LLM_USAGE_PROMPT_TOKENS, 9)
        for n, text in enumerate(("a", "b", "c")):
            span.set_attribute(f"{SpanAttributes.LLM_PROMPTS}.{n}.content", text)
    with tracer.start_as_current_span("cohere.rerank") as span:
        span.set_attribute(SpanAttributes.LLM_REQUEST_TYPE, LLMRequestTypeValues.RERANK.value)
        span.set_attribute(SpanAttributes.LLM_SYSTEM, "Cohere")
        span.set_attribute(SpanAttributes.LLM_REQUEST_MODEL, "rerank-v3.5")
        for n, (_id, _score, text) in enumerate(DOCS):
            span.set_attribute(f"{SpanAttributes.LLM_PROMPTS}.{n}.role", "system")
            span.set_attribute(f"{SpanAttributes.LLM_PROMPTS}.{n}.content", text)
        span.set_attribute(f"{SpanAttributes.LLM_PROMPTS}.{len(DOCS)}.role", "user")
        span.set_attribute(f"{SpanAttributes.LLM_PROMPTS}.{len(DOCS)}.content", QUESTION)
        span.set_attribute(f"{SpanAttributes.LLM_COMPLETIONS}.0.role", "assistant")
        span.set_attribute(f"{SpanAttributes.LLM_COMPLETIONS}.0.content", "Doc 1, Score: 0.75")
        span.set_attribute(f"{SpanAttributes.LLM_COMPLETIONS}.1.content", f"Doc 0, Score: 0.25\n{DOCS[0][2]}")
    embeddings, rerank = _steps(list(exporter.get_finished_spans()))
    assert (embeddings["kind"], embeddings["model"], embeddings["inputs"]) == ("embeddings", EMBEDDINGS, 3)
    assert embeddings["usage"]["input_tokens"] == 9
    assert (rerank["kind"], rerank["model"], rerank["query"]) == ("rerank", "rerank-v3.5", QUESTION)
    assert rerank["documents"] == [
        {"id": "1", "score": 0.75, "text": DOCS[1][2]},  # the text from its prompt, by index
        {"id": "0", "score": 0.25, "text": DOCS[0][2]},
    ]


def _result(span: Any, ident: str, score: float, text: str, *, distance: bool = False) -> None:
    measure = EventAttributes.DB_QUERY_RESULT_DISTANCE if distance else EventAttributes.DB_QUERY_RESULT_SCORE
    span.add_event(
        Events.DB_QUERY_RESULT.value,
        {
            EventAttributes.DB_QUERY_RESULT_ID.value: ident,
            measure.value: score,
            EventAttributes.DB_QUERY_RESULT_DOCUMENT.value: text,
        },
    )


def test_openllmetry_vector_store_searches(provider: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    tp, exporter = provider
    tracer = tp.get_tracer("opentelemetry.instrumentation.chromadb")
    with tracer.start_as_current_span("chroma.add") as span:  # a write: not a step
        span.set_attribute(SpanAttributes.VECTOR_DB_VENDOR, "chroma")
        span.set_attribute(SpanAttributes.VECTOR_DB_OPERATION, "add")
    with tracer.start_as_current_span("chroma.query") as span:
        span.set_attribute(SpanAttributes.VECTOR_DB_VENDOR, "chroma")
        span.set_attribute(SpanAttributes.VECTOR_DB_OPERATION, "query")
        span.set_attribute(SpanAttributes.CHROMADB_QUERY_N_RESULTS, 2)
        with tracer.start_as_current_span("chroma.query.segment._query") as inner:  # chroma's inner call: not a step
            inner.set_attribute(SpanAttributes.VECTOR_DB_VENDOR, "chroma")
            inner.set_attribute(SpanAttributes.VECTOR_DB_OPERATION, "_query")
        for ident, score, text in DOCS:
            _result(span, ident, round(1 - score, 2), text, distance=True)
    qdrant = tp.get_tracer("opentelemetry.instrumentation.qdrant")
    with qdrant.start_as_current_span("qdrant.search") as span:  # Qdrant writes no db.operation
        span.set_attribute(SpanAttributes.VECTOR_DB_VENDOR, "Qdrant")
        span.set_attribute("qdrant.search.collection_name", "docs")
        span.set_attribute(SpanAttributes.VECTOR_DB_QUERY_TOP_K, 5)
    pinecone = tp.get_tracer("opentelemetry.instrumentation.pinecone")
    with pinecone.start_as_current_span("pinecone.query") as span:
        span.set_attribute(SpanAttributes.VECTOR_DB_VENDOR, "pinecone")
        span.set_attribute(SpanAttributes.VECTOR_DB_OPERATION, "query")
        span.set_attribute(SpanAttributes.VECTOR_DB_QUERY_TOP_K, 1)
        span.add_event(
            Events.DB_QUERY_RESULT.value,
            {EventAttributes.DB_QUERY_RESULT_ID.value: "paris", EventAttributes.DB_QUERY_RESULT_SCORE.value: 0.91},
        )
    with tp.get_tracer("sqlalchemy").start_as_current_span("SELECT docs") as span:  # a SQL database: not a step
        span.set_attribute("db.system", "postgresql")
        span.set_attribute("db.operation", "query")
    chroma, qdrant_step, pinecone_step = _steps(list(exporter.get_finished_spans()))
    assert (chroma["kind"], chroma["store"], chroma["top_k"]) == ("retrieval", "chroma", 2)
    assert chroma["documents"] == [{"id": i, "score": round(1 - s, 2), "text": t} for i, s, t in DOCS]
    assert (qdrant_step["kind"], qdrant_step["store"], qdrant_step["top_k"]) == ("retrieval", "Qdrant", 5)
    assert "documents" not in qdrant_step
    assert pinecone_step["documents"] == [{"id": "paris", "score": 0.91}]


def test_documents_as_json_text_too(provider: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    """The conventions' own retrieval span (a JSON string of documents) beside the dialects' structured lists."""
    tp, exporter = provider
    with tp.get_tracer("some.producer").start_as_current_span("retrieval docs") as span:
        span.set_attribute("gen_ai.operation.name", "retrieval")
        span.set_attribute("gen_ai.data_source.id", "docs")
        span.set_attribute("gen_ai.retrieval.documents", json.dumps([{"id": "a", "score": 0.5}]))
    (step,) = _steps(list(exporter.get_finished_spans()))
    assert (step["store"], step["documents"]) == ("docs", [{"id": "a", "score": 0.5}])

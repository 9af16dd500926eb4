"""A retrieval as typed data, and the one handler that owns its span (``retrieval {store}``).

A framework's reader fills a :class:`Retrieval` from the retriever and its query (the store, ``top_k``, the query
text) and reads the documents it returned into :class:`Document` s (id, score, text). :func:`sync_wrapper` /
:func:`async_wrapper` run the retriever's method under its span: reading under a fault guard, the content decision
(the query and each document's text only with content capture on, redacted, cut), a rerank marked as one (a node
postprocessor's: ``openinference.span.kind`` ``RERANKER``, as Cohere's rerank is), activation (an embeddings call the
retriever makes nests under it), failure, and the finish from what the call returned. The call returns exactly what it
returns without spanfold; its exceptions propagate untouched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Tracer

from spanfold import counters, semconv
from spanfold.codecs import jsonio
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.spans import RunSpan

#: A document's text on the span: cut to this many characters.
TEXT_CHARS: Final = 2000


@dataclass(slots=True)
class Document:
    """One document a retriever returned, as it came."""

    id: str | None = None
    score: float | None = None
    text: str | None = None


@dataclass(slots=True)
class Retrieval:
    """What a retrieval asks: the store (its library's class, the retriever's, or a database's collection), how many
    documents, the query; ``library``: the database the span is named after when the store is one of its collections
    (``retrieval qdrant``); ``reranks``: it reorders documents it was handed (a node postprocessor), a ``rerank``."""

    store: str | None = None
    library: str | None = None
    top_k: int | None = None
    query: str | None = None
    documents: list[Document] = field(default_factory=list)
    reranks: bool = False


def count(value: Any) -> int | None:
    """A ``top_k`` as a reader finds it: an int (never a bool), else unknown."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True, slots=True)
class Retriever:
    """How a framework's retriever method is read: ``request(instance, args, kwargs) -> Retrieval``, and
    ``documents(result) -> [Document]``."""

    kind: str  # for fault counters, e.g. "langchain.retriever"
    request: Callable[[Any, tuple[Any, ...], dict[str, Any]], Retrieval]
    documents: Callable[[Any], Sequence[Document]]


def _start(api: Retriever, tracer: Tracer, rt: Runtime, instance: Any, args: Any, kwargs: Any) -> RunSpan | None:
    try:
        asked = api.request(instance, args, kwargs)
        attrs: dict[str, Any] = {
            semconv.OPERATION_NAME: semconv.OP_RETRIEVAL,
            semconv.DATA_SOURCE_ID: asked.store,
            semconv.RETRIEVAL_TOP_K: asked.top_k,
        }
        if rt.capture_content and asked.query is not None:
            attrs[semconv.RETRIEVAL_QUERY_TEXT] = rt.content(asked.query)
        if asked.reranks:  # the conventions' retrieval, Phoenix's reranker: the fold's rerank step
            attrs[semconv.OPENINFERENCE_SPAN_KIND] = semconv.OPENINFERENCE_KIND_RERANKER
        return RunSpan(tracer, semconv.span_name(semconv.OP_RETRIEVAL, asked.library or asked.store), attrs, rt=rt)
    except Exception as exc:
        counters.fault(f"{api.kind}.request", exc)
        return None


def _document(doc: Document, rt: Runtime) -> dict[str, Any]:
    out: dict[str, Any] = {"id": doc.id, "score": doc.score}
    if rt.capture_content and doc.text is not None:
        out["content"] = rt.content(doc.text[:TEXT_CHARS])
    return out


def _finish(api: Retriever, call: RunSpan, rt: Runtime, result: Any) -> None:
    try:
        found = [_document(doc, rt) for doc in api.documents(result)]
        call.finish({semconv.RETRIEVAL_DOCUMENTS: jsonio.dumps(found)})
    except Exception as exc:
        counters.fault(f"{api.kind}.response", exc)
        call.finish()


def sync_wrapper(api: Retriever, tracer: Tracer, rt: Runtime) -> Wrapper:
    """The wrapper of a retriever's sync method (``BaseRetriever.invoke``)."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call = _start(api, tracer, rt, instance, args, kwargs)
        if call is None:
            return wrapped(*args, **kwargs)
        token = otel_context.attach(otel_trace.set_span_in_context(call.span))
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            call.fail(exc)
            raise
        finally:
            otel_context.detach(token)
        _finish(api, call, rt, result)
        return result

    return wrapper


def async_wrapper(api: Retriever, tracer: Tracer, rt: Runtime) -> Wrapper:
    """The wrapper of a retriever's coroutine method (``BaseRetriever.ainvoke``)."""

    async def wrapper(
        wrapped: Callable[..., Awaitable[Any]], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        call = _start(api, tracer, rt, instance, args, kwargs)
        if call is None:
            return await wrapped(*args, **kwargs)
        token = otel_context.attach(otel_trace.set_span_in_context(call.span))
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            call.fail(exc)
            raise
        finally:
            otel_context.detach(token)
        _finish(api, call, rt, result)
        return result

    return wrapper

"""A retrieval as typed data, and the one handler that owns its span (``retrieval {store}``).

A framework's reader fills a :class:`Retrieval` from the retriever and its query (the store, ``top_k``, the query
text) and reads the documents it returned into :class:`Document` s (id, score, text). :func:`sync_wrapper` /
:func:`async_wrapper` run the retriever's method under its span: reading under a fault guard, the content decision
(the query and each document's text only with content capture on, redacted, cut), a rerank marked as one (a node
postprocessor's: ``openinference.span.kind`` ``RERANKER``, as Cohere's rerank is), activation (an embeddings call the
retriever makes nests under it), failure, and the finish from what the call returned. The call returns exactly what it
returns without spanfold; its exceptions propagate untouched.

One search, one span: a retriever of a ``family`` called while a search covering that family runs (in the OpenTelemetry
context: the same task or thread, an executor LangChain runs it in, a thread pool with the threads extra) is part of
that search and runs untouched: a LangChain store's ``similarity_search`` calling its own
``similarity_search_with_score`` or inside a retriever's ``invoke``, a LanceDB hybrid query's two legs. Retrievers of
other libraries inside (a database client under a framework's store) keep their spans.

The other steps beside the conversation share this machinery: :func:`sync_call` / :func:`async_call` run a method
under the span a :data:`Start` began (:class:`Begun`: its span current while the call runs, failed with what it
raised, finished with what it returned), and :func:`document` writes a document (a memory record too) as a span
carries it (:mod:`.memories`: a memory operation).
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
    ``documents(result) -> [Document]``; ``family``: called inside a running search that covers it, the call is part
    of that search and runs untouched (a search covers its own family and those in ``covers``)."""

    kind: str  # for fault counters, e.g. "langchain.retriever"
    request: Callable[[Any, tuple[Any, ...], dict[str, Any]], Retrieval]
    documents: Callable[[Any], Sequence[Document]]
    family: str | None = None
    covers: tuple[str, ...] = ()


#: The families the searches running in this OpenTelemetry context cover (:attr:`Retriever.family`).
_COVERED: Final = otel_context.create_key("spanfold.retrieval.covered")


def _covered(api: Retriever) -> bool:
    """Whether ``api``'s call is part of a search running in this context."""
    if api.family is None:
        return False
    covered = otel_context.get_value(_COVERED)
    return isinstance(covered, frozenset) and api.family in covered


def _context(api: Retriever, call: RunSpan) -> otel_context.Context:
    """The context the retrieval runs in: its span current (what it calls nests under it), the families it covers
    marked."""
    ctx = otel_trace.set_span_in_context(call.span)
    families = (api.family, *api.covers) if api.family is not None else api.covers
    if families:
        covered = otel_context.get_value(_COVERED, ctx)
        before: frozenset[str] = covered if isinstance(covered, frozenset) else frozenset()
        ctx = otel_context.set_value(_COVERED, before.union(families), ctx)
    return ctx


@dataclass(frozen=True, slots=True)
class Begun:
    """A traced call begun: its span, the context the call runs in, and what finishes the span from the call's
    result (fault-guarded)."""

    call: RunSpan
    context: otel_context.Context
    finish: Callable[[Any], None]


#: Begins a traced call from the method's ``(instance, args, kwargs)``; None: the call runs untraced (a fault while
#: reading it, counted; a call already part of a running search).
Start = Callable[[Any, tuple[Any, ...], dict[str, Any]], "Begun | None"]


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


def document(doc: Document, rt: Runtime) -> dict[str, Any]:
    """A document as a span carries it: ``{"id", "score", "content"?}``, its text only with content capture on
    (redacted, cut to :data:`TEXT_CHARS`)."""
    out: dict[str, Any] = {"id": doc.id, "score": doc.score}
    if rt.capture_content and doc.text is not None:
        out["content"] = rt.content(doc.text[:TEXT_CHARS])
    return out


def _finish(api: Retriever, call: RunSpan, rt: Runtime, result: Any) -> None:
    try:
        found = [document(doc, rt) for doc in api.documents(result)]
        call.finish({semconv.RETRIEVAL_DOCUMENTS: jsonio.dumps(found)})
    except Exception as exc:
        counters.fault(f"{api.kind}.response", exc)
        call.finish()


def _begin(api: Retriever, tracer: Tracer, rt: Runtime) -> Start:
    def start(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Begun | None:
        if _covered(api):
            return None
        call = _start(api, tracer, rt, instance, args, kwargs)
        if call is None:
            return None
        return Begun(call, _context(api, call), lambda result: _finish(api, call, rt, result))

    return start


def sync_call(start: Start) -> Wrapper:
    """The wrapper of a sync method traced by ``start``: the call run in its context, its span failed with what it
    raised (raised unchanged) or finished with what it returned (returned unchanged)."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        begun = start(instance, args, kwargs)
        if begun is None:
            return wrapped(*args, **kwargs)
        token = otel_context.attach(begun.context)
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            begun.call.fail(exc)
            raise
        finally:
            otel_context.detach(token)
        begun.finish(result)
        return result

    return wrapper


def async_call(start: Start) -> Wrapper:
    """The wrapper of a coroutine method traced by ``start``, as :func:`sync_call`'s."""

    async def wrapper(
        wrapped: Callable[..., Awaitable[Any]], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        begun = start(instance, args, kwargs)
        if begun is None:
            return await wrapped(*args, **kwargs)
        token = otel_context.attach(begun.context)
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            begun.call.fail(exc)
            raise
        finally:
            otel_context.detach(token)
        begun.finish(result)
        return result

    return wrapper


def sync_wrapper(api: Retriever, tracer: Tracer, rt: Runtime) -> Wrapper:
    """The wrapper of a retriever's sync method (``BaseRetriever.invoke``)."""
    return sync_call(_begin(api, tracer, rt))


def async_wrapper(api: Retriever, tracer: Tracer, rt: Runtime) -> Wrapper:
    """The wrapper of a retriever's coroutine method (``BaseRetriever.ainvoke``)."""
    return async_call(_begin(api, tracer, rt))

"""A memory operation as typed data, and the one handler that owns its span (the conventions' memory operations).

A library's reader fills a :class:`MemoryOperation` from the call (which operation, the store, the query, ``top_k``,
the one record it names and the scopes the caller gave) and reads the records the call stored, found or removed into
:class:`~.retrievals.Document` s (id, score, text). :func:`sync_wrapper` / :func:`async_wrapper` run the method under
its span, named as the conventions name memory spans (the bare operation: ``search_memory``, ``create_memory``,
``update_memory``, ``delete_memory``; the store is high cardinality and stays out of the name) through the retrieval
handler's machinery (:func:`~.retrievals.sync_call`): reading under a fault guard, the content decision (the query and
each record's text only with content capture on, redacted, cut as a retrieved document's), activation (the model and
embeddings calls the library makes, and its vector store's searches, nest under it), failure, and the finish from what
the call returned. The call returns exactly what it returns without spanfold; its exceptions propagate untouched.

What the span carries: ``gen_ai.operation.name``, ``gen_ai.memory.store.id``, ``gen_ai.memory.record.id`` (an
operation on one record), ``gen_ai.memory.record.count`` (the records the call returned, created, updated or deleted,
when known), ``gen_ai.memory.records`` (ids and scores always, each record's text with content capture on: as
spanfold writes a retrieval's documents), ``gen_ai.memory.query.text`` (capture on), ``gen_ai.retrieval.top_k`` (a
search's limit). The pinned conventions name no scope of a memory operation; the scopes a caller gives are written
under the registry's names for them (as the conventions' proposal for memory scopes, open-telemetry/semantic-
conventions#3569, puts them on memory spans): an agent's as ``gen_ai.agent.id``, a run's or session's as
``gen_ai.conversation.id``, a user's as ``user.id`` (OpenTelemetry's general registry, what ``spanfold.context``
writes; a context open around the call, which names the run's user, is written over it as the span starts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Tracer

from spanfold import counters, semconv
from spanfold.codecs import jsonio
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.invocations import retrievals
from spanfold.instrumentation.invocations.retrievals import Begun, Document
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.spans import RunSpan


@dataclass(slots=True)
class MemoryOperation:
    """What a memory call asks: ``operation`` (one of :data:`~spanfold.semconv.MEMORY_OPERATIONS`), the store, the
    query and ``top_k`` (a search), the one record it names (an update, a delete) and, when the call itself states
    them, its records (that record, an update's new text), and the scopes the caller gave."""

    operation: str
    store: str | None = None
    query: str | None = None
    top_k: int | None = None
    record_id: str | None = None
    records: list[Document] | None = None
    user_id: str | None = None
    agent_id: str | None = None
    conversation_id: str | None = None


@dataclass(frozen=True, slots=True)
class Memories:
    """How a library's memory method is read: ``request(instance, args, kwargs) -> MemoryOperation``, and
    ``records(asked, result) -> [Document]``: the records the call found, stored or removed (from what it returned,
    or ``asked.records`` when the result names none: an update's record and new text), None when the library does
    not say which (a delete of every record in a scope)."""

    kind: str  # for fault counters, e.g. "mem0.search"
    request: Callable[[Any, tuple[Any, ...], dict[str, Any]], MemoryOperation]
    records: Callable[[MemoryOperation, Any], Sequence[Document] | None]


def text(value: Any) -> str | None:
    """A string argument as a reader finds it (an id, a query, a scope), else unknown."""
    return value if isinstance(value, str) and value else None


def _start(api: Memories, tracer: Tracer, rt: Runtime, instance: Any, args: Any, kwargs: Any) -> Begun | None:
    try:
        asked = api.request(instance, args, kwargs)
        attrs: dict[str, Any] = {
            semconv.OPERATION_NAME: asked.operation,
            semconv.MEMORY_STORE_ID: asked.store,
            semconv.MEMORY_RECORD_ID: asked.record_id,
            semconv.RETRIEVAL_TOP_K: asked.top_k,
            semconv.AGENT_ID: asked.agent_id,
            semconv.CONVERSATION_ID: asked.conversation_id,
            semconv.USER_ID: asked.user_id,
        }
        if rt.capture_content and asked.query is not None:
            attrs[semconv.MEMORY_QUERY_TEXT] = rt.content(asked.query)
        call = RunSpan(tracer, semconv.span_name(asked.operation, None), attrs, rt=rt)
    except Exception as exc:
        counters.fault(f"{api.kind}.request", exc)
        return None
    context = otel_trace.set_span_in_context(call.span, otel_context.get_current())
    return Begun(call, context, lambda result: _finish(api, asked, call, rt, result))


def _finish(api: Memories, asked: MemoryOperation, call: RunSpan, rt: Runtime, result: Any) -> None:
    try:
        records = api.records(asked, result)
        if records is None:
            call.finish()
            return
        call.finish(
            {
                semconv.MEMORY_RECORD_COUNT: len(records),
                semconv.MEMORY_RECORDS: jsonio.dumps([retrievals.document(record, rt) for record in records]),
            }
        )
    except Exception as exc:
        counters.fault(f"{api.kind}.response", exc)
        call.finish()


def sync_wrapper(api: Memories, tracer: Tracer, rt: Runtime) -> Wrapper:
    """The wrapper of a library's sync memory method (mem0's ``Memory.search``)."""
    return retrievals.sync_call(lambda instance, args, kwargs: _start(api, tracer, rt, instance, args, kwargs))


def async_wrapper(api: Memories, tracer: Tracer, rt: Runtime) -> Wrapper:
    """The wrapper of a library's coroutine memory method (mem0's ``AsyncMemory.search``)."""
    return retrievals.async_call(lambda instance, args, kwargs: _start(api, tracer, rt, instance, args, kwargs))

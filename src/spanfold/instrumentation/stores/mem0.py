"""mem0 (``mem0ai``, its open-source ``Memory`` and ``AsyncMemory``) memory operations as the conventions' memory
spans (:mod:`spanfold.instrumentation.invocations.memories`).

Supported: ``mem0ai`` >= 2.0, < 3 (tested with 2.2.1: its openai LLM and embedder, a local Qdrant store). Patched,
once on the classes, each method of ``Memory`` and its twin on ``AsyncMemory``:

* ``search(query, *, top_k=20, filters=...)``: ``search_memory``; the query (capture on), ``top_k``, the memories
  found in mem0's order (each one's id and score, its text with capture on);
* ``add(messages, *, user_id, agent_id, run_id, ...)``: ``create_memory``. From 2.0 on, ``add`` only creates: its
  extraction prompt's sole operation is ADD, a fact already stored (the same text) is skipped, and every result it
  returns is an ``"ADD"`` (mem0 1.x let the model update and delete stored facts too: an ``upsert_memory``, not
  supported here). The records are the memories created (id; text with capture on);
* ``update(memory_id, text=...)``: ``update_memory`` of that record (its new text with capture on);
* ``delete(memory_id)``: ``delete_memory`` of that record; ``delete_all(user_id, agent_id, run_id)``:
  ``delete_memory`` with no record id (every record of the scope: mem0 does not say how many).

The store is the vector store's collection (``vector_store.config.collection_name``, mem0's ``"mem0"`` by default).
The scopes: ``add``'s and ``delete_all``'s ``user_id`` / ``agent_id`` / ``run_id``, ``search``'s from its ``filters``
(an update or delete by id names none). What mem0 calls inside (its model's fact extraction, its embedder, its vector
store's searches: Qdrant's ``query_points`` is a ``retrieval qdrant`` step of its own) nests under the memory span.
Not patched: ``get``, ``get_all`` and ``history`` (no memory operation of the conventions reads records by id or
lists them), and ``MemoryClient`` (mem0's hosted platform, over HTTP).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from spanfold import semconv
from spanfold.instrumentation.invocations import memories, retrievals
from spanfold.instrumentation.invocations.memories import Memories, MemoryOperation
from spanfold.instrumentation.invocations.retrievals import Document
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor
from spanfold.trace.model import finite_number

SUPPORTED: Final = "mem0ai >= 2.0, < 3"
MODULE: Final = "mem0.memory.main"
#: ``Memory.search``'s own default ``top_k``.
DEFAULT_TOP_K: Final = 20


def _store(instance: Any) -> str | None:
    return memories.text(getattr(instance, "collection_name", None))


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    return args[index] if len(args) > index else kwargs.get(name)


def _scoped(operation: str, instance: Any, scopes: Mapping[str, Any], **asked: Any) -> MemoryOperation:
    return MemoryOperation(
        operation,
        store=_store(instance),
        user_id=memories.text(scopes.get("user_id")),
        agent_id=memories.text(scopes.get("agent_id")),
        conversation_id=memories.text(scopes.get("run_id")),
        **asked,
    )


def search_request(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> MemoryOperation:
    """``search(query, *, top_k=20, filters=None, ...)``: the scopes are the filters' ``user_id`` / ``agent_id`` /
    ``run_id``."""
    filters = kwargs.get("filters")
    return _scoped(
        semconv.OP_SEARCH_MEMORY,
        instance,
        filters if isinstance(filters, Mapping) else {},
        query=memories.text(_arg(args, kwargs, 0, "query")),
        top_k=retrievals.count(kwargs.get("top_k", DEFAULT_TOP_K)),
    )


def add_request(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> MemoryOperation:
    """``add(messages, *, user_id=None, agent_id=None, run_id=None, ...)``."""
    return _scoped(semconv.OP_CREATE_MEMORY, instance, kwargs)


def _one(operation: str, instance: Any, record_id: Any, text: Any = None) -> MemoryOperation:
    named = memories.text(record_id)
    return MemoryOperation(
        operation,
        store=_store(instance),
        record_id=named,
        records=None if named is None else [Document(named, None, memories.text(text))],
    )


def update_request(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> MemoryOperation:
    """``update(memory_id, text=None, metadata=None, expiration_date=..., data=None)``: the record and its new text
    (``data``: the deprecated name of ``text``)."""
    text = _arg(args, kwargs, 1, "text")
    return _one(
        semconv.OP_UPDATE_MEMORY,
        instance,
        _arg(args, kwargs, 0, "memory_id"),
        text if text is not None else _arg(args, kwargs, 4, "data"),
    )


def delete_request(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> MemoryOperation:
    """``delete(memory_id)``."""
    return _one(semconv.OP_DELETE_MEMORY, instance, _arg(args, kwargs, 0, "memory_id"))


def delete_all_request(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> MemoryOperation:
    """``delete_all(user_id=None, agent_id=None, run_id=None)``: every record of the scope, none named."""
    scopes = {name: _arg(args, kwargs, i, name) for i, name in enumerate(("user_id", "agent_id", "run_id"))}
    return _scoped(semconv.OP_DELETE_MEMORY, instance, scopes)


def _results(result: Any) -> list[Any]:
    found = result.get("results") if isinstance(result, Mapping) else None
    return found if isinstance(found, list) else []


def found(asked: MemoryOperation, result: Any) -> Sequence[Document]:
    """``{"results": [{"id", "memory", "score", ...}]}``: a search's memories, or those an ``add`` created."""
    return [
        Document(
            memories.text(item.get("id")),
            finite_number(item.get("score")),
            memories.text(item.get("memory")),
        )
        for item in _results(result)
        if isinstance(item, Mapping)
    ]


def named(asked: MemoryOperation, result: Any) -> Sequence[Document] | None:
    """The one record an update or delete names, as it asked (mem0 returns only a message)."""
    return asked.records


def scope(asked: MemoryOperation, result: Any) -> None:
    """A ``delete_all``: mem0 does not say which records, or how many."""
    return None


SEARCH: Final = Memories("mem0.search", search_request, found)
ADD: Final = Memories("mem0.add", add_request, found)
UPDATE: Final = Memories("mem0.update", update_request, named)
DELETE: Final = Memories("mem0.delete", delete_request, named)
DELETE_ALL: Final = Memories("mem0.delete_all", delete_all_request, scope)


def _patches(method: str, api: Memories) -> tuple[Patch, Patch]:
    return (
        Patch(MODULE, f"Memory.{method}", lambda tracer, rt: memories.sync_wrapper(api, tracer, rt)),
        Patch(MODULE, f"AsyncMemory.{method}", lambda tracer, rt: memories.async_wrapper(api, tracer, rt)),
    )


PATCHES: Final = (
    *_patches("search", SEARCH),
    *_patches("add", ADD),
    *_patches("update", UPDATE),
    *_patches("delete", DELETE),
    *_patches("delete_all", DELETE_ALL),
)


class Mem0Instrumentor(TableInstrumentor, library="mem0", supported=SUPPORTED, table=PATCHES):
    """mem0's ``Memory`` / ``AsyncMemory`` operations as ``search_memory`` / ``create_memory`` / ``update_memory`` /
    ``delete_memory`` spans."""

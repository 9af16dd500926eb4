"""Qdrant (``qdrant-client``, a server or its local mode: ``QdrantClient(":memory:")`` / ``path=``) searches as
``retrieval qdrant`` spans.

Supported: ``qdrant-client`` >= 1.10, < 2 (tested with 1.20.0, in its in-memory local mode). Patched, once on the
classes: ``QdrantClient.query_points`` and ``AsyncQdrantClient.query_points`` (the search API of 1.10 on; the local
mode's own client is called inside them, never patched). The store is the collection searched, ``top_k`` the
``limit`` (Qdrant's default, 10, when none is given), the query its text when it is one (a string or a
``models.Document`` for Qdrant's own inference; a vector is not text), the documents the ``QueryResponse``'s points in
its order: each point's id and score, and its payload's text with content capture on (a ``text`` / ``document`` /
``page_content`` / ``content`` key, else the payload as JSON, cut as the other documents).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from spanfold.codecs import jsonio
from spanfold.instrumentation.invocations import retrievals
from spanfold.instrumentation.invocations.retrievals import Document, Retrieval
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor
from spanfold.trace.model import finite_number

SUPPORTED: Final = "qdrant-client >= 1.10, < 2"
SYNC: Final = "qdrant_client.qdrant_client"
ASYNC: Final = "qdrant_client.async_qdrant_client"
#: ``query_points``' own default ``limit``.
DEFAULT_LIMIT: Final = 10
#: The payload keys a point's text is found under (LangChain's, LlamaIndex's, Qdrant's own inference's).
TEXT_KEYS: Final = ("text", "document", "page_content", "content")


def _query(value: Any) -> str | None:
    text = value if isinstance(value, str) else getattr(value, "text", None)
    return text if isinstance(text, str) else None


def request(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Retrieval:
    """``query_points(collection_name, query=None, ..., limit=10, ...)``."""
    collection = args[0] if args else kwargs.get("collection_name")
    return Retrieval(
        store=collection if isinstance(collection, str) else None,
        library="qdrant",
        top_k=retrievals.count(kwargs.get("limit", DEFAULT_LIMIT)),
        query=_query(args[1] if len(args) > 1 else kwargs.get("query")),
    )


def _text(payload: Any) -> str | None:
    if not isinstance(payload, dict) or not payload:
        return None
    found = next((payload[k] for k in TEXT_KEYS if isinstance(payload.get(k), str)), None)
    return found if found is not None else jsonio.dumps(payload)


def documents(result: Any) -> Sequence[Document]:
    """The ``QueryResponse``'s points: id, score, payload text."""
    points = getattr(result, "points", None)
    if not isinstance(points, list):
        return []
    return [
        Document(
            str(point.id) if getattr(point, "id", None) is not None else None,
            finite_number(getattr(point, "score", None)),
            _text(getattr(point, "payload", None)),
        )
        for point in points
    ]


SEARCH: Final = retrievals.Retriever("qdrant.query_points", request, documents)

PATCHES: Final = (
    Patch(SYNC, "QdrantClient.query_points", lambda tracer, rt: retrievals.sync_wrapper(SEARCH, tracer, rt)),
    Patch(ASYNC, "AsyncQdrantClient.query_points", lambda tracer, rt: retrievals.async_wrapper(SEARCH, tracer, rt)),
)


class QdrantInstrumentor(TableInstrumentor, library="qdrant_client", supported=SUPPORTED, table=PATCHES):
    """Qdrant searches (``query_points``) as ``retrieval qdrant`` spans."""

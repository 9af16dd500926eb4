"""Chroma (``chromadb``: an in-process client, ``EphemeralClient`` / ``PersistentClient``, or a server's
``HttpClient`` / ``AsyncHttpClient``) queries as ``retrieval chroma`` spans.

Supported: ``chromadb`` >= 1.0, < 2 (tested with 1.5.9: an ``EphemeralClient``, and an ``AsyncHttpClient`` against
``chroma run``). Patched, once on the classes: ``Collection.query`` and ``AsyncCollection.query`` (every client's
collection is one of the two). An embedding function the collection runs on ``query_texts`` runs inside the query, so
its own spans (an OpenAI embeddings call) nest under the retrieval.

The store is the collection's name, ``top_k`` the ``n_results`` (Chroma's default, 10, when none is given), the query
the text of ``query_texts`` when it holds exactly one (a batch of several texts, or embeddings, images or URIs, is no
one query: none is recorded). The documents are what the ``QueryResult`` holds, every query's in query order (a batch
of several queries gives each query's ``n_results`` one after another): each record's id, its distance as the score
(Chroma returns distances, not similarities: **lower is closer**; none when ``include`` leaves distances out) and,
with content capture on, its document text (cut as the other documents).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from spanfold.instrumentation.invocations import retrievals
from spanfold.instrumentation.invocations.retrievals import Document, Retrieval
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor
from spanfold.trace.model import finite_number

SUPPORTED: Final = "chromadb >= 1.0, < 2"
SYNC: Final = "chromadb.api.models.Collection"
ASYNC: Final = "chromadb.api.models.AsyncCollection"
#: ``query``'s own default ``n_results``.
DEFAULT_N_RESULTS: Final = 10
#: ``query``'s parameters before ``n_results``, in order (a positional call).
QUERY_TEXTS: Final = 1
N_RESULTS: Final = 5


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str, default: Any = None) -> Any:
    return args[index] if len(args) > index else kwargs.get(name, default)


def _query(texts: Any) -> str | None:
    """One query text: a string, or a list of exactly one."""
    if isinstance(texts, list) and len(texts) == 1:
        texts = texts[0]
    return texts if isinstance(texts, str) else None


def request(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Retrieval:
    """``query(query_embeddings=None, query_texts=None, query_images=None, query_uris=None, ids=None,
    n_results=10, ...)``."""
    name = getattr(instance, "name", None)
    return Retrieval(
        store=name if isinstance(name, str) else None,
        library="chroma",
        top_k=retrievals.count(_arg(args, kwargs, N_RESULTS, "n_results", DEFAULT_N_RESULTS)),
        query=_query(_arg(args, kwargs, QUERY_TEXTS, "query_texts")),
    )


def _column(result: Any, key: str, query: int) -> list[Any]:
    batches = result.get(key)
    found = batches[query] if isinstance(batches, list) and len(batches) > query else None
    return list(found) if found is not None else []


def documents(result: Any) -> Sequence[Document]:
    """The ``QueryResult``'s records, query after query: id, distance, document text."""
    if not isinstance(result, dict) or not isinstance(result.get("ids"), list):
        return []
    out: list[Document] = []
    for query, ids in enumerate(result["ids"]):
        distances, texts = _column(result, "distances", query), _column(result, "documents", query)
        for i, ident in enumerate(ids):
            text = texts[i] if i < len(texts) else None
            out.append(
                Document(
                    str(ident) if ident is not None else None,
                    finite_number(distances[i]) if i < len(distances) else None,
                    text if isinstance(text, str) else None,
                )
            )
    return out


SEARCH: Final = retrievals.Retriever("chroma.query", request, documents)

PATCHES: Final = (
    Patch(SYNC, "Collection.query", lambda tracer, rt: retrievals.sync_wrapper(SEARCH, tracer, rt)),
    Patch(ASYNC, "AsyncCollection.query", lambda tracer, rt: retrievals.async_wrapper(SEARCH, tracer, rt)),
)


class ChromaInstrumentor(TableInstrumentor, library="chromadb", supported=SUPPORTED, table=PATCHES):
    """Chroma queries (``Collection.query``) as ``retrieval chroma`` spans."""

"""LanceDB (``lancedb``: a local directory ``lancedb.connect(path)`` / ``connect_async``, or a remote one) searches as
``retrieval lancedb`` spans.

Supported: ``lancedb`` >= 0.40, < 1 (tested with 0.40.0, a local directory database, sync and async). A search is a
query builder (``table.search(...)`` / ``table.vector_search(...)`` / ``query().nearest_to(...)``) executed: every
way of collecting its results (``to_list``, ``to_pandas``, ``to_pydantic``, ``to_polars``, ``to_arrow``) goes through
its ``to_arrow``, so that is what is patched, once on the classes: the sync builders' ``LanceVectorQueryBuilder``,
``LanceFtsQueryBuilder`` and ``LanceHybridQueryBuilder`` and the async queries' ``AsyncVectorQuery``, ``AsyncFTSQuery``
and ``AsyncHybridQuery``. Not traced: a builder's ``to_batches`` (a stream read after the call returns, whose rows
spanfold would have to read first), plain scans and takes (no search). A hybrid search's vector and full-text legs
are part of it, one span (the async legs run in its task; the sync builder runs them in a thread pool, where only
the threads extra carries the search's context: without it each leg is a retrieval of its own, outside the run).

The store is the table's name, ``top_k`` the ``limit`` (LanceDB's default, 10, when none is set), the query the text
searched (a full-text or hybrid query's, a vector search's when it was given text for the table's embedding function;
a vector is not text). The documents are the rows in their order: an ``id`` column's value (else the ``_rowid`` when
asked for), the score LanceDB ranked by (a vector search's ``_distance``, **lower is closer**; a hybrid search's
``_relevance_score`` or a full-text search's ``_score``, higher is closer) and, with content capture on, the row's
text (a ``text`` / ``document`` / ``page_content`` / ``content`` column).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from spanfold.instrumentation.invocations import retrievals
from spanfold.instrumentation.invocations.retrievals import Document, Retrieval
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor
from spanfold.trace.model import finite_number

SUPPORTED: Final = "lancedb >= 0.40, < 1"
MODULE: Final = "lancedb.query"
#: The limit of a search that sets none.
DEFAULT_LIMIT: Final = 10
#: The columns a row's id, score and text are found in, the first present.
ID_COLUMNS: Final = ("id", "_rowid")
SCORE_COLUMNS: Final = ("_distance", "_relevance_score", "_score")
TEXT_COLUMNS: Final = ("text", "document", "page_content", "content")
#: A search's family: a hybrid search's legs are part of it.
FAMILY: Final = "lancedb"


def _text(value: Any) -> str | None:
    """A query's text: a string, or a full-text query object's (``MatchQuery(query=...)``)."""
    text = value if isinstance(value, str) else getattr(value, "query", None)
    return text if isinstance(text, str) else None


def _store(query: Any) -> str | None:
    name = getattr(getattr(query, "_table", None), "name", None)
    return name if isinstance(name, str) else None


def request(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Retrieval:
    """A sync builder: its table, ``_limit``, and the text it searches (``_str_query``, ``_text``, ``_query``)."""
    texts = (_text(getattr(instance, attr, None)) for attr in ("_str_query", "_text", "_query"))
    limit = getattr(instance, "_limit", None)
    return Retrieval(
        store=_store(instance),
        library="lancedb",
        top_k=retrievals.count(DEFAULT_LIMIT if limit is None else limit),
        query=next((text for text in texts if text is not None), None),
    )


def _native(read: Callable[[], Any]) -> Any:
    """What a read of LanceDB's native query gives, None when it fails: raising, or panicking (pyo3's
    ``PanicException``, which is no ``Exception``: the user's call must never see it)."""
    try:
        return read()
    except Exception:
        return None
    except BaseException as exc:
        if type(exc).__name__ != "PanicException":
            raise
        return None


def _legs(inner: Any) -> tuple[Any, ...]:
    """An async query's native queries: a hybrid one's full-text and vector legs, else itself."""
    if hasattr(inner, "to_fts_query") and hasattr(inner, "to_vector_query"):
        return _native(inner.to_fts_query), _native(inner.to_vector_query)
    return (inner,)


def async_request(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Retrieval:
    """An async query: its table, and the limit and text its native query holds (a hybrid query's: its legs')."""
    legs = _legs(getattr(instance, "_inner", None))
    limits = (getattr(_native(leg.to_query_request), "limit", None) for leg in legs if leg is not None)
    texts = (_native(leg.get_query) for leg in legs if hasattr(leg, "get_query"))
    limit = next((n for n in limits if n is not None), DEFAULT_LIMIT)
    return Retrieval(
        store=_store(instance),
        library="lancedb",
        top_k=retrievals.count(limit),
        query=next((text for text in texts if isinstance(text, str)), None),
    )


def _column(table: Any, names: Sequence[str]) -> list[Any]:
    """The first of ``names`` the result has, as Python values (one per row), else none."""
    present = set(table.column_names)
    name = next((n for n in names if n in present), None)
    return table.column(name).to_pylist() if name is not None else []


def documents(result: Any) -> Sequence[Document]:
    """The rows of the Arrow table a search returned: id, score, text."""
    if not hasattr(result, "column_names") or not hasattr(result, "num_rows"):
        return []
    ids, scores, texts = (_column(result, names) for names in (ID_COLUMNS, SCORE_COLUMNS, TEXT_COLUMNS))
    out: list[Document] = []
    for row in range(result.num_rows):
        ident = ids[row] if row < len(ids) else None
        text = texts[row] if row < len(texts) else None
        out.append(
            Document(
                str(ident) if ident is not None else None,
                finite_number(scores[row]) if row < len(scores) else None,
                text if isinstance(text, str) else None,
            )
        )
    return out


SEARCH: Final = retrievals.Retriever("lancedb.search", request, documents, family=FAMILY)
ASYNC_SEARCH: Final = retrievals.Retriever("lancedb.search", async_request, documents, family=FAMILY)

PATCHES: Final = (
    *(
        Patch(MODULE, f"{cls}.to_arrow", lambda tracer, rt: retrievals.sync_wrapper(SEARCH, tracer, rt))
        for cls in ("LanceVectorQueryBuilder", "LanceFtsQueryBuilder", "LanceHybridQueryBuilder")
    ),
    *(
        Patch(MODULE, f"{cls}.to_arrow", lambda tracer, rt: retrievals.async_wrapper(ASYNC_SEARCH, tracer, rt))
        for cls in ("AsyncVectorQuery", "AsyncFTSQuery", "AsyncHybridQuery")
    ),
)


class LanceDBInstrumentor(TableInstrumentor, library="lancedb", supported=SUPPORTED, table=PATCHES):
    """LanceDB searches (a query builder's ``to_arrow``, which every way of collecting results runs) as ``retrieval
    lancedb`` spans."""

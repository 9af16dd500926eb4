"""LangChain retrievers and vector stores' own searches as ``retrieval`` spans: the readers that fill a
:class:`~spanfold.instrumentation.invocations.retrievals.Retrieval` from a retriever (or a store) and its query, and
the documents it returned (``Document.id``, a score, the page content).

* ``BaseRetriever.invoke`` / ``ainvoke``: a ``retrieval {store}`` span. A vector-store retriever names its store's
  class (``InMemoryVectorStore``) and its ``search_kwargs["k"]``; any other retriever its own class. A score is one
  the store put in the document's metadata (``score``, ``relevance_score``, ``similarity_score``).
* A vector store's searches called directly: ``similarity_search``, ``similarity_search_with_score``,
  ``similarity_search_with_relevance_scores``, ``similarity_search_by_vector``, ``max_marginal_relevance_search``,
  ``max_marginal_relevance_search_by_vector`` and their ``a``-prefixed async twins, as ``retrieval {StoreClass}``
  spans, in every store: ``VectorStore``'s own methods and those each subclass defines itself, whenever its package
  is imported (:mod:`.subclasses`). ``top_k`` is ``k`` (4, LangChain's default in each method's signature, when not
  given), the query the text searched for (a vector is not text), each document's score the number a ``_with_score``
  search paired it with: the store's own measure, a distance in some stores (lower is closer: Chroma, FAISS), a
  similarity in others (``InMemoryVectorStore``'s cosine), and in ``_with_relevance_scores`` LangChain's relevance in
  [0, 1] (higher is closer).

One search, one span: a store's search called inside another of its searches (``similarity_search`` calling its own
``similarity_search_with_score``, the base's ``asimilarity_search`` running ``similarity_search`` in an executor) or
inside a retriever's ``invoke`` (a vector-store retriever's) is part of that one and gets no span of its own. A
retriever inside a retriever (an ensemble's) keeps its own span. A database client a store calls (``chromadb``'s
``Collection.query`` under ``langchain-chroma``) keeps its span too: the database's step beside the store's.

Part of :class:`~spanfold.instrumentation.frameworks.langchain.LangChainInstrumentor`'s table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from opentelemetry.trace import Tracer

from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks.retrievers.subclasses import every_subclass
from spanfold.instrumentation.invocations import retrievals
from spanfold.instrumentation.invocations.retrievals import Document, Retrieval
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.patching import Patch
from spanfold.trace.model import finite_number

MODULE: Final = "langchain_core.retrievers"
STORES: Final = "langchain_core.vectorstores.base"
#: The family of the stores' searches (:attr:`~spanfold.instrumentation.invocations.retrievals.Retriever.family`).
STORE_SEARCH: Final = "langchain.vectorstore"
#: A store's search methods (sync and async), each a retrieval.
SEARCHES: Final = tuple(
    f"{prefix}{name}"
    for name in (
        "similarity_search",
        "similarity_search_with_score",
        "similarity_search_with_relevance_scores",
        "similarity_search_by_vector",
        "max_marginal_relevance_search",
        "max_marginal_relevance_search_by_vector",
    )
    for prefix in ("", "a")
)
#: ``k`` when a search is not given one: the default of every search method of ``VectorStore``.
DEFAULT_K: Final = 4
#: The metadata keys stores put a document's score under.
SCORE_KEYS: Final = ("score", "relevance_score", "similarity_score")


def request(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Retrieval:
    query = args[0] if args else kwargs.get("input")
    store = getattr(instance, "vectorstore", None)
    search = getattr(instance, "search_kwargs", None)
    k = search.get("k") if isinstance(search, dict) else None
    return Retrieval(
        store=type(store if store is not None else instance).__name__,
        top_k=retrievals.count(k),
        query=query if isinstance(query, str) else None,
    )


def store_request(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Retrieval:
    """``similarity_search(query, k=4, ...)``, ``similarity_search_by_vector(embedding, k=4, ...)`` and the rest."""
    query = args[0] if args else kwargs.get("query")
    return Retrieval(
        store=type(instance).__name__,
        top_k=retrievals.count(args[1] if len(args) > 1 else kwargs.get("k", DEFAULT_K)),
        query=query if isinstance(query, str) else None,
    )


def documents(result: Any) -> Sequence[Document]:
    """The ``Document`` list a retriever or a store returned, or a store's ``(Document, score)`` pairs."""
    out: list[Document] = []
    for found in result if isinstance(result, list) else ():
        doc, paired = found if isinstance(found, tuple) and len(found) == 2 else (found, None)
        metadata = getattr(doc, "metadata", None) or {}
        score = finite_number(paired) if paired is not None else None
        if score is None:
            score = next((finite_number(metadata[k]) for k in SCORE_KEYS if k in metadata), None)
        ident = getattr(doc, "id", None)
        text = getattr(doc, "page_content", None)
        out.append(Document(str(ident) if ident is not None else None, score, text if isinstance(text, str) else None))
    return out


#: A retriever's search covers its store's: a vector-store retriever's store search is part of it.
RETRIEVER: Final = retrievals.Retriever("langchain.retriever", request, documents, covers=(STORE_SEARCH,))
STORE: Final = retrievals.Retriever("langchain.vectorstore", store_request, documents, family=STORE_SEARCH)


def _store_search(tracer: Tracer, rt: Runtime, is_async: bool) -> Wrapper:
    return (retrievals.async_wrapper if is_async else retrievals.sync_wrapper)(STORE, tracer, rt)


PATCHES: Final = (
    Patch(MODULE, "BaseRetriever.invoke", lambda tracer, rt: retrievals.sync_wrapper(RETRIEVER, tracer, rt)),
    Patch(MODULE, "BaseRetriever.ainvoke", lambda tracer, rt: retrievals.async_wrapper(RETRIEVER, tracer, rt)),
    *every_subclass(STORES, "VectorStore", SEARCHES, _store_search),
)

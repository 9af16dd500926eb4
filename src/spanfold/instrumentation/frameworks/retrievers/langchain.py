"""LangChain retrievers (``BaseRetriever.invoke`` / ``ainvoke``) as ``retrieval`` spans: the reader that fills a
:class:`~spanfold.instrumentation.invocations.retrievals.Retrieval` from a retriever and its query, and the documents
it returned (``Document.id``, a score the store put in the metadata, the page content). A vector-store retriever names
its store's class (``InMemoryVectorStore``) and its ``search_kwargs["k"]``; any other retriever its own class. Part
of :class:`~spanfold.instrumentation.frameworks.langchain.LangChainInstrumentor`'s table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from spanfold.instrumentation.invocations import retrievals
from spanfold.instrumentation.invocations.retrievals import Document, Retrieval
from spanfold.instrumentation.toolkit.patching import Patch
from spanfold.trace.model import finite_number

MODULE: Final = "langchain_core.retrievers"
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


def documents(result: Any) -> Sequence[Document]:
    out: list[Document] = []
    for doc in result if isinstance(result, list) else ():
        metadata = getattr(doc, "metadata", None) or {}
        score = next((finite_number(metadata[k]) for k in SCORE_KEYS if k in metadata), None)
        ident = getattr(doc, "id", None)
        text = getattr(doc, "page_content", None)
        out.append(Document(str(ident) if ident is not None else None, score, text if isinstance(text, str) else None))
    return out


RETRIEVER: Final = retrievals.Retriever("langchain.retriever", request, documents)

PATCHES: Final = (
    Patch(MODULE, "BaseRetriever.invoke", lambda tracer, rt: retrievals.sync_wrapper(RETRIEVER, tracer, rt)),
    Patch(MODULE, "BaseRetriever.ainvoke", lambda tracer, rt: retrievals.async_wrapper(RETRIEVER, tracer, rt)),
)

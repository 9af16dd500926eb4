"""LlamaIndex retrievers and node postprocessors as ``retrieval`` spans: the readers that fill a
:class:`~spanfold.instrumentation.invocations.retrievals.Retrieval` from a retriever (or a postprocessor) and its
query, and the nodes it returned (``NodeWithScore``: the node's id, its score, its text).

* ``BaseRetriever.retrieve`` / ``aretrieve``: a ``retrieval {store}`` span; a vector index's retriever names its
  vector store's class (``SimpleVectorStore``) and its ``similarity_top_k``, any other retriever its own class. A
  query engine's retrieval is its retriever's, so ``RetrieverQueryEngine.query`` shows one.
* ``BaseNodePostprocessor.postprocess_nodes`` / ``apostprocess_nodes``: a rerank (the conventions' ``retrieval``
  marked ``openinference.span.kind`` ``RERANKER``, as Cohere's rerank is), named after the postprocessor's class,
  its ``top_n`` and the nodes it kept, in its order.

Part of :class:`~spanfold.instrumentation.frameworks.llama_index.LlamaIndexInstrumentor`'s table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from spanfold.instrumentation.invocations import retrievals
from spanfold.instrumentation.invocations.retrievals import Document, Retrieval
from spanfold.instrumentation.toolkit.patching import Patch
from spanfold.trace.model import finite_number

RETRIEVERS: Final = "llama_index.core.base.base_retriever"
POSTPROCESSORS: Final = "llama_index.core.postprocessor.types"


def _query(value: Any) -> str | None:
    """A ``QueryType``: a string, or a ``QueryBundle`` (its ``query_str``)."""
    text = value if isinstance(value, str) else getattr(value, "query_str", None)
    return text if isinstance(text, str) else None


def retriever_request(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Retrieval:
    """``retrieve(str_or_query_bundle)``."""
    store = getattr(instance, "_vector_store", None)
    return Retrieval(
        store=type(store if store is not None else instance).__name__,
        top_k=retrievals.count(getattr(instance, "similarity_top_k", None)),
        query=_query(args[0] if args else kwargs.get("str_or_query_bundle")),
    )


def rerank_request(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Retrieval:
    """``postprocess_nodes(nodes, query_bundle=None, query_str=None)``."""
    bundle = args[1] if len(args) > 1 else kwargs.get("query_bundle")
    asked = args[2] if len(args) > 2 else kwargs.get("query_str")
    return Retrieval(
        store=type(instance).__name__,
        top_k=retrievals.count(getattr(instance, "top_n", None)),
        query=_query(asked if asked is not None else bundle),
        reranks=True,
    )


def documents(result: Any) -> Sequence[Document]:
    """The ``NodeWithScore`` list a retriever or postprocessor returned."""
    out: list[Document] = []
    for found in result if isinstance(result, list) else ():
        node = getattr(found, "node", None)
        ident = getattr(node, "node_id", None)
        text = getattr(node, "text", None)
        out.append(
            Document(
                str(ident) if ident is not None else None,
                finite_number(getattr(found, "score", None)),
                text if isinstance(text, str) else None,
            )
        )
    return out


RETRIEVER: Final = retrievals.Retriever("llama_index.retriever", retriever_request, documents)
RERANKER: Final = retrievals.Retriever("llama_index.postprocessor", rerank_request, documents)

PATCHES: Final = (
    Patch(RETRIEVERS, "BaseRetriever.retrieve", lambda tracer, rt: retrievals.sync_wrapper(RETRIEVER, tracer, rt)),
    Patch(RETRIEVERS, "BaseRetriever.aretrieve", lambda tracer, rt: retrievals.async_wrapper(RETRIEVER, tracer, rt)),
    Patch(
        POSTPROCESSORS,
        "BaseNodePostprocessor.postprocess_nodes",
        lambda tracer, rt: retrievals.sync_wrapper(RERANKER, tracer, rt),
    ),
    Patch(
        POSTPROCESSORS,
        "BaseNodePostprocessor.apostprocess_nodes",
        lambda tracer, rt: retrievals.async_wrapper(RERANKER, tracer, rt),
    ),
)

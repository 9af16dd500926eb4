"""Cohere embed and rerank shapes (the v2 client) -> typed invocations.

``embed(model=, input_type=, texts= | images= | inputs=, output_dimension=, embedding_types=)`` answers an
``EmbedByTypeResponse``: the vectors by type (``float``, ``int8``, ``uint8``, ``binary``, ``ubinary``, ``base64``)
and ``meta.billed_units.input_tokens``, no model name. ``rerank(model=, query=, documents=, top_n=)`` answers a
``V2RerankResponse``: ``results`` (``index``: where the document was sent, ``relevance_score``) best first, and
``meta.billed_units.search_units`` (no tokens). Nothing of a vector's values is read, nor a document's text (Cohere's
v2 rerank sends none back): the count of inputs, the first vector's length, each result's index and score.
"""

from __future__ import annotations

from typing import Any, Final

from spanfold.instrumentation.toolkit.invocation import Ranked, Request, Response, Usage
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading.embeddings import input_count, vector_length
from spanfold.instrumentation.toolkit.reading.params import given

#: The vector types of an ``EmbedByTypeResponse``, by their attribute (``float_``: the SDK's name for ``float``).
VECTOR_TYPES: Final = ("float_", "float", "int8", "uint8", "binary", "ubinary", "base64")


def _int(value: Any) -> int | None:
    return value if given(value) and isinstance(value, int) and not isinstance(value, bool) else None


def embed_request(kwargs: dict[str, Any]) -> Request:
    """The typed request of an ``embed`` call (texts, images or mixed inputs: how many)."""
    sent = next((kwargs[k] for k in ("texts", "images", "inputs") if given(kwargs.get(k))), None)
    types = kwargs.get("embedding_types")
    return Request(
        model=kwargs.get("model"),
        input_count=input_count(sent),
        dimension_count=_int(kwargs.get("output_dimension")),
        encoding_formats=[str(t) for t in types] if given(types) and isinstance(types, (list, tuple)) else None,
    )


def _billed(result: Any, unit: str) -> Any:
    return m.get(m.get(m.get(result, "meta"), "billed_units"), unit)


def embed_response(result: Any) -> Response:
    """The typed response of an ``embed`` call: its input tokens and the length of its first vector."""
    embeddings = m.get(result, "embeddings")
    first = None
    for kind in VECTOR_TYPES:
        vectors = m.get(embeddings, kind)
        if vectors:
            first = vectors[0]
            break
    tokens = _billed(result, "input_tokens")
    return Response(
        id=m.get(result, "id"),
        messages=None,
        usage=Usage(input_tokens=int(tokens)) if isinstance(tokens, (int, float)) else None,
        dimension_count=vector_length(first) if first is not None else None,
    )


def rerank_request(kwargs: dict[str, Any]) -> Request:
    """The typed request of a ``rerank`` call: its query and how many documents it asks back."""
    query = kwargs.get("query")
    return Request(
        model=kwargs.get("model"),
        query=query if isinstance(query, str) else None,
        top_k=_int(kwargs.get("top_n")),
        reranks=True,
    )


def rerank_response(result: Any) -> Response:
    """The typed response of a ``rerank`` call: the documents by the index they were sent at, in its order."""
    ranked = [
        Ranked(id=str(m.get(item, "index")), score=m.get(item, "relevance_score"))
        for item in m.get(result, "results") or ()
    ]
    return Response(id=m.get(result, "id"), messages=None, documents=ranked)

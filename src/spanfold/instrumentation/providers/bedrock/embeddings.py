"""Bedrock ``invoke_model`` of an embedding model (a model id naming ``embed``: Amazon Titan, Cohere on Bedrock) ->
an embeddings invocation.

The request body is the family's: Titan's ``{"inputText", "dimensions"?}`` (one input), Cohere's ``{"texts" |
"images", "input_type", "embedding_types"?, "output_dimension"?}``. The response body, read as the user reads it
(:class:`EmbedBodyAccumulator`): Titan's ``{"embedding", "inputTextTokenCount", "embeddingsByType"?}``, Cohere's
``{"id", "embeddings": [[...]] | {type: [[...]]}, "response_type", "texts"}``; the tokens from the body where the
family says them (Titan), else the ``X-Amzn-Bedrock-Input-Token-Count`` header. Never a vector's values: the count
of inputs, the first vector's length.
"""

from __future__ import annotations

from typing import Any

from spanfold.instrumentation.providers.bedrock import invoke as bedrock_invoke
from spanfold.instrumentation.toolkit.invocation import Request, Response, Usage
from spanfold.instrumentation.toolkit.reading import params
from spanfold.instrumentation.toolkit.reading.embeddings import input_count, vector_length


def is_embedding(model: Any) -> bool:
    """Whether a model id names an embedding model (``amazon.titan-embed-text-v2:0``, ``cohere.embed-v4:0``)."""
    return isinstance(model, str) and "embed" in model


def request(call: dict[str, Any]) -> Request:
    """The model id, how many inputs the body sends and the vector length it asks."""
    body = bedrock_invoke.read_body(call.get("body"))
    body = body if isinstance(body, dict) else {}
    sent = body.get("inputText", body.get("texts", body.get("images")))
    size = body.get("dimensions", body.get("output_dimension"))
    return Request(
        model=params.model_name(call.get("modelId")),
        input_count=input_count(sent),
        dimension_count=size if isinstance(size, int) else None,
    )


def _first_vector(body: dict[str, Any]) -> Any:
    if "embedding" in body:  # Titan
        return body["embedding"]
    vectors = body.get("embeddings")
    if isinstance(vectors, dict):  # Cohere's by type
        vectors = next((v for v in vectors.values() if v), None)
    return vectors[0] if isinstance(vectors, list) and vectors else None


def body_response(body: Any) -> Response | None:
    """A complete embeddings body (Titan's or Cohere's), else None."""
    if not isinstance(body, dict):
        return None
    tokens = body.get("inputTextTokenCount")
    first = _first_vector(body)
    return Response(
        id=body.get("id"),
        messages=None,
        usage=Usage(input_tokens=tokens) if isinstance(tokens, int) else None,
        dimension_count=vector_length(first) if first is not None else None,
    )


class EmbedBodyAccumulator(bedrock_invoke.BodyAccumulator):
    """An embeddings body as the user reads it, parsed once at its end; the headers' tokens where it has none."""

    __slots__ = ()

    def result(self) -> Response:
        body = bedrock_invoke.parsed(self)
        return bedrock_invoke.completed(body_response(body), self.beside)

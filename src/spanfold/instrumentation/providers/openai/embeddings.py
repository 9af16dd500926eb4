"""OpenAI embeddings shapes -> typed invocations: ``embeddings.create(model=, input=, dimensions=,
encoding_format=)`` and its ``CreateEmbeddingResponse`` (model, ``usage.prompt_tokens``, the vectors' length).

Shared by the SDKs that speak the same shapes (litellm's ``embedding`` answers OpenAI's response). Nothing of the
inputs' text is read, nor a vector's values: the count of inputs and the length of the first vector."""

from __future__ import annotations

from typing import Any

from spanfold.instrumentation.toolkit.invocation import Request, Response, Usage
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading.embeddings import input_count, vector_length
from spanfold.instrumentation.toolkit.reading.params import given


def request(kwargs: dict[str, Any]) -> Request:
    """The typed request of an ``embeddings.create`` call."""
    dimensions = kwargs.get("dimensions")
    encoding = kwargs.get("encoding_format")
    return Request(
        model=kwargs.get("model"),
        input_count=input_count(kwargs.get("input")),
        dimension_count=dimensions if given(dimensions) and isinstance(dimensions, int) else None,
        encoding_formats=[encoding] if given(encoding) and isinstance(encoding, str) else None,
    )


def response(result: Any) -> Response:
    """The typed response of an embeddings call: its model, its prompt tokens, the vectors' length."""
    usage = m.get(result, "usage")
    data = m.get(result, "data") or ()
    first = data[0] if data else None
    return Response(
        model=m.get(result, "model"),
        messages=None,
        usage=Usage(input_tokens=m.get(usage, "prompt_tokens")) if usage is not None else None,
        dimension_count=vector_length(m.get(first, "embedding")) if first is not None else None,
    )

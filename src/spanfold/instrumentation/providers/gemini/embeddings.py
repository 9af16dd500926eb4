"""google-genai embeddings shapes -> typed invocations: ``models.embed_content(model=, contents=, config=)`` (one
request each through ``Models._embed_content``: the Developer API's ``:batchEmbedContents``, Vertex AI's
``:embedContent`` / ``:predict``) and its ``EmbedContentResponse``.

The inputs are counted (a text, or a list of texts or contents), the vectors' length read from the first
embedding's ``values`` (never a value itself); the tokens from ``usage_metadata.prompt_token_count``, else the sum of
each embedding's ``statistics.token_count`` (Vertex AI's), else none (unreported, never 0).
"""

from __future__ import annotations

from typing import Any

from spanfold.instrumentation.toolkit.invocation import Request, Response, Usage
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading import params
from spanfold.instrumentation.toolkit.reading.embeddings import input_count, vector_length


def request(kwargs: dict[str, Any]) -> Request:
    """The typed request of an ``embed_content`` call."""
    contents = kwargs.get("contents")  # (Vertex AI: a Gemini embedding model's one ``content`` or ``batch_contents``)
    if contents is None:
        contents = kwargs.get("batch_contents")
    dimensions = m.get(kwargs.get("config"), "output_dimensionality")
    return Request(
        model=params.model_name(kwargs.get("model")),
        input_count=input_count(contents) if isinstance(contents, (str, list, tuple)) else 1,
        dimension_count=dimensions if isinstance(dimensions, int) else None,
    )


def _tokens(result: Any, embeddings: list[Any]) -> int | None:
    prompt = m.get(m.get(result, "usage_metadata"), "prompt_token_count")
    if isinstance(prompt, int):
        return prompt
    counts = [m.get(m.get(e, "statistics"), "token_count") for e in embeddings]
    if counts and all(isinstance(c, (int, float)) for c in counts):
        return int(sum(counts))
    return None


def response(result: Any) -> Response:
    """The typed response of an ``embed_content`` call: its tokens where reported and the vectors' length."""
    embeddings = list(m.get(result, "embeddings") or ())
    tokens = _tokens(result, embeddings)
    return Response(
        messages=None,
        usage=Usage(input_tokens=tokens) if tokens is not None else None,
        dimension_count=vector_length(m.get(embeddings[0], "values")) if embeddings else None,
    )

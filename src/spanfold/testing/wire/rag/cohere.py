"""Cohere's embed (``POST /v2/embed``) and rerank (``POST /v2/rerank``), deterministic.

Embed answers an ``EmbedByTypeResponse``: ``{"id", "embeddings": {type: [vector, ...]}, "texts", "meta":
{"api_version", "billed_units": {"input_tokens"}}, "response_type": "embeddings_by_type"}``, one vector per text (or
image) per asked type (``embedding_types``, default ``float``; ``int8`` / ``uint8`` scaled from the floats, ``base64``
as little-endian float32), the vectors :func:`~spanfold.testing.wire.embeddings.vector` derives from the text
(``output_dimension`` long). Rerank answers a ``V2RerankResponse``: ``{"id", "results": [{"index",
"relevance_score"}], "meta": {"billed_units": {"search_units": 1}}}``, the documents sharing the query's words first
(the cosine of those vectors, mapped to 0..1), ``top_n`` of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from spanfold.testing.replies import Reply
from spanfold.testing.wire.base import Frame, RenderContext
from spanfold.testing.wire.embeddings import DIMENSIONS, encoded, prompt_tokens, vector

_META: Final = {"api_version": {"version": "2"}}


def _error(reply: Reply, ctx: RenderContext) -> dict[str, Any]:
    return {"id": ctx.ids.next("mock-cohere-error-"), "message": reply.message}


def _typed(values: list[float], kind: str) -> Any:
    if kind == "int8":
        return [round(x * 127) for x in values]
    if kind == "uint8":
        return [round((x + 1) * 127.5) for x in values]
    if kind == "base64":
        return encoded(values)
    return values


def _inputs(body: dict[str, Any]) -> list[str]:
    """The texts of an embed request (an image, or a mixed input, as its text or data URL)."""
    for key in ("texts", "images"):
        if isinstance(body.get(key), list):
            return [str(x) for x in body[key]]
    out = []
    for item in body.get("inputs") or []:
        content = item.get("content") if isinstance(item, dict) else None
        out.append(
            " ".join(str(c.get("text") or c.get("image_url") or "") for c in content or [] if isinstance(c, dict))
        )
    return out


class CohereEmbedRenderer:
    """Cohere's v2 embed response (never a stream)."""

    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        body = ctx.request.body
        size = body.get("output_dimension")
        size = size if isinstance(size, int) and size > 0 else DIMENSIONS
        kinds = body.get("embedding_types") or ["float"]
        texts = _inputs(body)
        vectors = [vector(t, size) for t in texts]
        tokens = reply.usage.input_tokens if reply.usage is not None else prompt_tokens(list(texts))
        return {
            "id": ctx.ids.next("mock-embed-"),
            "embeddings": {kind: [_typed(v, kind) for v in vectors] for kind in kinds},
            "texts": texts if "texts" in body else [],
            "meta": {**_META, "billed_units": {"input_tokens": tokens}},
            "response_type": "embeddings_by_type",
        }

    def events(self, body: dict[str, Any], ctx: RenderContext) -> Sequence[Frame]:
        return ()

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        return _error(reply, ctx)


def relevance(query: str, document: str) -> float:
    """How relevant the mock finds ``document`` to ``query``: the cosine of their vectors mapped to 0..1, rounded."""
    cosine = sum(a * b for a, b in zip(vector(query), vector(document), strict=True))
    return round((cosine + 1) / 2, 4)


class CohereRerankRenderer:
    """Cohere's v2 rerank response (never a stream)."""

    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        body = ctx.request.body
        query = str(body.get("query") or "")
        docs = [str(d if isinstance(d, str) else d.get("text", "")) for d in body.get("documents") or []]
        scored = sorted(((relevance(query, d), i) for i, d in enumerate(docs)), key=lambda s: (-s[0], s[1]))
        top_n = body.get("top_n")
        if isinstance(top_n, int) and top_n >= 0:
            scored = scored[:top_n]
        return {
            "id": ctx.ids.next("mock-rerank-"),
            "results": [{"index": i, "relevance_score": score} for score, i in scored],
            "meta": {**_META, "billed_units": {"search_units": 1}},
        }

    def events(self, body: dict[str, Any], ctx: RenderContext) -> Sequence[Frame]:
        return ()

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        return _error(reply, ctx)

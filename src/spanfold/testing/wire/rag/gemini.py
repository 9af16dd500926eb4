"""Gemini's and Vertex AI's embeddings, as google-genai's ``embed_content`` asks for them, deterministic: each
vector :func:`~spanfold.testing.wire.embeddings.vector` of its text, ``outputDimensionality`` long.

* ``:batchEmbedContents`` (the Developer API's; Vertex AI's for a Gemini embedding model given several contents):
  ``{"requests": [{"content": {"parts": [{"text"}]}, "outputDimensionality"? (Developer API) or "embedContentConfig":
  {"outputDimensionality"?} (Vertex AI)}]}`` -> ``{"embeddings": [{"values"}], "usageMetadata": {"promptTokenCount",
  "totalTokenCount"}}``;
* ``:embedContent`` (Vertex AI, a Gemini embedding model, one content): ``{"content": {"parts": [{"text"}]},
  "embedContentConfig"?: {...}}`` -> ``{"embedding": {"values"}, "usageMetadata": {"promptTokenCount", ...},
  "truncated": false}``;
* ``:predict`` (Vertex AI's text embedding models, ``text-embedding-005`` ...): ``{"instances": [{"content"}],
  "parameters"?: {"outputDimensionality"?}}`` -> ``{"predictions": [{"embeddings": {"values", "statistics":
  {"token_count", "truncated"}}}], "metadata": {"billableCharacterCount"}}``: the tokens are per instance, no usage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spanfold.testing.replies import Reply
from spanfold.testing.wire.base import Frame, RenderContext
from spanfold.testing.wire.embeddings import DIMENSIONS, prompt_tokens, vector
from spanfold.testing.wire.gemini import GeminiRenderer

#: Gemini's error body (``{"error": {"code", "message", "status"}}``), as the chat route sends it.
_ERRORS = GeminiRenderer()


def _text(request: Any) -> str:
    content = request.get("content") if isinstance(request, dict) else None
    parts = content.get("parts") if isinstance(content, dict) else None
    return " ".join(str(p.get("text") or "") for p in parts or [] if isinstance(p, dict))


def _size(*holders: Any) -> int:
    """The ``outputDimensionality`` the first holder that has one asks for, else :data:`DIMENSIONS`."""
    for holder in holders:
        size = holder.get("outputDimensionality") if isinstance(holder, dict) else None
        if isinstance(size, int) and size > 0:
            return size
    return DIMENSIONS


def _usage(reply: Reply, texts: list[str]) -> dict[str, int]:
    tokens = reply.usage.input_tokens if reply.usage is not None else prompt_tokens(list(texts))
    return {"promptTokenCount": tokens, "totalTokenCount": tokens}


class GeminiEmbedRenderer:
    """The ``batchEmbedContents`` response (never a stream)."""

    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        requests = [r for r in ctx.request.body.get("requests") or [] if isinstance(r, dict)]
        texts = [_text(r) for r in requests]
        vectors = [
            {"values": vector(t, _size(r, r.get("embedContentConfig")))} for t, r in zip(texts, requests, strict=True)
        ]
        return {"embeddings": vectors, "usageMetadata": _usage(reply, texts)}

    def events(self, body: dict[str, Any], ctx: RenderContext) -> Sequence[Frame]:
        return ()

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        return _ERRORS.error_body(reply, ctx)


class VertexEmbedRenderer(GeminiEmbedRenderer):
    """Vertex AI's ``embedContent`` response: one content, one vector."""

    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        body = ctx.request.body
        text = _text(body)
        values = vector(text, _size(body.get("embedContentConfig"), body))
        return {"embedding": {"values": values}, "usageMetadata": _usage(reply, [text]), "truncated": False}


class VertexPredictRenderer(GeminiEmbedRenderer):
    """Vertex AI's ``predict`` response for a text embedding model: each instance's vector and its own tokens."""

    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        body = ctx.request.body
        instances = [i for i in body.get("instances") or [] if isinstance(i, dict)]
        texts = [str(i.get("content") or "") for i in instances]
        size = _size(body.get("parameters"))
        predictions = [
            {
                "embeddings": {
                    "values": vector(t, size),
                    "statistics": {"token_count": prompt_tokens([t]), "truncated": False},
                }
            }
            for t in texts
        ]
        return {"predictions": predictions, "metadata": {"billableCharacterCount": sum(len(t) for t in texts)}}

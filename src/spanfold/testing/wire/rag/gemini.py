"""Gemini's batch embeddings (``POST /v1beta/models/{model}:batchEmbedContents``, what google-genai's
``embed_content`` sends to the Developer API), deterministic.

The request is ``{"requests": [{"model", "content": {"parts": [{"text"}]}, "taskType"?, "outputDimensionality"?}]}``;
the answer ``{"embeddings": [{"values": [...]}], "usageMetadata": {"promptTokenCount", "totalTokenCount"}}`` (the
usage google-genai reads into ``EmbedContentResponse.usage_metadata``), one vector per request:
:func:`~spanfold.testing.wire.embeddings.vector` of its text, ``outputDimensionality`` long.
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


class GeminiEmbedRenderer:
    """Gemini's ``batchEmbedContents`` response (never a stream)."""

    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        requests = [r for r in ctx.request.body.get("requests") or [] if isinstance(r, dict)]
        texts = [_text(r) for r in requests]
        sizes = [r.get("outputDimensionality") for r in requests]
        vectors = [
            {"values": vector(t, s if isinstance(s, int) and s > 0 else DIMENSIONS)}
            for t, s in zip(texts, sizes, strict=True)
        ]
        tokens = reply.usage.input_tokens if reply.usage is not None else prompt_tokens(list(texts))
        return {"embeddings": vectors, "usageMetadata": {"promptTokenCount": tokens, "totalTokenCount": tokens}}

    def events(self, body: dict[str, Any], ctx: RenderContext) -> Sequence[Frame]:
        return ()

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        return _ERRORS.error_body(reply, ctx)

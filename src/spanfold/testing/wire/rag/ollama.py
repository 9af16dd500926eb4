"""Ollama's embeddings (``POST /api/embed``), deterministic: ``{"model", "embeddings": [[...]], "total_duration",
"load_duration", "prompt_eval_count"}``, one vector per input (:func:`~spanfold.testing.wire.embeddings.vector`,
``dimensions`` long); an error is Ollama's ``{"error": message}``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spanfold.testing.replies import Reply
from spanfold.testing.wire.base import Frame, RenderContext
from spanfold.testing.wire.embeddings import DIMENSIONS, prompt_tokens, vector


class OllamaEmbedRenderer:
    """Ollama's embed response (never a stream)."""

    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        body = ctx.request.body
        raw = body.get("input")
        texts = [raw] if isinstance(raw, str) else [str(x) for x in raw or []]
        size = body.get("dimensions")
        size = size if isinstance(size, int) and size > 0 else DIMENSIONS
        tokens = reply.usage.input_tokens if reply.usage is not None else prompt_tokens(list(texts))
        return {
            "model": ctx.request.model,
            "embeddings": [vector(t, size) for t in texts],
            "total_duration": 1_000_000,
            "load_duration": 100_000,
            "prompt_eval_count": tokens,
        }

    def events(self, body: dict[str, Any], ctx: RenderContext) -> Sequence[Frame]:
        return ()

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        return {"error": reply.message}

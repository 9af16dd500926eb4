"""Mistral's embeddings (``POST /v1/embeddings`` under the mock's ``/mistral`` prefix): OpenAI's body
(:mod:`spanfold.testing.wire.embeddings`, the same vectors) with what Mistral adds, an ``id`` (the SDK requires it)
and ``usage.completion_tokens`` (0), the length its ``output_dimension`` asks, and Mistral's error body."""

from __future__ import annotations

from typing import Any

from spanfold.testing.replies import Reply
from spanfold.testing.wire.base import RenderContext
from spanfold.testing.wire.embeddings import EmbeddingsRenderer
from spanfold.testing.wire.mistral import MistralRenderer

_ERRORS = MistralRenderer()


class MistralEmbeddingsRenderer(EmbeddingsRenderer):
    """Mistral's embeddings response (never a stream)."""

    dimensions_key = "output_dimension"

    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        body = super().body(reply, ctx)
        body["usage"]["completion_tokens"] = 0
        return {"id": ctx.ids.next("mock-embd-"), **body}

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        return _ERRORS.error_body(reply, ctx)

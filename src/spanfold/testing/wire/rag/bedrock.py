"""Bedrock ``InvokeModel`` of an embedding model (``POST /model/{modelId}/invoke``, a model id naming ``embed``),
deterministic: Amazon Titan's body ``{"embedding", "inputTextTokenCount", "embeddingsByType": {"float"}}`` for an
``inputText`` request, Cohere-on-Bedrock's ``{"id", "embeddings": [[...]], "response_type": "embeddings_floats",
"texts"}`` (by type when ``embedding_types`` is asked) for a ``texts`` one; the tokens (the mock's count of the
texts) in the ``X-Amzn-Bedrock-Input-Token-Count`` header as Bedrock sends them; Bedrock's errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spanfold.testing.replies import Reply
from spanfold.testing.wire.base import Frame, RenderContext
from spanfold.testing.wire.bedrock import LATENCY_MS, ConverseRenderer
from spanfold.testing.wire.embeddings import DIMENSIONS, prompt_tokens, vector

_ERRORS = ConverseRenderer()


def _texts(body: dict[str, Any]) -> list[str]:
    return [str(body["inputText"])] if "inputText" in body else [str(t) for t in body.get("texts") or []]


class BedrockEmbedRenderer:
    """Titan's or Cohere's embeddings body (never a stream)."""

    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        body = ctx.request.body
        size = body.get("dimensions", body.get("output_dimension"))
        size = size if isinstance(size, int) and size > 0 else DIMENSIONS
        if "inputText" in body:
            values = vector(str(body["inputText"]), size)
            tokens = prompt_tokens(list(_texts(body)))
            return {"embedding": values, "inputTextTokenCount": tokens, "embeddingsByType": {"float": values}}
        texts = _texts(body)
        vectors = [vector(t, size) for t in texts]
        kinds = body.get("embedding_types")
        out: dict[str, Any] = {"id": ctx.ids.next("mock-embed-"), "texts": texts}
        if kinds:
            out.update(embeddings={k: vectors for k in kinds}, response_type="embeddings_by_type")
        else:
            out.update(embeddings=vectors, response_type="embeddings_floats")
        return out

    def events(self, body: dict[str, Any], ctx: RenderContext) -> Sequence[Frame]:
        return ()

    def body_headers(self, body: dict[str, Any], ctx: RenderContext) -> dict[str, str]:
        tokens = prompt_tokens(list(_texts(ctx.request.body)))
        return {"X-Amzn-Bedrock-Input-Token-Count": str(tokens), "X-Amzn-Bedrock-Invocation-Latency": str(LATENCY_MS)}

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        return _ERRORS.error_body(reply, ctx)

    def error_headers(self, reply: Reply) -> dict[str, str]:
        return _ERRORS.error_headers(reply)

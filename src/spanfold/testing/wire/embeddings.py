"""OpenAI embeddings (``POST /v1/embeddings``): vectors derived from the input text by hashing, deterministic.

The body is OpenAI's: ``{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
"usage": {"prompt_tokens", "total_tokens"}}``. ``encoding_format="base64"`` (what the openai SDK asks for when the
caller names no format) gives each vector as the base64 of its little-endian float32 bytes, as OpenAI sends it; the
SDK decodes it back into floats. ``dimensions`` sets the vector's length (default :data:`DIMENSIONS`).

Each vector is a hashed bag of words, normalised: texts sharing words are near each other, so a retriever over these
vectors ranks the documents that share the query's words first, the same way every run.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
from collections.abc import Sequence
from typing import Any

from spanfold.testing.errors import openai_error
from spanfold.testing.replies import Reply, count_tokens
from spanfold.testing.wire.base import Frame, RenderContext

#: The vectors' length when the request names none.
DIMENSIONS = 16
_WORD = re.compile(r"\w+")


def inputs_of(body: dict[str, Any]) -> list[str | list[int]]:
    """The request's inputs, one per vector: a string, a list of strings, a token array, or a list of those."""
    raw = body.get("input")
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list) and raw and all(isinstance(x, int) for x in raw):
        return [list(raw)]
    if isinstance(raw, list):
        return [x if isinstance(x, str) else [int(t) for t in x] for x in raw if isinstance(x, (str, list))]
    return []


def _bucket(word: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.sha256(word.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "little") % dimensions, 1.0 if digest[4] & 1 else -1.0


def vector(value: str | Sequence[int], dimensions: int = DIMENSIONS) -> list[float]:
    """The vector of one input: its (lower-case) words, or its tokens, hashed into ``dimensions`` signed buckets,
    normalised to length 1 (rounded to float32, as the wire carries it)."""
    words = _WORD.findall(value.lower()) if isinstance(value, str) else [str(t) for t in value]
    out = [0.0] * dimensions
    for word in words or [""]:
        index, sign = _bucket(word, dimensions)
        out[index] += sign
    norm = math.sqrt(sum(x * x for x in out)) or 1.0
    return [struct.unpack("<f", struct.pack("<f", x / norm))[0] for x in out]


def encoded(values: list[float]) -> str:
    """A vector as OpenAI's ``encoding_format="base64"`` sends it: little-endian float32 bytes, base64."""
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode("ascii")


def prompt_tokens(inputs: list[str | list[int]]) -> int:
    """The tokens the mock reports: its count of each text (:func:`count_tokens`), a token array's length."""
    return sum(count_tokens(x) if isinstance(x, str) else len(x) for x in inputs)


class EmbeddingsRenderer:
    """OpenAI's embeddings response (never a stream)."""

    #: The request's name for the vectors' length (Mistral's: ``output_dimension``).
    dimensions_key = "dimensions"

    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        body = ctx.request.body
        dimensions = body.get(self.dimensions_key)
        size = dimensions if isinstance(dimensions, int) and dimensions > 0 else DIMENSIONS
        as_base64 = body.get("encoding_format") == "base64"
        inputs = inputs_of(body)
        data = []
        for index, value in enumerate(inputs):
            numbers = vector(value, size)
            data.append(
                {"object": "embedding", "index": index, "embedding": encoded(numbers) if as_base64 else numbers}
            )
        tokens = reply.usage.input_tokens if reply.usage is not None else prompt_tokens(inputs)
        return {
            "object": "list",
            "data": data,
            "model": ctx.request.model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def events(self, body: dict[str, Any], ctx: RenderContext) -> Sequence[Frame]:
        return ()

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]:
        return openai_error(reply)

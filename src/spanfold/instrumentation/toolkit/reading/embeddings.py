"""Reading embeddings requests and responses, for every provider: how many inputs a request sends and how long the
vectors a response gives are, from their sizes alone (a vector's values are never read, a base64 vector never
decoded, an iterator the SDK will read never consumed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spanfold.instrumentation.toolkit.reading.params import given

#: Bytes per value of a base64 vector (little-endian float32, OpenAI's ``encoding_format="base64"``).
FLOAT32_BYTES = 4


def input_count(value: Any) -> int | None:
    """How many inputs ``value`` is: one text (or one token array, a list of ints), else the list's length; None
    for what cannot be counted without reading it (an iterator, nothing given)."""
    if not given(value):
        return None
    if isinstance(value, (str, bytes)):
        return 1
    if isinstance(value, (list, tuple)):
        return 1 if value and isinstance(value[0], int) else len(value)
    return None


def base64_length(text: str) -> int:
    """The values a base64 float32 vector holds, from its length and padding (never decoded)."""
    size = len(text) * 3 // 4 - (2 if text.endswith("==") else 1 if text.endswith("=") else 0)
    return size // FLOAT32_BYTES


def vector_length(vector: Any) -> int | None:
    """The length of one vector: a list of numbers, or its base64 text; None for anything else."""
    if isinstance(vector, str):
        return base64_length(vector)
    if isinstance(vector, Sequence):
        return len(vector)
    return None

"""The corpus the RAG tests index and ask about: three documents by id, a question two of them share words with (the
mock server's embeddings are hashed bags of words, so ``paris`` and ``tokyo`` rank first, in that order), and the
embeddings model they are embedded with."""

from __future__ import annotations

from typing import Final

EMBEDDINGS: Final = "text-embedding-3-small"
QUESTION: Final = "What is the capital of France?"
DOCS: Final = {
    "paris": "Paris is the capital of France.",
    "bananas": "Bananas are a yellow fruit.",
    "tokyo": "Tokyo is the capital of Japan.",
}

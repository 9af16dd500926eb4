"""Server-sent events: the one encoder every streaming renderer uses, and how text is cut into deltas."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"

_WORDS = re.compile(r"\s*\S+|\s+")
JSON_FRAGMENT = 7


@dataclass(frozen=True)
class SSEEvent:
    """One event: an optional ``event:`` name and its ``data:`` text."""

    data: str
    event: str | None = None

    def encode(self) -> bytes:
        lines = [] if self.event is None else [f"event: {self.event}"]
        lines.extend(f"data: {line}" for line in self.data.split("\n"))
        return ("\n".join(lines) + "\n\n").encode("utf-8")


def json_event(payload: dict[str, Any], event: str | None = None) -> SSEEvent:
    """An event whose data is ``payload`` as compact JSON, as the providers send it."""
    return SSEEvent(json.dumps(payload, ensure_ascii=False, separators=(",", ":")), event)


DONE = SSEEvent("[DONE]")


def split_text(text: str) -> list[str]:
    """Word-sized deltas, each with its leading whitespace: ``"Hi there"`` -> ``["Hi", " there"]``."""
    return _WORDS.findall(text)


def split_json(text: str, size: int = JSON_FRAGMENT) -> list[str]:
    """Fixed-size fragments of a JSON string (tool arguments arrive cut mid-token, as from the real APIs)."""
    return [text[i : i + size] for i in range(0, len(text), size)]

"""Replay real recorded provider responses (the ``shared/recordings`` format), byte for byte, in order."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from spanfold.testing.replies import Reply
from spanfold.testing.request import MockRequest


class RecordingReplay:
    """A responder answering the n-th request with the n-th recorded response (status, content type, body text).

    The file is ``{"interactions": [{"request": {"method", "uri", "body"}, "response": {"status", "content_type",
    "body"}}, ...]}``. Once the interactions run out, requests get a 500 error.
    """

    def __init__(self, path: str | Path | None = None, *, interactions: list[dict[str, Any]] | None = None) -> None:
        if interactions is None:
            if path is None:
                raise TypeError("RecordingReplay needs a path or interactions")
            interactions = list(json.loads(Path(path).read_text(encoding="utf-8"))["interactions"])
        self.name = str(path) if path is not None else "<interactions>"
        self.interactions = interactions
        self._lock = threading.Lock()
        self._next = 0

    @property
    def served(self) -> int:
        """How many recorded responses were sent."""
        with self._lock:
            return min(self._next, len(self.interactions))

    @property
    def remaining(self) -> int:
        return len(self.interactions) - self.served

    def replies(self) -> list[Reply]:
        """Every recorded response as a ``Reply.raw`` (to pass to ``server.script``)."""
        return [self._reply(interaction) for interaction in self.interactions]

    def __call__(self, request: MockRequest) -> Reply:
        with self._lock:
            index = self._next
            self._next += 1
        if index >= len(self.interactions):
            return Reply.error(
                500, f"{self.name}: only {len(self.interactions)} recorded responses", should_retry=False
            )
        return self._reply(self.interactions[index])

    @staticmethod
    def _reply(interaction: dict[str, Any]) -> Reply:
        response = interaction["response"]
        return Reply.raw(int(response["status"]), str(response["body"]), str(response["content_type"]))

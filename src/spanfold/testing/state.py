"""Per-server state shared by the request threads: id counters and the Responses API's stored conversations."""

from __future__ import annotations

import threading
from typing import Any


class Ids:
    """Deterministic ids, one counter per prefix: ``next("call_mock_")`` -> ``call_mock_1``, ``call_mock_2`` ..."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def next(self, prefix: str) -> str:
        with self._lock:
            count = self._counts.get(prefix, 0) + 1
            self._counts[prefix] = count
        return f"{prefix}{count}"

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()


class ResponseStore:
    """Responses API ``previous_response_id``: the conversation items (inputs and outputs) up to each response."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, tuple[dict[str, Any], ...]] = {}

    def save(self, response_id: str, items: list[dict[str, Any]]) -> None:
        with self._lock:
            self._items[response_id] = tuple(items)

    def get(self, response_id: str) -> tuple[dict[str, Any], ...] | None:
        with self._lock:
            return self._items.get(response_id)

    def reset(self) -> None:
        with self._lock:
            self._items.clear()

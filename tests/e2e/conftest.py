"""End-to-end fixtures: spanfold.init() writing JSONL, the embedded mock server, and an independent oracle."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import spanfold
from spanfold.testing import MockLLMServer, scenarios


class Traced:
    """spanfold initialised for one test, writing to a temporary directory."""

    def __init__(self, handle: Any, directory: Path) -> None:
        self.handle = handle
        self.directory = directory

    def traces(self) -> list[list[dict[str, Any]]]:
        """Every trace written so far (after a flush), each an Invariant event list."""
        assert spanfold.flush(timeout=30)
        path = self.directory / "traces.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

    def metas(self) -> list[dict[str, Any]]:
        path = self.directory / "traces.meta.jsonl"
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

    def one(self) -> list[dict[str, Any]]:
        traces = self.traces()
        assert len(traces) == 1, f"expected one trace, got {len(traces)}: {traces}"
        return traces[0]


@pytest.fixture
def traced(tmp_path: Path, _global_provider: Any) -> Iterator[Traced]:
    directory = tmp_path / "traces"
    handle = spanfold.init(output=str(directory), capture_content=True)
    try:
        yield Traced(handle, directory)
    finally:
        spanfold.shutdown()


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer(scenarios.weather_agent) as srv:
        yield srv


def invariant_of(history: list[Any]) -> list[dict[str, Any]]:
    """The Invariant events an agent's own message history stands for (the test oracle; no spanfold code)."""

    def field(msg: Any, key: str) -> Any:
        return msg.get(key) if isinstance(msg, dict) else getattr(msg, key, None)

    events: list[dict[str, Any]] = []
    for msg in history:
        role = field(msg, "role")
        if role == "tool":
            events.append(
                {"role": "tool", "content": field(msg, "content"), "tool_call_id": field(msg, "tool_call_id")}
            )
            continue
        event: dict[str, Any] = {"role": role, "content": field(msg, "content") or None}
        calls = field(msg, "tool_calls") or []
        if calls:
            event["tool_calls"] = [
                {
                    "id": field(c, "id"),
                    "type": "function",
                    "function": {
                        "name": field(field(c, "function"), "name"),
                        "arguments": json.loads(field(field(c, "function"), "arguments")),
                    },
                }
                for c in calls
            ]
        events.append(event)
    return events

"""End-to-end fixtures: spanfold.init() writing JSONL, the embedded mock server, and an independent oracle."""

from __future__ import annotations

import importlib.util
import json
from typing import Any


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # its parent package is missing
        return False


#: The SDK-matrix venvs hold openai and anthropic only: the Gemini and Ollama id tests are the main venv's.
collect_ignore = [] if all(map(_installed, ("google.genai", "ollama"))) else ["test_tool_call_ids.py"]


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

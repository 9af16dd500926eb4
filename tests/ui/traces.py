"""Trace lines the ui tests write (Invariant events, one trace per line, with a metadata sibling)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

XSS_SCRIPT = "<script>window.__xss = 1</script>"
XSS_IMG = '<img src=x onerror="window.__xss = 2">'


def trace_id(n: int) -> str:
    """The trace id of run ``n`` (its permalink in the ui)."""
    return f"{n:032x}"


def trace(
    n: int, *, tool: str = "search", model: str = "gpt-test", error: bool = False, text: str | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One small run: a user question, a tool call and its output, an answer; and its metadata record."""
    output: dict[str, Any] = {"role": "tool", "content": f"result {n}", "tool_call_id": f"c{n}"}
    if error:
        output["error"] = {"type": "ToolError", "message": f"tool failed on run {n}"}
    events = [
        {"role": "user", "content": text if text is not None else f"question number {n}"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"c{n}", "type": "function", "function": {"name": tool, "arguments": {"q": n}}}],
        },
        output,
        {"role": "assistant", "content": f"answer {n}"},
    ]
    meta = {
        "metadata": {
            "trace_id": trace_id(n),
            "name": f"agent-{n % 7}",
            "models": [model],
            "usage": {"input_tokens": 100 + n, "output_tokens": 10 + n % 50},
            "start": f"2026-01-01T00:{(n // 60) % 60:02d}:{n % 60:02d}.000Z",
            "duration_ms": 1000.0 + n,
            "status": "complete" if n % 10 else "incomplete",
        }
    }
    return events, meta


def write(directory: Path, runs: list[tuple[list[dict[str, Any]], dict[str, Any]]], name: str = "traces") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.jsonl"
    with path.open("a", encoding="utf-8") as events, (directory / f"{name}.meta.jsonl").open("a") as metas:
        for ev, meta in runs:
            metas.write(json.dumps(meta) + "\n")
            events.write(json.dumps(ev) + "\n")
    return path

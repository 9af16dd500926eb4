"""Encode traces for files. (Reading, validation and the compact format grow here; see issue 4.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from spanfold.trace.model import Trace

FORMATS = ("invariant", "agentv")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def invariant_line(trace: Trace) -> str:
    """One JSONL line: exactly the Invariant event list (a bare JSON list)."""
    return _dumps(trace.to_invariant())


def agentv_document(trace: Trace) -> dict[str, Any]:
    """``{trace: [TraceEvent], trace_summary: TraceSummary, metadata}``."""
    events: list[dict[str, Any]] = []
    for msg in trace.events:
        ts = msg.timestamp
        if msg.role == "error":
            events.append({"type": "error", "timestamp": ts, "text": msg.text(), "metadata": msg.error or {}})
            continue
        if msg.role == "tool":
            ev: dict[str, Any] = {
                "type": "tool_result",
                "timestamp": ts,
                "id": msg.tool_call_id,
                "name": msg.name,
                "output": msg.content,
            }
            if msg.error is not None:
                ev["metadata"] = {"error": msg.error}
            events.append(ev)
            continue
        if msg.content or not msg.tool_calls:
            kind = "model_step" if msg.role == "assistant" else "message"
            events.append({"type": kind, "timestamp": ts, "text": msg.text(), "metadata": {"role": msg.role}})
        for tc in msg.tool_calls:
            events.append({"type": "tool_call", "timestamp": ts, "id": tc.id, "name": tc.name, "input": tc.arguments})
    for ev in events:
        if ev["timestamp"] is None:
            ev["timestamp"] = trace.meta.start
    return {"trace": events, "trace_summary": trace.summary().to_dict(), "metadata": trace.meta.to_dict()}


def agentv_line(trace: Trace) -> str:
    return _dumps(agentv_document(trace))


ENCODERS: dict[str, Callable[[Trace], str]] = {"invariant": invariant_line, "agentv": agentv_line}


def encode_line(trace: Trace, fmt: str) -> str:
    """The trace as one JSON line (no newline) in format ``fmt``."""
    try:
        return ENCODERS[fmt](trace)
    except KeyError:
        raise ValueError(f"unknown trace format {fmt!r}; expected one of {', '.join(ENCODERS)}") from None


def meta_line(trace: Trace) -> str:
    """The sibling metadata record of a trace."""
    return _dumps({"metadata": trace.meta.to_dict(), "summary": trace.summary().to_dict()})

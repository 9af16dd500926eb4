"""Helpers for the checks tests: small Invariant traces built from a list of steps."""

from __future__ import annotations

import itertools
from typing import Any

Step = str | tuple[str, dict[str, Any]] | list[str | tuple[str, dict[str, Any]]]


def _call(spec: str | tuple[str, dict[str, Any]], ids: itertools.count[int]) -> dict[str, Any]:
    name, args = (spec, {}) if isinstance(spec, str) else spec
    return {"id": f"call_{next(ids)}", "type": "function", "function": {"name": name, "arguments": args}}


def make_trace(*steps: Step, question: str = "What is the weather?", answer: str = "All done.") -> list[dict[str, Any]]:
    """A user question, one assistant turn per step (a list = parallel calls), each call answered, a final answer.

    A call ``name`` or ``(name, args)``; its output is ``"<name> ok"``.
    """
    ids = itertools.count(1)
    events: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for step in steps:
        calls = [_call(s, ids) for s in (step if isinstance(step, list) else [step])]
        events.append({"role": "assistant", "content": None, "tool_calls": calls})
        for c in calls:
            events.append({"role": "tool", "tool_call_id": c["id"], "content": f"{c['function']['name']} ok"})
    events.append({"role": "assistant", "content": answer})
    return events

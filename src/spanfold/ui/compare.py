"""Two runs compared: where their tool trajectories part, the first message where they differ, what each call's
output and each run's answer became (a diff, line by line), and the deltas of their numbers (tokens, latency, steps,
calls, errors, cost when both record one).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from spanfold.checks.trajectory import ExpectedCall
from spanfold.checks.view import Call, CompactMessage, TraceView, view_of
from spanfold.trace.model import Trace
from spanfold.ui.opened import clip
from spanfold.ui.steps import trace_cost

#: Characters of each side a diff compares (the rest is said to be left out).
DIFF_CHARS = 20_000
#: Outputs diffed at most (the first calls whose outputs differ).
DIFFS = 20
#: Characters kept at each end of a long unchanged stretch of a diff.
CONTEXT = 300


def divergence(a: list[Call], b: list[Call]) -> int | None:
    """Where two trajectories part (0-based), by ``tool_trajectory``'s ``exact`` rule: call i of one must be
    call i of the other, same tool and equal arguments; None when they are the same."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if not ExpectedCall(x.name, x.args, "exact").matches(y):
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _key(message: CompactMessage) -> tuple[Any, ...]:
    """What makes two messages the same: role, text, and each call's tool and arguments."""
    calls = tuple((c.name, json.dumps(c.args, sort_keys=True, default=str)) for c in message.calls)
    return (message.role, message.content or "", calls)


def _message(message: CompactMessage | None) -> dict[str, Any] | None:
    if message is None:
        return None
    sent: dict[str, Any]
    sent, _ = clip(
        {
            "role": message.role,
            "content": message.content,
            "calls": [{"name": c.name, "args": c.args} for c in message.calls],
            "event": message.event,
        }
    )
    return sent


def first_difference(a: list[CompactMessage], b: list[CompactMessage]) -> dict[str, Any] | None:
    """The first message (0-based ``index``) where the runs differ, each side's (None past its end); None when every
    message is the same."""
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x is None or y is None or _key(x) != _key(y):
            return {"index": i, "a": _message(x), "b": _message(y)}
    return None


def diff(a: str, b: str) -> dict[str, Any]:
    """``a`` and ``b`` compared line by line: ``parts`` of ``equal`` / ``delete`` (only in a) / ``insert`` (only in
    b) text, in order; long unchanged stretches shortened; ``cut`` when either text was longer than compared."""
    x, y = a[:DIFF_CHARS], b[:DIFF_CHARS]
    left, right = x.splitlines(keepends=True), y.splitlines(keepends=True)
    parts: list[dict[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, left, right, autojunk=False).get_opcodes():
        if op == "equal":
            same = "".join(left[i1:i2])
            if len(same) > 3 * CONTEXT:
                skipped = f"\n… {len(same) - 2 * CONTEXT:,} characters the same …\n"
                same = same[:CONTEXT] + skipped + same[-CONTEXT:]
            parts.append({"op": "equal", "text": same})
            continue
        if op in ("delete", "replace"):
            parts.append({"op": "delete", "text": "".join(left[i1:i2])})
        if op in ("insert", "replace"):
            parts.append({"op": "insert", "text": "".join(right[j1:j2])})
    return {"parts": parts, "cut": len(a) > DIFF_CHARS or len(b) > DIFF_CHARS}


def _answer(view: TraceView) -> str:
    """A run's answer: its last assistant message's text."""
    return next((m.content or "" for m in reversed(view.messages) if m.role == "assistant" and m.content), "")


def output_diffs(a: list[Call], b: list[Call]) -> list[dict[str, Any]]:
    """Each call of one run beside the call at its place in the other (same tool), whose outputs differ: the diff."""
    out: list[dict[str, Any]] = []
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x.name != y.name:
            continue
        left = _text(x.error if x.error is not None and not x.has_output else x.output)
        right = _text(y.error if y.error is not None and not y.has_output else y.output)
        if left != right:
            out.append({"call": i, "name": x.name, **diff(left, right)})
            if len(out) >= DIFFS:
                break
    return out


@dataclass(slots=True)
class Side:
    """One run of a comparison: its row as listed, trace, and waterfall (its steps' times)."""

    row: dict[str, Any]
    trace: Trace | None
    waterfall: dict[str, Any] | None
    extra: dict[str, Any]

    def numbers(self) -> dict[str, Any]:
        steps = (self.waterfall or {}).get("steps", [])

        def took(kind: str) -> float | None:
            times = [s["duration_ms"] for s in steps if s["kind"] == kind and s["duration_ms"] is not None]
            return sum(times) if times else None

        row = self.row
        return {
            "tokens_in": row["tokens_in"],
            "tokens_out": row["tokens_out"],
            "duration_ms": row["duration_ms"],
            "model_ms": took("model"),
            "tool_ms": took("tool"),
            "steps": row["steps"],
            "calls": row["calls"],
            "errors": row["errors"],
            "cost": trace_cost(self.extra),
        }


def _delta(a: Any, b: Any) -> Any:
    if isinstance(a, dict) and isinstance(b, dict):  # costs: only in one currency
        same = a["currency"] == b["currency"]
        return {"amount": b["amount"] - a["amount"], "currency": a["currency"]} if same else None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return b - a
    return None


def compare(a: Side, b: Side) -> dict[str, Any]:
    """Everything the compare page shows of two runs."""
    view_a = view_of(a.trace) if a.trace is not None else None
    view_b = view_of(b.trace) if b.trace is not None else None
    calls_a = view_a.calls if view_a is not None else []
    calls_b = view_b.calls if view_b is not None else []
    numbers_a, numbers_b = a.numbers(), b.numbers()
    answers = (_answer(view_a) if view_a else "", _answer(view_b) if view_b else "")
    return {
        "a": {"row": a.row, "calls": [_call(c) for c in calls_a], "numbers": numbers_a},
        "b": {"row": b.row, "calls": [_call(c) for c in calls_b], "numbers": numbers_b},
        "divergence": divergence(calls_a, calls_b),
        "message": first_difference(view_a.messages if view_a else [], view_b.messages if view_b else []),
        "outputs": output_diffs(calls_a, calls_b),
        "answer": diff(*answers) if answers[0] != answers[1] else None,
        "deltas": {k: _delta(numbers_a[k], numbers_b[k]) for k in numbers_a},
    }


def _call(call: Call) -> dict[str, Any]:
    sent: dict[str, Any]
    sent, _ = clip(
        {
            "index": call.index,
            "name": call.name,
            "args": call.args,
            "output": call.output if call.has_output else None,
            "error": call.error,
            "event": call.event,
        }
    )
    return sent

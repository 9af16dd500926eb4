"""Assertion helpers for tests: a failed check raises AssertionError with its reasons and the actual calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from spanfold.checks.matching import clip, show, show_call
from spanfold.checks.messages import MessagesCheck
from spanfold.checks.result import CheckResult
from spanfold.checks.trajectory import TrajectoryCheck
from spanfold.checks.view import TraceLike, TraceView, view_of

#: At most this many actual calls / messages are listed under a failure.
LISTED = 30


def _calls(view: TraceView) -> list[str]:
    lines = [f"  {c.index}. {show_call(c.name, c.args)}" for c in view.calls[:LISTED]]
    if len(view.calls) > LISTED:
        lines.append(f"  ... and {len(view.calls) - LISTED} more")
    return ["actual tool calls:", *lines] if lines else ["actual tool calls: none"]


def _messages(view: TraceView) -> list[str]:
    lines = []
    for m in view.messages[:LISTED]:
        text = "" if m.content is None else " " + show(m.content)
        calls = ", ".join(show_call(c.name, c.args) for c in m.calls)
        lines.append(f"  event {m.event} {m.role}:{text}" + (f" -> {clip(calls, 120)}" if calls else ""))
    if len(view.messages) > LISTED:
        lines.append(f"  ... and {len(view.messages) - LISTED} more")
    return ["actual messages:", *lines] if lines else ["actual messages: none"]


def _fail(result: CheckResult, what: str, listing: list[str]) -> AssertionError:
    head = f"{what} failed: score {result.score:.2f} < threshold {result.threshold:.2f}"
    return AssertionError("\n".join([head, *(f"  - {r}" for r in result.reasons), *listing]))


def _view(trace: TraceLike | None) -> TraceView:
    if trace is None:
        raise AssertionError("no trace to check (did the code under test call an instrumented client?)")
    return view_of(trace)


def assert_trajectory(
    trace: TraceLike | None,
    expected: Sequence[str | Mapping[str, Any]] | None = None,
    mode: str = "in_order",
    *,
    minimums: Mapping[str, int] | None = None,
    threshold: float = 1.0,
) -> CheckResult:
    """``tool_trajectory`` that raises AssertionError (reasons and the actual calls) unless it passes."""
    __tracebackhide__ = True
    check = TrajectoryCheck.build(
        mode=mode, expected=None if expected is None else list(expected), minimums=minimums, threshold=threshold
    )
    view = _view(trace)
    result = check.run(view)
    if not result.passed:
        raise _fail(result, f"tool_trajectory ({check.mode})", _calls(view))
    return result


def assert_messages(
    trace: TraceLike | None,
    spec: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    *,
    threshold: float = 1.0,
) -> CheckResult:
    """``expected_messages`` that raises AssertionError (reasons and the actual messages) unless it passes."""
    __tracebackhide__ = True
    items = spec if isinstance(spec, Mapping) else list(spec)
    check = MessagesCheck.build(spec=items, threshold=threshold)
    view = _view(trace)
    result = check.run(view)
    if not result.passed:
        raise _fail(result, "expected_messages", _messages(view))
    return result

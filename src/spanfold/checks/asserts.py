"""Assertion helpers for tests: a failed check raises AssertionError with its reasons and the actual calls."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from spanfold.checks.agentv.metrics import execution_metrics
from spanfold.checks.expected_messages_check import MessagesCheck
from spanfold.checks.matching import clip, show, show_call
from spanfold.checks.result import CheckResult
from spanfold.checks.spec import Spec, load_spec, parse_spec
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


def assert_execution_metrics(
    trace: TraceLike | None,
    *,
    max_tool_calls: float | None = None,
    max_llm_calls: float | None = None,
    max_tokens: float | None = None,
    max_cost_usd: float | None = None,
    max_duration_ms: float | None = None,
    threshold: float = 1.0,
) -> CheckResult:
    """AgentV's ``execution-metrics`` budgets (:func:`spanfold.checks.agentv.metrics.execution_metrics`) that raise
    AssertionError (each budget missed, and the actual calls) unless they pass."""
    __tracebackhide__ = True
    view = _view(trace)
    result = execution_metrics(
        view,
        max_tool_calls=max_tool_calls,
        max_llm_calls=max_llm_calls,
        max_tokens=max_tokens,
        max_cost_usd=max_cost_usd,
        max_duration_ms=max_duration_ms,
        threshold=threshold,
    )
    if not result.passed:
        raise _fail(result, "execution-metrics", _calls(view))
    return result


def _spec(spec: Spec | str | os.PathLike[str] | Mapping[str, Any] | Sequence[Any]) -> Spec:
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, (str, os.PathLike)):
        return load_spec(spec)
    return parse_spec(spec)


def assert_spec(
    trace: TraceLike | None,
    spec: Spec | str | os.PathLike[str] | Mapping[str, Any] | Sequence[Any],
    *,
    test: str | None = None,
) -> list[CheckResult]:
    """Every check of ``spec`` on ``trace``, raising AssertionError (each failed check's reasons, and the actual
    calls) unless all pass. ``spec``: a :class:`~spanfold.checks.spec.Spec`, a spec file's path, or spec data; an
    AgentV eval file is graded as AgentV grades it. ``test``: the id of the test to run (an eval file of several
    tests needs it; by default every check runs)."""
    __tracebackhide__ = True
    loaded = _spec(spec)
    checks = [c for c in loaded.checks if test is None or c.name == test]
    if test is not None and not checks:
        raise ValueError(f"the spec has no test {test!r} (it has {', '.join(c.name for c in loaded.checks)})")
    if test is None and loaded.by_position:
        raise ValueError(f"the eval file has {len(loaded.checks)} tests: name the one to run (test=...)")
    view = _view(trace)
    results = [check.run(view) for check in checks]
    failed = [r for r in results if not r.passed]
    if failed:
        lines = [f"{len(failed)} of {len(results)} checks failed:"]
        for r in failed:
            lines.append(f"  {r.name}: score {r.score:.2f} < threshold {r.threshold:.2f}")
            lines.extend(f"    - {reason}" for reason in r.reasons)
        raise AssertionError("\n".join([*lines, *_calls(view)]))
    return results

"""AgentV's ``execution-metrics`` grader: a run's budgets, scored as AgentV 4.42 scores them.

Each budget given is one assertion: ``max_tool_calls`` (the run's tool calls), ``max_llm_calls`` (its LLM calls:
the assistant messages, a failed model call included), ``max_tokens`` (input + output), ``max_cost_usd``,
``max_duration_ms`` (the run's), ``target_exploration_ratio`` (the share of calls to AgentV's exploration tools,
within ``exploration_tolerance``, 0.2 by default). A figure the trace does not hold (no token usage reported, no
cost in its metadata) fails its assertion, as in AgentV: a budget is never met by a guess. Score = assertions met
/ assertions; the grader passes at 0.8.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from spanfold.checks.agentv.graders import (
    COMMON_KEYS,
    Assertion,
    Common,
    Grade,
    GraderCheck,
    grade,
    grader_name,
    js_number,
    parse_common,
)
from spanfold.checks.errors import SpecError, SpecPath
from spanfold.checks.fields import check_keys, non_negative, parse_threshold
from spanfold.checks.matching import show
from spanfold.checks.result import CheckResult
from spanfold.checks.view import TraceLike, TraceView

#: The budgets, by their YAML names (AgentV also reads each in camelCase).
BUDGETS = ("max_tool_calls", "max_llm_calls", "max_tokens", "max_cost_usd", "max_duration_ms")
_RATIO = ("target_exploration_ratio", "exploration_tolerance")
_CAMEL = {
    "maxToolCalls": "max_tool_calls",
    "maxLlmCalls": "max_llm_calls",
    "maxTokens": "max_tokens",
    "maxCostUsd": "max_cost_usd",
    "maxDurationMs": "max_duration_ms",
    "targetExplorationRatio": "target_exploration_ratio",
    "explorationTolerance": "exploration_tolerance",
}
KEYS = (*COMMON_KEYS, *BUDGETS, *_RATIO, *_CAMEL)
#: Tools AgentV counts as exploration (read-only) for ``target_exploration_ratio``.
EXPLORATION_TOOLS = ("read", "grep", "glob", "search", "list", "Read", "Grep", "Glob", "WebSearch", "WebFetch")


def _count(value: float, limit: float, what: str) -> Assertion:
    sign = "<=" if value <= limit else ">"
    return Assertion(f"{what} {js_number(value)} {sign} {js_number(limit)} max", value <= limit)


@dataclass(frozen=True, slots=True)
class ExecutionMetrics:
    """A validated AgentV ``execution-metrics`` grader."""

    name: str
    limits: Mapping[str, float]
    common: Common

    kind: ClassVar[str] = "execution-metrics"

    def grade(self, view: TraceView) -> Grade:
        m = view.agentv()
        limits = self.limits
        out: list[Assertion] = []
        if "max_tool_calls" in limits:
            out.append(_count(m.tool_call_count, limits["max_tool_calls"], "Tool calls"))
        if "max_llm_calls" in limits:
            out.append(_count(m.llm_calls, limits["max_llm_calls"], "LLM calls"))
        if "max_tokens" in limits:
            if m.tokens is None:
                out.append(Assertion("Token usage data not available", False))
            else:
                out.append(_count(m.tokens["input"] + m.tokens["output"], limits["max_tokens"], "Total tokens"))
        if "max_cost_usd" in limits:
            limit = limits["max_cost_usd"]
            if m.cost_usd is None:
                out.append(Assertion("Cost data not available", False))
            else:
                sign = "<=" if m.cost_usd <= limit else ">"
                out.append(Assertion(f"Cost ${m.cost_usd:.4f} {sign} ${limit:.4f} max", m.cost_usd <= limit))
        if "max_duration_ms" in limits:
            limit = limits["max_duration_ms"]
            if m.duration_ms is None:
                out.append(Assertion("Duration data not available", False))
            else:
                sign = "<=" if m.duration_ms <= limit else ">"
                text = f"Duration {js_number(m.duration_ms)}ms {sign} {js_number(limit)}ms max"
                out.append(Assertion(text, m.duration_ms <= limit))
        if "target_exploration_ratio" in limits:
            out.append(self._exploration(m.tool_calls, m.tool_call_count))
        score = sum(a.passed for a in out) / len(out) if out else 0.0
        return grade(self.name, self.kind, score, out)

    def _exploration(self, counts: Mapping[str, int], total: int) -> Assertion:
        if total == 0:
            return Assertion("Exploration ratio not available (no tool calls)", False)
        target = self.limits["target_exploration_ratio"]
        tolerance = self.limits.get("exploration_tolerance", 0.2)
        ratio = sum(counts.get(tool, 0) for tool in EXPLORATION_TOOLS) / total
        diff = abs(ratio - target)
        if diff <= tolerance:
            return Assertion(f"Exploration ratio {ratio:.2f} within tolerance of target {js_number(target)}", True)
        return Assertion(
            f"Exploration ratio {ratio:.2f} outside tolerance of target {js_number(target)} "
            f"(diff: {diff:.2f}, tolerance: {js_number(tolerance)})",
            False,
        )


def build(item: Mapping[str, Any], path: SpecPath, *, also: Sequence[str] = ()) -> ExecutionMetrics:
    """An ``execution-metrics`` grader from its YAML (``also``: keys the enclosing layout adds, read by it)."""
    check_keys(item, (*KEYS, *also), path, "an execution-metrics grader")
    limits: dict[str, float] = {}
    for key, value in item.items():
        name = _CAMEL.get(key, key)
        if name not in BUDGETS and name not in _RATIO:
            continue
        if name in limits:
            raise SpecError(f"give {name} once (it is also written {key})", (*path, key))
        number = non_negative(value)
        if number is None:
            raise SpecError(f"{name} must be a finite number >= 0 (got {show(value)})", (*path, key))
        if name == "target_exploration_ratio" and number > 1:
            raise SpecError(f"{name} must be from 0 to 1 (got {show(value)})", (*path, key))
        limits[name] = number
    if not any(name in limits for name in (*BUDGETS, "target_exploration_ratio")):
        raise SpecError(f"an execution-metrics grader needs at least one of {', '.join(BUDGETS)}", path)
    return ExecutionMetrics(
        name=grader_name(item, path, "execution-metrics"), limits=limits, common=parse_common(item, path)
    )


def execution_metrics(
    trace: TraceLike | TraceView,
    *,
    max_tool_calls: float | None = None,
    max_llm_calls: float | None = None,
    max_tokens: float | None = None,
    max_cost_usd: float | None = None,
    max_duration_ms: float | None = None,
    threshold: float = 1.0,
    name: str | None = None,
) -> CheckResult:
    """The budgets given, checked on ``trace`` as AgentV's ``execution-metrics`` grader scores them; passes at
    ``threshold`` (every budget met, unless lowered). :class:`SpecError` (a ValueError) for invalid arguments."""
    budgets = {
        "max_tool_calls": max_tool_calls,
        "max_llm_calls": max_llm_calls,
        "max_tokens": max_tokens,
        "max_cost_usd": max_cost_usd,
        "max_duration_ms": max_duration_ms,
    }
    item: dict[str, Any] = {k: v for k, v in budgets.items() if v is not None}
    if name is not None:
        item["name"] = name
    grader = build(item, ())
    return GraderCheck(grader.name, grader, parse_threshold(threshold, ("threshold",))).run(trace)

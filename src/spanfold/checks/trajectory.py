"""``tool_trajectory``: the sequence of tool calls against an expectation.

Modes and scores (``hits / total``; 1.0 when there is nothing to check):

=========== ============================================================================================
any_order   each ``minimums`` entry (``tool: n``, at least n calls) and each distinct ``expected`` item (at
            least as many matching calls as it is listed) is a requirement; score = requirements met / all
in_order    the expected calls, found by a forward scan (others may come between); score = found / expected
exact       call i must match expected item i; score = matching positions / max(expected, actual), so
            missing and extra calls both cost
subset      every actual call is matched to its own expected item (a multiset: list a tool twice to allow
            two calls); score = matched calls / actual calls
superset    every expected item is matched to its own actual call; score = matched / expected
=========== ============================================================================================
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from spanfold.checks.errors import SpecError, SpecPath
from spanfold.checks.fields import check_keys, parse_name, parse_threshold, require_list, require_mapping
from spanfold.checks.matching import (
    ANY,
    ArgsMatch,
    TextMatch,
    args_diff,
    parse_args_match,
    parse_text_match,
    show,
    show_call,
)
from spanfold.checks.result import CheckResult, make_result
from spanfold.checks.view import Call, TraceLike, TraceView, view_of
from spanfold.text import plural

Mode = Literal["any_order", "in_order", "exact", "subset", "superset"]
MODES: tuple[Mode, ...] = ("any_order", "in_order", "exact", "subset", "superset")

_ITEM_KEYS = ("tool", "args", "input", "args_match", "output")


@dataclass(frozen=True, slots=True)
class ExpectedCall:
    """One expected call: a tool name, optionally its arguments (matched per ``args_match``) and output."""

    tool: str
    args: Any = None
    args_match: ArgsMatch = "superset"
    output: TextMatch = ANY

    def diff(self, call: Call) -> str | None:
        """Why ``call`` is not this call (its name is assumed right), or None."""
        found = args_diff(self.args, call.args, self.args_match)
        if found is not None:
            return found
        if self.output.kind == "any":
            return None
        if not call.has_output:
            return "output: none recorded"
        found = self.output.diff(call.output)
        return None if found is None else f"output: {found}"

    def matches(self, call: Call) -> bool:
        return call.name == self.tool and self.diff(call) is None

    def describe(self) -> str:
        text = self.tool if self.args is None or self.args_match == "ignore" else show_call(self.tool, self.args)
        if self.args is not None and self.args_match not in ("superset", "ignore"):
            text += f" [args {self.args_match}]"
        if self.output.kind != "any":
            text += f" -> {self.output.describe()}"
        return text

    def key(self) -> str:
        """Equal for items that expect the same thing."""
        return json.dumps(
            [self.tool, self.args, self.args_match, self.output.kind, str(self.output.value)],
            sort_keys=True,
            default=str,
        )


def parse_expected_call(raw: Any, path: SpecPath) -> ExpectedCall:
    """A tool name, or ``{tool, args|input, args_match, output}``."""
    if isinstance(raw, str) and raw:
        return ExpectedCall(raw)
    item = require_mapping(raw, path, "an expected call (a tool name or {tool: ...})")
    check_keys(item, _ITEM_KEYS, path, "an expected call")
    tool = item.get("tool")
    if not isinstance(tool, str) or not tool:
        raise SpecError(f"tool must be a tool name (got {show(tool)})", (*path, "tool"))
    if "args" in item and "input" in item:
        raise SpecError("give args or input (the same thing), not both", (*path, "input"))
    args_key = "args" if "args" in item else "input"
    args = item.get(args_key)
    args_match = parse_args_match(item.get("args_match", "superset"), (*path, "args_match"))
    output = parse_text_match(item.get("output"), (*path, "output"), data=True)
    return ExpectedCall(tool=tool, args=args, args_match=args_match, output=output)


def parse_minimums(raw: Any, path: SpecPath) -> dict[str, int]:
    table = require_mapping(raw, path, "minimums")
    out: dict[str, int] = {}
    for tool, n in table.items():
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise SpecError(f"minimum for {show(tool)} must be a whole number >= 0 (got {show(n)})", (*path, str(tool)))
        out[str(tool)] = n
    return out


def parse_mode(raw: Any, path: SpecPath) -> Mode:
    for mode in MODES:
        if raw == mode:
            return mode
    raise SpecError(f"mode must be one of {', '.join(MODES)} (got {show(raw)})", path)


# ---- scoring ------------------------------------------------------------------------------------------------

Outcome = tuple[int, int, list[str]]  # hits, total, reasons


def _near(exp: ExpectedCall, calls: Sequence[Call]) -> str | None:
    """The first call with the expected name, and why it did not match."""
    for call in calls:
        if call.name == exp.tool:
            return f"call {call.index} {show_call(call.name, call.args)}: {exp.diff(call)}"
    return None


def _matching_calls(expected: list[ExpectedCall], calls: list[Call]) -> list[list[int]]:
    """For each expected item, the indexes of the calls it matches (computed once per distinct item)."""
    by_key: dict[str, list[int]] = {}
    out: list[list[int]] = []
    for exp in expected:
        key = exp.key()
        if key not in by_key:
            by_key[key] = [i for i, c in enumerate(calls) if exp.matches(c)]
        out.append(by_key[key])
    return out


def _max_matching(adj: list[list[int]], n_right: int) -> list[int | None]:
    """A maximum bipartite matching, left -> right (Kuhn's augmenting paths, iterative).

    Left items are placed in order and stay matched once placed, so earlier ones win ties. The visited marks
    are kept across failed searches (a failed search changes nothing), which makes a run of unmatched items
    cost one graph walk in all.
    """
    owner: list[int | None] = [None] * n_right
    seen = [False] * n_right
    for start in range(len(adj)):
        parent: dict[int, tuple[int, int | None]] = {}  # right -> (left that reached it, right it came from)
        stack: list[tuple[int, int | None]] = [(start, None)]
        free: int | None = None
        while stack and free is None:
            left, came_from = stack.pop()
            for r in adj[left]:
                if seen[r]:
                    continue
                seen[r] = True
                parent[r] = (left, came_from)
                holder = owner[r]
                if holder is None:
                    free = r
                    break
                stack.append((holder, r))
        if free is None:
            continue
        r_opt: int | None = free
        while r_opt is not None:  # flip the path back to start
            left, prev = parent[r_opt]
            owner[r_opt] = left
            r_opt = prev
        seen = [False] * n_right
    match: list[int | None] = [None] * len(adj)
    for r, left_i in enumerate(owner):
        if left_i is not None:
            match[left_i] = r
    return match


def _any_order(expected: list[ExpectedCall], minimums: dict[str, int], calls: list[Call]) -> Outcome:
    reasons: list[str] = []
    hits = total = 0
    for tool, need in minimums.items():
        got = sum(1 for c in calls if c.name == tool)
        total += 1
        if got >= need:
            hits += 1
        else:
            reasons.append(f"{tool}: called {plural(got, 'time')}, expected at least {need}")
    groups: dict[str, tuple[ExpectedCall, int]] = {}
    for exp in expected:
        first, n = groups.get(exp.key(), (exp, 0))
        groups[exp.key()] = (first, n + 1)
    for exp, need in groups.values():
        got = sum(1 for c in calls if exp.matches(c))
        total += 1
        if got >= need:
            hits += 1
            continue
        plain = exp.args is None and exp.output.kind == "any"
        count = f"called {plural(got, 'time')}" if plain else plural(got, "matching call")
        reason = f"{exp.describe()}: {count}, expected at least {need}"
        near = _near(exp, [c for c in calls if not exp.matches(c)]) if exp.args is not None else None
        reasons.append(reason if near is None else f"{reason}; {near}")
    return hits, total, reasons


def _in_order(expected: list[ExpectedCall], minimums: dict[str, int], calls: list[Call]) -> Outcome:
    reasons: list[str] = []
    pos = hits = 0
    for j, exp in enumerate(expected):
        found = next((i for i in range(pos, len(calls)) if exp.matches(calls[i])), None)
        if found is not None:
            hits += 1
            pos = found + 1
            continue
        what = f"call {pos + 1}: expected {exp.describe()} (expected[{j}])"
        if pos >= len(calls):
            reasons.append(f"{what} but the trace has {plural(len(calls), 'tool call')}")
            continue
        here = calls[pos]
        got = f"{what} but got {show_call(here.name, here.args)}"
        if here.name == exp.tool:
            got += f" ({exp.diff(here)})"
        near = _near(exp, calls[pos + 1 :])
        reasons.append(f"{got}; later: {near}" if near else f"{got}; no later call matches")
    return hits, len(expected), reasons


def _exact(expected: list[ExpectedCall], minimums: dict[str, int], calls: list[Call]) -> Outcome:
    reasons: list[str] = []
    hits = 0
    for i, (exp, call) in enumerate(zip(expected, calls, strict=False)):
        if exp.matches(call):
            hits += 1
            continue
        why = exp.diff(call) if call.name == exp.tool else None
        got = show_call(call.name, call.args)
        reasons.append(f"call {i + 1}: expected {exp.describe()} but got {got}" + (f" ({why})" if why else ""))
    n_exp, n_act = len(expected), len(calls)
    if n_exp > n_act:
        missing = ", ".join(e.describe() for e in expected[n_act:])
        reasons.append(f"call {n_act + 1}: expected {missing} but the trace has {plural(n_act, 'tool call')}")
    elif n_act > n_exp:
        extra = calls[n_exp]
        reasons.append(
            f"call {n_exp + 1}: unexpected extra call {show_call(extra.name, extra.args)} "
            f"(expected {plural(n_exp, 'call')}, got {n_act})"
        )
    return hits, max(n_exp, n_act), reasons


def _subset(expected: list[ExpectedCall], minimums: dict[str, int], calls: list[Call]) -> Outcome:
    by_call: list[list[int]] = [[] for _ in calls]
    for e, matched in enumerate(_matching_calls(expected, calls)):
        for c in matched:
            by_call[c].append(e)
    match = _max_matching(by_call, len(expected))
    reasons: list[str] = []
    for call, m in zip(calls, match, strict=True):
        if m is not None:
            continue
        got = show_call(call.name, call.args)
        allowed = sum(1 for e in expected if e.matches(call))
        if allowed:
            reasons.append(f"call {call.index}: {got} is one more than the {allowed} expected")
        else:
            reasons.append(f"call {call.index}: {got} is not among the expected calls")
    hits = sum(1 for m in match if m is not None)
    return hits, len(calls), reasons


def _superset(expected: list[ExpectedCall], minimums: dict[str, int], calls: list[Call]) -> Outcome:
    match = _max_matching(_matching_calls(expected, calls), len(calls))
    reasons: list[str] = []
    for j, (exp, m) in enumerate(zip(expected, match, strict=True)):
        if m is not None:
            continue
        what = f"expected {exp.describe()} (expected[{j}])"
        present = sum(1 for c in calls if exp.matches(c))
        if present:
            listed = sum(1 for e in expected if e.key() == exp.key())
            verb = "matches" if present == 1 else "match"
            reasons.append(f"{what}: listed {listed} times but only {plural(present, 'call')} {verb}")
            continue
        near = _near(exp, calls)
        tail = f"; {near}" if near else ""
        reasons.append(f"{what} not found among the {plural(len(calls), 'tool call')}{tail}")
    hits = sum(1 for m in match if m is not None)
    return hits, len(expected), reasons


_SCORERS: dict[Mode, Callable[[list[ExpectedCall], dict[str, int], list[Call]], Outcome]] = {
    "any_order": _any_order,
    "in_order": _in_order,
    "exact": _exact,
    "subset": _subset,
    "superset": _superset,
}


@dataclass(frozen=True, slots=True)
class TrajectoryCheck:
    """A validated ``tool_trajectory`` check; ``run`` it on any number of traces."""

    name: str
    mode: Mode
    expected: tuple[ExpectedCall, ...]
    minimums: Mapping[str, int]
    threshold: float = 1.0

    kind: ClassVar[str] = "tool_trajectory"

    def run(self, trace: TraceLike | TraceView) -> CheckResult:
        calls = view_of(trace).calls
        hits, total, reasons = _SCORERS[self.mode](list(self.expected), dict(self.minimums), calls)
        return make_result(self.name, self.kind, hits, total, self.threshold, reasons)

    @classmethod
    def build(
        cls,
        *,
        mode: Any = "any_order",
        expected: Any = None,
        minimums: Any = None,
        threshold: Any = 1.0,
        name: Any = None,
        path: SpecPath = (),
    ) -> TrajectoryCheck:
        """Validate the arguments (:class:`SpecError` naming the field) and build the check."""
        the_mode = parse_mode(mode, (*path, "mode"))
        if expected is None and the_mode != "any_order":
            raise SpecError(f"expected is required for mode {the_mode}", (*path, "expected"))
        if minimums is not None and the_mode != "any_order":
            raise SpecError(f"minimums apply only to mode any_order (mode is {the_mode})", (*path, "minimums"))
        items = require_list(expected, (*path, "expected"), "expected") if expected is not None else []
        return cls(
            name=parse_name(name, (*path, "name")) if name is not None else cls.kind,
            mode=the_mode,
            expected=tuple(parse_expected_call(item, (*path, "expected", i)) for i, item in enumerate(items)),
            minimums=parse_minimums(minimums, (*path, "minimums")) if minimums is not None else {},
            threshold=parse_threshold(threshold, (*path, "threshold")),
        )


def tool_trajectory(
    trace: TraceLike,
    *,
    mode: Mode | str = "any_order",
    expected: Sequence[str | Mapping[str, Any]] | None = None,
    minimums: Mapping[str, int] | None = None,
    threshold: float = 1.0,
    name: str | None = None,
) -> CheckResult:
    """Check the tool calls of ``trace`` (an Invariant event list or a :class:`spanfold.trace.Trace`).

    ``expected`` items are tool names or ``{"tool": name, "args": {...}, "args_match": "superset"}``
    (``input`` is a synonym of ``args``; ``args_match`` one of exact, superset (default), subset, ignore;
    ``output`` optional). See the module docstring for the modes and their scores. Raises
    :class:`~spanfold.checks.errors.SpecError` (a ValueError) for invalid arguments.
    """
    check = TrajectoryCheck.build(
        mode=mode,
        expected=list(expected) if expected is not None and not isinstance(expected, str) else expected,
        minimums=minimums,
        threshold=threshold,
        name=name,
    )
    return check.run(trace)


__all__ = ["MODES", "ExpectedCall", "TrajectoryCheck", "tool_trajectory"]

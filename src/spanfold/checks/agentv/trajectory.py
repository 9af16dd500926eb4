"""AgentV's ``tool-trajectory`` grader, scored as AgentV 4.42 scores it.

========== ==================================================================================================
any_order  each ``minimums`` entry (``tool: n``) is met or not; score = met / entries (``expected`` is not read)
in_order   a forward scan: the first later call of the expected tool is taken, and it either matches (its
           arguments, then ``max_duration_ms`` when given and timed) or the item fails (that call is used up);
           score = (found + latencies met) / (expected + latencies timed)
exact      call i against expected item i; a call count that differs is reported but costs only the items
           without a call; score as in_order
superset   each expected item takes the first unused call that matches (greedy); score = found / expected
subset     each call must match some expected item (items may be used again); score = allowed calls / calls
========== ==================================================================================================

Arguments: ``args_match`` (on the grader, or per item, the item's first) is ``exact`` by default (equal objects),
``superset`` (the call holds every expected key, equal), ``subset`` (every key of the call is expected, equal),
``ignore``, or a list of fields (dotted paths) compared where the expected arguments name them; ``args: any`` or
no ``args`` matches any arguments. A grader passes at a score of 0.8 (AgentV's mark).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeAlias

from spanfold.checks.agentv.graders import (
    COMMON_KEYS,
    Assertion,
    Common,
    Grade,
    deep_equal,
    grade,
    grader_name,
    is_missing,
    js_number,
    nested,
    parse_common,
)
from spanfold.checks.errors import SpecError, SpecPath
from spanfold.checks.fields import check_keys, non_negative, require_list, require_mapping
from spanfold.checks.matching import show
from spanfold.checks.trajectory import MODES, Mode, parse_minimums, parse_mode
from spanfold.checks.view import TraceView
from spanfold.trace.model import finite_number

ArgsMode: TypeAlias = "Literal['exact', 'superset', 'subset', 'ignore'] | tuple[str, ...]"
_ARGS_MODES = ("exact", "superset", "subset", "ignore")
KEYS = (*COMMON_KEYS, "mode", "minimums", "expected", "args_match", "argsMatch")
_ITEM_KEYS = ("tool", "args", "max_duration_ms", "maxDurationMs", "args_match", "argsMatch")


@dataclass(frozen=True, slots=True)
class Expected:
    tool: str
    args: Mapping[str, Any] | None = None  # None: any arguments
    max_duration_ms: float | None = None
    args_match: ArgsMode | None = None


@dataclass(frozen=True, slots=True)
class _Call:
    name: str
    args: Any
    duration_ms: float | None


def _args_match(expected: Mapping[str, Any] | None, actual: Any, mode: ArgsMode) -> bool:
    if expected is None or mode == "ignore":
        return True
    if actual is None:
        return False
    if isinstance(mode, tuple):
        for path in mode:
            want = nested(expected, path)
            if not is_missing(want) and not deep_equal(want, nested(actual, path)):
                return False
        return True
    if mode == "superset":
        if not isinstance(actual, Mapping):
            return not expected
        return all(k in actual and deep_equal(v, actual[k]) for k, v in expected.items())
    if mode == "subset":
        if not isinstance(actual, Mapping):
            return not actual
        return all(k in expected and deep_equal(v, expected[k]) for k, v in actual.items())
    return deep_equal(expected, actual)


@dataclass(frozen=True, slots=True)
class ToolTrajectory:
    """A validated AgentV ``tool-trajectory`` grader."""

    name: str
    mode: Mode
    expected: tuple[Expected, ...] | None
    minimums: Mapping[str, int] | None
    args_match: ArgsMode | None
    common: Common

    kind: ClassVar[str] = "tool-trajectory"

    def _mode(self, item: Expected) -> ArgsMode:
        return item.args_match or self.args_match or "exact"

    def _matches(self, item: Expected, call: _Call) -> bool:
        return call.name == item.tool and _args_match(item.args, call.args, self._mode(item))

    def grade(self, view: TraceView) -> Grade:
        metrics = view.agentv()
        calls = [_Call(c["tool"], c.get("input"), finite_number(c.get("duration_ms"))) for c in metrics.calls]
        scorers = {
            "any_order": self._any_order,
            "in_order": self._in_order,
            "exact": self._exact,
            "superset": self._superset,
            "subset": self._subset,
        }
        score, assertions = scorers[self.mode](calls, metrics.tool_calls)
        return grade(self.name, self.kind, score, assertions)

    def _any_order(self, calls: list[_Call], counts: dict[str, int]) -> tuple[float, list[Assertion]]:
        minimums = self.minimums or {}
        if not minimums:
            return 1.0, [Assertion("No tool requirements specified", True)]
        out = [
            Assertion(f"{tool}: called {counts.get(tool, 0)} times (required >={need})", counts.get(tool, 0) >= need)
            for tool, need in minimums.items()
        ]
        return sum(a.passed for a in out) / len(minimums), out

    def _scored(self, hits: int, untimed: int, out: list[Assertion]) -> tuple[float, list[Assertion]]:
        """AgentV's score of a sequence: every expected item and every latency limit count, but a limit on a found
        call without a duration."""
        expected = self.expected or ()
        total = len(expected) + sum(item.max_duration_ms is not None for item in expected) - untimed
        return (hits / total if total else 1.0), out

    def _in_order(self, calls: list[_Call], counts: dict[str, int]) -> tuple[float, list[Assertion]]:
        expected = self.expected or ()
        if not expected:
            return 1.0, [Assertion("No tool sequence specified", True)]
        out: list[Assertion] = []
        hits = untimed = at = 0
        for i, item in enumerate(expected):
            found: _Call | None = None
            missed = False
            while at < len(calls):
                call = calls[at]
                at += 1
                if call.name != item.tool:
                    continue
                if _args_match(item.args, call.args, self._mode(item)):
                    out.append(Assertion(f"Found {item.tool} at position {at - 1}", True))
                    found = call
                else:
                    text = f"Expected {item.tool} at position {i}: tool found at {at - 1} but args mismatch"
                    out.append(Assertion(text, False))
                    missed = True
                break
            if found is None:
                if not missed:
                    out.append(Assertion(f"Expected {item.tool} at position {i}, not found in remaining trace", False))
                continue
            hits += 1
            hits, untimed = self._latency(item, found, out, hits, untimed)
        return self._scored(hits, untimed, out)

    @staticmethod
    def _latency(item: Expected, call: _Call, out: list[Assertion], hits: int, untimed: int) -> tuple[int, int]:
        """A found call's latency assertion, when its item sets a limit: hits and untimed limits so far."""
        if item.max_duration_ms is None:
            return hits, untimed
        if call.duration_ms is None:
            return hits, untimed + 1
        ok = call.duration_ms <= item.max_duration_ms
        verb = "completed in" if ok else "took"
        limit = js_number(item.max_duration_ms)
        out.append(Assertion(f"{item.tool} {verb} {js_number(call.duration_ms)}ms (max: {limit}ms)", ok))
        return hits + ok, untimed

    def _exact(self, calls: list[_Call], counts: dict[str, int]) -> tuple[float, list[Assertion]]:
        expected = self.expected or ()
        if not expected:
            return 1.0, [Assertion("No tool sequence specified", True)]
        out: list[Assertion] = []
        if len(calls) != len(expected):
            out.append(Assertion(f"Expected {len(expected)} tool calls, got {len(calls)}", False))
        hits = untimed = 0
        for i, (item, call) in enumerate(zip(expected, calls, strict=False)):
            if call.name != item.tool:
                out.append(Assertion(f"Position {i}: expected {item.tool}, got {call.name}", False))
                continue
            if not _args_match(item.args, call.args, self._mode(item)):
                out.append(Assertion(f"Position {i}: {item.tool} args mismatch", False))
                continue
            out.append(Assertion(f"Position {i}: {item.tool}", True))
            hits, untimed = self._latency(item, call, out, hits + 1, untimed)
        out.extend(
            Assertion(f"Position {i}: expected {item.tool}, got nothing", False)
            for i, item in enumerate(expected[len(calls) :], start=len(calls))
        )
        return self._scored(hits, untimed, out)

    def _superset(self, calls: list[_Call], counts: dict[str, int]) -> tuple[float, list[Assertion]]:
        expected = self.expected or ()
        if not expected:
            return 1.0, [Assertion("No expected tools specified", True)]
        used: set[int] = set()
        out: list[Assertion] = []
        for item in expected:
            j = next((j for j, c in enumerate(calls) if j not in used and self._matches(item, c)), None)
            if j is None:
                out.append(Assertion(f"Expected {item.tool} not found in actual trajectory", False))
            else:
                used.add(j)
                out.append(Assertion(f"Found {item.tool} at position {j}", True))
        return sum(a.passed for a in out) / len(expected), out

    def _subset(self, calls: list[_Call], counts: dict[str, int]) -> tuple[float, list[Assertion]]:
        expected = self.expected or ()
        if not expected:
            if not calls:
                return 1.0, [Assertion("No tool calls and no expected tools", True)]
            return 0.0, [Assertion(f"{len(calls)} unexpected tool call(s) with empty allowed list", False)]
        if not calls:
            return 1.0, [Assertion("No actual tool calls (trivially a subset)", True)]
        out = []
        for i, call in enumerate(calls):
            allowed = any(self._matches(item, call) for item in expected)
            verb = "is in" if allowed else "is not in"
            out.append(Assertion(f"Position {i}: {call.name} {verb} allowed set", allowed))
        return sum(a.passed for a in out) / len(calls), out


def _parse_args_match(raw: Any, path: SpecPath) -> ArgsMode | None:
    if raw is None:
        return None
    if isinstance(raw, list):
        fields = tuple(f for f in raw if isinstance(f, str) and f)
        if len(fields) != len(raw) or not fields:
            raise SpecError(f"args_match must be a non-empty list of field paths (got {show(raw)})", path)
        return fields
    for mode in _ARGS_MODES:
        if raw == mode:
            return mode  # type: ignore[return-value]
    raise SpecError(f"args_match must be one of {', '.join(_ARGS_MODES)} or a list of fields (got {show(raw)})", path)


def _either(item: Mapping[str, Any], snake: str, camel: str, path: SpecPath) -> tuple[Any, SpecPath]:
    if snake in item and camel in item:
        raise SpecError(f"give {snake} or {camel} (the same thing), not both", (*path, camel))
    key = camel if camel in item else snake
    return item.get(key), (*path, key)


def _parse_expected(raw: Any, path: SpecPath) -> Expected:
    item = require_mapping(raw, path, "an expected call ({tool: ...})")
    check_keys(item, _ITEM_KEYS, path, "an expected call")
    tool = item.get("tool")
    if not isinstance(tool, str) or not tool:
        raise SpecError(f"tool must be a tool name (got {show(tool)})", (*path, "tool"))
    args = item.get("args")
    if args is not None and args != "any" and not isinstance(args, Mapping):
        raise SpecError(f"args must be an object or any (got {show(args)})", (*path, "args"))
    limit, limit_path = _either(item, "max_duration_ms", "maxDurationMs", path)
    max_ms = None if limit is None else non_negative(limit)
    if limit is not None and max_ms is None:
        raise SpecError(f"max_duration_ms must be a finite number >= 0 (got {show(limit)})", limit_path)
    mode, mode_path = _either(item, "args_match", "argsMatch", path)
    return Expected(
        tool=tool,
        args=None if args in (None, "any") else args,
        max_duration_ms=max_ms,
        args_match=_parse_args_match(mode, mode_path),
    )


def build(item: Mapping[str, Any], path: SpecPath, *, also: Sequence[str] = ()) -> ToolTrajectory:
    """A ``tool-trajectory`` grader from its YAML (``also``: keys the enclosing layout adds, read by it)."""
    check_keys(item, (*KEYS, *also), path, "a tool-trajectory grader")
    if "mode" not in item:
        raise SpecError(f"mode is required for a tool-trajectory grader (one of {', '.join(MODES)})", path)
    mode = parse_mode(item["mode"], (*path, "mode"))
    minimums = parse_minimums(item["minimums"], (*path, "minimums")) if item.get("minimums") is not None else None
    if mode == "any_order" and minimums is None:
        raise SpecError("minimums are required for mode any_order (AgentV grades nothing else in it)", path)
    expected = None
    if item.get("expected") is not None:
        items = require_list(item["expected"], (*path, "expected"), "expected")
        expected = tuple(_parse_expected(raw, (*path, "expected", i)) for i, raw in enumerate(items))
    if mode != "any_order" and expected is None:
        raise SpecError(f"expected is required for mode {mode}", path)
    mode_raw, mode_path = _either(item, "args_match", "argsMatch", path)
    return ToolTrajectory(
        name=grader_name(item, path, "tool-trajectory"),
        mode=mode,
        expected=expected,
        minimums=minimums,
        args_match=_parse_args_match(mode_raw, mode_path),
        common=parse_common(item, path),
    )

"""What AgentV's graders share: their result, their verdict, AgentV's equality, and the keys every grader takes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from spanfold.checks.errors import SpecError, SpecPath
from spanfold.checks.fields import is_number, non_negative
from spanfold.checks.matching import show
from spanfold.checks.result import CheckResult
from spanfold.checks.view import TraceLike, TraceView, view_of

#: AgentV's pass mark for a grader and, unless the eval file says otherwise, for a test.
DEFAULT_THRESHOLD = 0.8
#: Keys every AgentV grader takes.
COMMON_KEYS = ("name", "type", "weight", "required", "min_score", "negate")


@dataclass(frozen=True, slots=True)
class Assertion:
    text: str
    passed: bool


@dataclass(frozen=True, slots=True)
class Grade:
    """One grader's outcome on one trace, as AgentV reports it: its score, verdict and assertions."""

    name: str
    type: str
    score: float
    passed: bool
    assertions: tuple[Assertion, ...] = ()

    @property
    def failures(self) -> list[str]:
        return [a.text for a in self.assertions if not a.passed]


def grade(name: str, kind: str, score: float, assertions: list[Assertion]) -> Grade:
    """A grade whose verdict is AgentV's: ``score >= 0.8``."""
    return Grade(name, kind, score, score >= DEFAULT_THRESHOLD, tuple(assertions))


def negated(result: Grade) -> Grade:
    """AgentV's ``negate: true``: score ``1 - score``, verdict and each assertion flipped."""
    flipped = tuple(Assertion(a.text, not a.passed) for a in result.assertions)
    return Grade(result.name, result.type, min(1.0, max(0.0, 1 - result.score)), not result.passed, flipped)


@dataclass(frozen=True, slots=True)
class Common:
    """The keys every grader takes: how a test weighs it, gates on it (``required``, ``min_score``), inverts it."""

    weight: float = 1.0
    required: bool = False
    min_score: float | None = None
    negate: bool = False


def parse_common(item: Mapping[str, Any], path: SpecPath) -> Common:
    """``weight``, ``required`` (true, or a number: the minimum score, as AgentV still reads it), ``min_score``
    (from above 0 to 1), ``negate``; :class:`SpecError` naming the field."""
    raw_weight = item.get("weight", 1.0)
    weight = non_negative(raw_weight)
    if weight is None:
        raise SpecError(f"weight must be a finite number >= 0 (got {show(raw_weight)})", (*path, "weight"))
    min_score = item.get("min_score")
    if min_score is not None and (not is_number(min_score) or not 0 < min_score <= 1):
        raise SpecError(f"min_score must be a number above 0, at most 1 (got {show(min_score)})", (*path, "min_score"))
    required = item.get("required", False)
    if is_number(required) and 0 < required <= 1:
        min_score = float(min_score if min_score is not None else required)
        required = True
    if not isinstance(required, bool):
        raise SpecError(f"required must be true, false or a score (got {show(required)})", (*path, "required"))
    negate = item.get("negate", False)
    if not isinstance(negate, bool):
        raise SpecError(f"negate must be true or false (got {show(negate)})", (*path, "negate"))
    return Common(
        weight=weight,
        required=required,
        min_score=None if min_score is None else float(min_score),
        negate=negate,
    )


class Grader(Protocol):
    """An AgentV grader: named, with the common keys, grading a trace view."""

    @property
    def name(self) -> str: ...

    @property
    def common(self) -> Common: ...

    @property
    def kind(self) -> str: ...

    def grade(self, view: TraceView) -> Grade: ...


@dataclass(frozen=True, slots=True)
class GraderCheck:
    """An AgentV grader in spanfold's own spec layout (``checks:``): its score, passing at ``threshold`` (1.0 unless
    the spec says otherwise, as every check of that layout; ``min_score`` is read as the threshold)."""

    name: str
    grader: Grader
    threshold: float = 1.0

    @property
    def kind(self) -> str:
        return self.grader.kind

    def run(self, trace: TraceLike | TraceView) -> CheckResult:
        result = self.grader.grade(view_of(trace))
        if self.grader.common.negate:
            result = negated(result)
        return CheckResult(self.name, result.score, self.threshold, result.failures, self.kind)


def grader_name(item: Mapping[str, Any], path: SpecPath, default: str) -> str:
    """A grader's ``name``, its type when it has none."""
    name = item.get("name", default)
    if not isinstance(name, str) or not name:
        raise SpecError(f"name must be a non-empty string (got {show(name)})", (*path, "name"))
    return name


_MISSING = object()


def deep_equal(a: Any, b: Any) -> bool:
    """AgentV's ``deepEqual`` on JSON values: a number equals a number of the same value (1 == 1.0), never a
    boolean; objects by their keys, lists item by item."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return len(a) == len(b) and all(k in b and deep_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(deep_equal(x, y) for x, y in zip(a, b, strict=True))
    if a is _MISSING or b is _MISSING:
        return a is b
    return type(a) is type(b) and bool(a == b)


def nested(value: Any, path: str) -> Any:
    """The value at a dotted path (``a.b.0``), or a marker for none (as AgentV's ``getNestedValue`` finds it)."""
    current = value
    for part in path.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return _MISSING
    return current


def is_missing(value: Any) -> bool:
    return value is _MISSING


def js_number(value: float) -> str:
    """A number as JavaScript prints it in AgentV's texts (``3``, not ``3.0``)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))

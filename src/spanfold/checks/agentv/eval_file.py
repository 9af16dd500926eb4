"""AgentV eval files (``EVAL.yaml``): each test a check whose verdict is AgentV's.

    description: the weather agent
    tests:
      - id: weather
        input: What's the weather in Paris and Tokyo?
        assertions:
          - {type: tool-trajectory, mode: in_order, expected: [{tool: get_weather, args: {city: Paris}}]}
          - {type: execution-metrics, max_llm_calls: 3, max_tokens: 1000}
    assertions: [...]          # the suite's: appended to every test's (unless its execution.skip_defaults)

A test's score is the weighted mean of its graders' scores (each grader scored as AgentV scores it), 0 when a
``required`` grader scores below its ``min_score`` (the test's threshold when it has none); the test passes at its
threshold (``execution.threshold`` of the test, else of the suite, else 0.8), as ``agentv eval run`` decides.
``negate: true`` inverts a grader. Graders other than ``tool-trajectory`` and ``execution-metrics`` (an LLM
grader, code, text assertions) need AgentV itself: a file holding one is refused, never graded in part. So is a
test without ``input`` (AgentV skips it) and a conversation test.

``agentv eval run --transcript`` hands the N-th run to the N-th test: :attr:`spanfold.checks.spec.Spec.by_position`
says the same to ``spanfold check`` when the file has several tests; a single test grades every trace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from spanfold.checks.agentv import metrics, trajectory
from spanfold.checks.agentv.graders import DEFAULT_THRESHOLD, Grade, Grader, negated
from spanfold.checks.errors import SpecError, SpecPath
from spanfold.checks.fields import check_keys, is_number, require_list, require_mapping
from spanfold.checks.matching import show
from spanfold.checks.result import CheckResult
from spanfold.checks.view import TraceLike, TraceView, view_of

#: The keys of an AgentV eval file, of a test, and of an execution block (AgentV 4.42's schema).
FILE_KEYS = (
    "$schema", "name", "description", "category", "version", "author", "tags", "license", "requires", "input",
    "input_files", "tests", "eval_cases", "target", "execution", "assertions", "assert", "preprocessors", "workspace",
)  # fmt: skip
TEST_KEYS = (
    "id", "vars", "criteria", "input", "input_files", "expected_output", "assertions", "assert", "evaluators",
    "execution", "workspace", "metadata", "conversation_id", "suite", "depends_on", "on_dependency_failure", "mode",
    "turns", "aggregation", "on_turn_failure", "window_size", "rubrics",
)  # fmt: skip
EXECUTION_KEYS = (
    "target", "targets", "workers", "assertions", "assert", "evaluators", "skip_defaults", "cache", "trials",
    "budget_usd", "budgetUsd", "fail_on_error", "failOnError", "threshold",
)  # fmt: skip
BUILDERS: dict[str, Callable[[Mapping[str, Any], SpecPath], Grader]] = {
    "tool-trajectory": trajectory.build,
    "execution-metrics": metrics.build,
}


def is_eval_file(data: Any) -> bool:
    """Whether spec data is an AgentV eval file (it lists ``tests``)."""
    return isinstance(data, Mapping) and ("tests" in data or "eval_cases" in data)


@dataclass(frozen=True, slots=True)
class EvalTest:
    """One test of an eval file: its graders and threshold; ``run`` it on traces."""

    name: str
    graders: tuple[Grader, ...]
    threshold: float = DEFAULT_THRESHOLD

    kind: ClassVar[str] = "agentv"

    def grades(self, trace: TraceLike | TraceView) -> list[Grade]:
        """Each grader's grade on ``trace``, negated where it says so."""
        view = view_of(trace)
        out = []
        for grader in self.graders:
            result = grader.grade(view)
            out.append(negated(result) if grader.common.negate else result)
        return out

    def run(self, trace: TraceLike | TraceView) -> CheckResult:
        grades = self.grades(trace)
        gate = [
            g
            for g, grader in zip(grades, self.graders, strict=True)
            if grader.common.required and g.score < (grader.common.min_score or self.threshold)
        ]
        weight = sum(grader.common.weight for grader in self.graders)
        mean = sum(g.score * grader.common.weight for g, grader in zip(grades, self.graders, strict=True))
        score = 0.0 if gate or weight == 0 else mean / weight
        reasons = [f"required grader {g.name} scored {g.score:.2f}: the test scores 0" for g in gate]
        for g in grades:
            if g.passed and not g.failures:
                continue
            verdict = "pass" if g.passed else "fail"
            detail = "; ".join(g.failures) if g.failures else "its assertions passed, negated"
            reasons.append(f"{g.name} ({g.type}) {g.score:.2f} {verdict}: {detail}")
        return CheckResult(name=self.name, score=score, threshold=self.threshold, reasons=reasons, kind=self.kind)


def _threshold(execution: Mapping[str, Any], path: SpecPath, default: float) -> float:
    raw = execution.get("threshold", default)
    if not is_number(raw) or not 0 <= raw <= 1:
        raise SpecError(f"threshold must be a number from 0 to 1 (got {show(raw)})", (*path, "threshold"))
    return float(raw)


def _execution(raw: Any, path: SpecPath) -> Mapping[str, Any]:
    if raw is None:
        return {}
    execution = require_mapping(raw, path, "execution")
    check_keys(execution, EXECUTION_KEYS, path, "execution")
    return execution


def _graders(raw: Any, path: SpecPath) -> list[Grader]:
    out: list[Grader] = []
    for i, item in enumerate(require_list(raw, path, "assertions")):
        where = (*path, i)
        if isinstance(item, str):
            raise SpecError("a rubric (a plain-text assertion) is graded by an LLM: run it with agentv itself", where)
        grader = require_mapping(item, where, "a grader")
        kind = grader.get("type")
        if not isinstance(kind, str):  # a list or mapping is no grader type (and not hashable)
            raise SpecError(
                f"type must be a grader type such as {', '.join(BUILDERS)} (got {show(kind)})", (*where, "type")
            )
        normal = kind.replace("_", "-")
        if normal not in BUILDERS:
            raise SpecError(
                f"spanfold grades {', '.join(BUILDERS)}; a {show(kind)} grader needs agentv itself", (*where, "type")
            )
        out.append(BUILDERS[normal](grader, where))
    return out


def _first(item: Mapping[str, Any], keys: tuple[str, ...], path: SpecPath) -> tuple[Any, SpecPath]:
    for key in keys:
        if item.get(key) is not None:
            return item[key], (*path, key)
    return None, path


def _test(raw: Any, path: SpecPath, suite: tuple[Any, SpecPath], default: float) -> EvalTest:
    test = require_mapping(raw, path, "a test")
    check_keys(test, TEST_KEYS, path, "a test")
    test_id = test.get("id")
    if not isinstance(test_id, str) or not test_id:
        raise SpecError(f"id must be a non-empty string (got {show(test_id)})", (*path, "id"))
    if test.get("input") is None:
        raise SpecError(f"test {test_id} has no input (AgentV skips such a test)", path)
    if test.get("mode") is not None or test.get("turns") is not None:
        raise SpecError("a conversation test (mode, turns) is graded turn by turn: run it with agentv itself", path)
    execution = _execution(test.get("execution"), (*path, "execution"))
    own, own_path = _first(test, ("assertions", "assert"), path)
    if own is None:
        own, own_path = _first(execution, ("evaluators",), (*path, "execution"))
    if own is None:
        own, own_path = _first(test, ("evaluators",), path)
    graders = _graders(own, own_path) if own is not None else []
    if suite[0] is not None and execution.get("skip_defaults") is not True:
        graders.extend(_graders(*suite))
    if not graders:
        raise SpecError(f"test {test_id} has no graders (its criteria alone would need an LLM grader)", path)
    names: dict[str, int] = {}
    for n, grader in enumerate(graders):
        if grader.name in names:
            raise SpecError(f"two graders of test {test_id} are named {grader.name}: name them apart", path)
        names[grader.name] = n
    return EvalTest(
        name=test_id, graders=tuple(graders), threshold=_threshold(execution, (*path, "execution"), default)
    )


def parse_eval_file(data: Mapping[str, Any]) -> tuple[EvalTest, ...]:
    """The tests of an AgentV eval file; :class:`SpecError` naming the field."""
    check_keys(data, FILE_KEYS, (), "an AgentV eval file")
    key = "tests" if "tests" in data else "eval_cases"
    if isinstance(data[key], str):
        raise SpecError(f"{key} names a file: spanfold check reads tests listed in the eval file itself", (key,))
    execution = _execution(data.get("execution"), ("execution",))
    suite = _first(data, ("assertions", "assert"), ())
    if suite[0] is None:
        suite = _first(execution, ("assertions", "assert", "evaluators"), ("execution",))
    default = _threshold(execution, ("execution",), DEFAULT_THRESHOLD)
    tests = [_test(raw, (key, i), suite, default) for i, raw in enumerate(require_list(data[key], (key,), key))]
    if not tests:
        raise SpecError(f"{key} is empty", (key,))
    seen: set[str] = set()
    for i, test in enumerate(tests):
        if test.name in seen:
            raise SpecError(f"two tests have the id {test.name}", (key, i, "id"))
        seen.add(test.name)
    return tuple(tests)

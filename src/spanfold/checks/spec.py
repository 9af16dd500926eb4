"""Spec files: the checks to run, in YAML (or JSON), validated with ``FILE:LINE: problem`` errors.

    checks:                       # or AgentV's `evaluators:`
      - name: searches-first      # optional; default: the type
        type: tool_trajectory
        mode: in_order            # any_order (default) | in_order | exact | subset | superset
        expected: [search, {tool: answer, args: {final: true}, args_match: superset}]
        threshold: 1.0
      - type: tool_trajectory
        minimums: {search: 2}
      - type: expected_messages
        expected_messages: [{role: user, content: {contains: weather}}, ...]
      - type: tool-trajectory     # AgentV 4.42's graders, scored as AgentV scores them (threshold 1.0 here too)
        mode: in_order
        args_match: superset
        expected: [{tool: get_weather, args: {city: Paris}, max_duration_ms: 500}]
      - type: execution-metrics
        max_llm_calls: 3
        max_tokens: 2000
    expected_messages: [...]      # shorthand: one expected_messages check

``tool_trajectory`` is spanfold's own trajectory check (the seed design's: ``args_match`` superset by default,
``any_order`` counts ``expected`` too, calls matched one to one); ``tool-trajectory`` is AgentV's. An AgentV eval
file (``tests:``, :mod:`spanfold.checks.agentv.eval_file`) is a spec as it is: each test one check, its verdict
AgentV's (there ``tool_trajectory`` is AgentV's too, as AgentV reads it).

A bare list at the top level is an ``expected_messages`` list, so ``spanfold convert --to compact`` output
is a starting spec as it is (its ``id``/``start_time``/``end_time``/``duration_ms`` keys are ignored).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any, TypeAlias

import yaml

from spanfold.checks.agentv import metrics as agentv_metrics
from spanfold.checks.agentv import trajectory as agentv_trajectory
from spanfold.checks.agentv.eval_file import EvalTest, is_eval_file, parse_eval_file
from spanfold.checks.agentv.graders import Grader, GraderCheck
from spanfold.checks.errors import SpecError, SpecPath
from spanfold.checks.expected_messages_check import MessagesCheck
from spanfold.checks.fields import check_keys, parse_threshold, require_list, require_mapping
from spanfold.checks.matching import show
from spanfold.checks.result import CheckResult
from spanfold.checks.trajectory import TrajectoryCheck
from spanfold.checks.view import TraceLike, TraceView, view_of
from spanfold.trace.read import (
    TOO_DEEP,
    TOO_LONG_NUMBER,
    max_line_bytes,
    reader_error_line,
    reader_error_problem,
    too_long,
    yaml_problem,
)

Check: TypeAlias = "TrajectoryCheck | MessagesCheck | GraderCheck | EvalTest"
Lines: TypeAlias = dict[SpecPath, int]

_TOP_KEYS = ("checks", "evaluators", "expected_messages", "name", "description")


def _trajectory(item: Mapping[str, Any], path: SpecPath) -> Check:
    check_keys(item, ("type", "name", "mode", "expected", "minimums", "threshold"), path, "a tool_trajectory check")
    return TrajectoryCheck.build(
        mode=item.get("mode", "any_order"),
        expected=item.get("expected"),
        minimums=item.get("minimums"),
        threshold=item.get("threshold", 1.0),
        name=item.get("name"),
        path=path,
    )


def _messages(item: Mapping[str, Any], path: SpecPath) -> Check:
    check_keys(item, ("type", "name", "expected_messages", "threshold"), path, "an expected_messages check")
    if "expected_messages" not in item:
        raise SpecError("expected_messages is required for an expected_messages check", path)
    return MessagesCheck.build(
        spec=item["expected_messages"], threshold=item.get("threshold", 1.0), name=item.get("name"), path=path
    )


def _agentv(build: Callable[..., Grader]) -> Callable[[Mapping[str, Any], SpecPath], Check]:
    """An AgentV grader as a check: its ``threshold`` (or ``min_score``) 1.0 unless given."""

    def check(item: Mapping[str, Any], path: SpecPath) -> Check:
        grader = build(item, path, also=("threshold",))
        if "threshold" in item and "min_score" in item:
            raise SpecError("give threshold or min_score (the same thing here), not both", (*path, "min_score"))
        threshold = item.get("threshold", item.get("min_score", 1.0))
        key = "min_score" if "min_score" in item else "threshold"
        return GraderCheck(grader.name, grader, parse_threshold(threshold, (*path, key)))

    return check


#: Check types by their ``type:``.
CHECK_TYPES: dict[str, Callable[[Mapping[str, Any], SpecPath], Check]] = {
    "tool_trajectory": _trajectory,
    "expected_messages": _messages,
    "tool-trajectory": _agentv(agentv_trajectory.build),
    "execution-metrics": _agentv(agentv_metrics.build),
    "execution_metrics": _agentv(agentv_metrics.build),
}


def _check(raw: Any, path: SpecPath) -> Check:
    item = require_mapping(raw, path, "a check")
    kind = item.get("type")
    if not isinstance(kind, str) or kind not in CHECK_TYPES:  # a list or mapping is no type (and not hashable)
        named = ", ".join(k for k in CHECK_TYPES if k != "execution_metrics")  # one spelling each
        raise SpecError(f"type must be one of {named} (got {show(kind)})", (*path, "type"))
    return CHECK_TYPES[kind](item, path)


def _unique(checks: list[Check]) -> tuple[Check, ...]:
    seen: dict[str, int] = {}
    out: list[Check] = []
    for check in checks:
        n = seen.get(check.name, 0) + 1
        seen[check.name] = n
        out.append(check if n == 1 else dataclasses.replace(check, name=f"{check.name}-{n}"))
    return tuple(out)


def _checks(data: Any) -> tuple[Check, ...]:
    if data is None:
        raise SpecError("the spec is empty: give checks:, evaluators: or expected_messages:")
    if is_eval_file(data):
        return parse_eval_file(data)
    if isinstance(data, list):
        return (MessagesCheck.build(spec=data, spec_path=()),)
    top = require_mapping(data, (), "a spec")
    check_keys(top, _TOP_KEYS, (), "a spec")
    checks: list[Check] = []
    for key in ("checks", "evaluators"):
        if top.get(key) is not None:
            items = require_list(top[key], (key,), key)
            checks.extend(_check(raw, (key, i)) for i, raw in enumerate(items))
    if "expected_messages" in top:
        checks.append(MessagesCheck.build(spec=top["expected_messages"]))
    if not checks:
        raise SpecError("the spec has no checks: give checks:, evaluators: or expected_messages:")
    return _unique(checks)


@dataclass(frozen=True, slots=True)
class Spec:
    """Validated checks, ready to run on traces."""

    checks: tuple[Check, ...]
    file: str | None = None

    @property
    def by_position(self) -> bool:
        """An AgentV eval file of several tests: the N-th trace is the N-th test's (as ``agentv eval run
        --transcript`` hands them out), not every test's."""
        return len(self.checks) > 1 and all(isinstance(check, EvalTest) for check in self.checks)

    def run(self, trace: TraceLike | TraceView, position: int | None = None) -> list[CheckResult]:
        """Every check on ``trace`` (its view is built once); with :attr:`by_position`, the check of the trace at
        ``position`` (from 0) among the traces checked."""
        view = view_of(trace)
        if self.by_position:
            if position is None or not 0 <= position < len(self.checks):
                raise ValueError(f"an eval file of {len(self.checks)} tests grades each trace by its position")
            return [self.checks[position].run(view)]
        return [check.run(view) for check in self.checks]


# ---- YAML with line numbers ----------------------------------------------------------------------------------


def _build(loader: yaml.SafeLoader, node: yaml.Node, path: SpecPath, lines: Lines, file: str) -> Any:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise SpecError(
                    f"mapping keys must be plain values (got {show(key)})", file=file, line=key_node.start_mark.line + 1
                )
            if key in out:
                raise SpecError(f"duplicate key {show(key)}", file=file, line=key_node.start_mark.line + 1)
            where: SpecPath = (*path, key if isinstance(key, str) else str(key))
            lines[where] = key_node.start_mark.line + 1
            out[key] = _build(loader, value_node, where, lines, file)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(loader, item, (*path, i), lines, file) for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def compose(text: str, file: str) -> tuple[Any, Lines]:
    """The YAML document as plain data, and the line (from 1) of every path in it."""
    try:
        loader = yaml.SafeLoader(text)  # checks every character first
    except yaml.reader.ReaderError as exc:
        problem = f"not valid YAML: {reader_error_problem(exc)}"
        raise SpecError(problem, file=file, line=reader_error_line(text, exc)) from None
    lines: Lines = {}
    try:
        node = loader.get_single_node()
        found = None if node is None else yaml_problem(node)
        if found is not None:
            raise SpecError(found[1], file=file, line=found[0].start_mark.line + 1)
        return (None if node is None else _build(loader, node, (), lines, file)), lines
    except RecursionError:
        raise SpecError(f"not valid YAML: {TOO_DEEP}", file=file, line=loader.line + 1) from None
    except SpecError:
        raise
    except ValueError:  # an integer of more digits than Python converts (SpecError is a ValueError too)
        raise SpecError(f"not valid YAML: {TOO_LONG_NUMBER}", file=file, line=loader.line + 1) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        raise SpecError(f"not valid YAML: {problem}", file=file, line=None if mark is None else mark.line + 1) from None
    except yaml.YAMLError as exc:
        raise SpecError(f"not valid YAML: {exc}", file=file) from None
    finally:
        loader.dispose()


def _line(path: SpecPath, lines: Lines) -> int | None:
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None


def parse_spec(data: Any, *, file: str | None = None, lines: Lines | None = None) -> Spec:
    """Validate spec data (already loaded); with ``file`` errors read ``FILE:LINE: problem``."""
    try:
        return Spec(checks=_checks(data), file=file)
    except SpecError as exc:
        if file is None or exc.file is not None:
            raise
        raise exc.located(file, _line(exc.path, lines or {})) from None


def loads_spec(text: str, *, file: str = "<spec>") -> Spec:
    """A spec from YAML (or JSON) text."""
    try:
        return _loads_spec(text, file)
    except RecursionError:  # data that parsed but is too deep for the checks to read
        raise SpecError(TOO_DEEP, file=file) from None


def _loads_spec(text: str, file: str) -> Spec:
    if file.endswith(".json"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecError(f"not valid JSON: {exc.msg}", file=file, line=exc.lineno) from None
        except RecursionError:
            raise SpecError(f"not valid JSON: {TOO_DEEP}", file=file) from None
        except ValueError:
            raise SpecError(f"not valid JSON: {TOO_LONG_NUMBER}", file=file) from None
        try:
            _, lines = compose(text, file)
        except SpecError:  # valid JSON that YAML 1.1 reads otherwise: keep the data, lose the lines
            lines = {}
        return parse_spec(data, file=file, lines=lines)
    data, lines = compose(text, file)
    return parse_spec(data, file=file, lines=lines)


def load_spec(path: str | PathLike[str]) -> Spec:
    """Read and validate a spec file. :class:`SpecError` (``FILE:LINE: problem``) when it is unreadable or invalid."""
    file = str(path)
    limit = max_line_bytes()
    try:
        with Path(path).open("rb") as handle:
            raw = handle.read(limit + 1)
        if len(raw) > limit:
            raise SpecError(too_long(limit, "spec"), file=file)
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise SpecError("no such file", file=file) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read: {exc}", file=file) from None
    return loads_spec(text, file=file)

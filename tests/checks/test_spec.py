"""Spec files: loading, AgentV shapes, compact output as a spec, and errors with file and line numbers."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from spanfold.checks import SpecError, load_spec, loads_spec
from spanfold.checks.expected_messages_check import MessagesCheck
from spanfold.checks.trajectory import TrajectoryCheck

from .conftest import make_trace

TRACE = make_trace(("search", {"query": "x"}), "answer", question="find x")


def spec_file(tmp_path: Path, text: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str, name: str = "spec.yaml") -> str:
    path = spec_file(tmp_path, text, name)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert info.value.file == str(path)
    return str(info.value).replace(str(tmp_path) + "/", "")


def test_checks_list(tmp_path: Path) -> None:
    spec = load_spec(
        spec_file(
            tmp_path,
            """
        checks:
          - name: order
            type: tool_trajectory
            mode: in_order
            expected: [search, {tool: answer}]
          - type: tool_trajectory
            minimums: {search: 1}
            threshold: 0.5
          - type: expected_messages
            expected_messages:
              - role: user
                content: {contains: find}
    """,
        )
    )
    assert [c.name for c in spec.checks] == ["order", "tool_trajectory", "expected_messages"]
    first, second, third = spec.checks
    assert isinstance(first, TrajectoryCheck) and first.mode == "in_order" and len(first.expected) == 2
    assert isinstance(second, TrajectoryCheck) and second.mode == "any_order" and second.threshold == 0.5
    assert isinstance(third, MessagesCheck)
    results = spec.run(TRACE)
    assert [(r.name, r.passed, r.score) for r in results] == [
        ("order", True, 1.0),
        ("tool_trajectory", True, 1.0),
        ("expected_messages", True, 1.0),
    ]


def test_agentv_evaluators_and_top_level_expected_messages(tmp_path: Path) -> None:
    spec = load_spec(
        spec_file(
            tmp_path,
            """
        description: AgentV style
        expected_messages:
          - role: assistant
            tool_calls:
              - tool: search
                input: { query: "x" }
        evaluators:
          - type: tool_trajectory
            mode: any_order
            minimums:
              search: 3
          - type: tool_trajectory
            mode: exact
            expected:
              - tool: search
              - tool: answer
    """,
        )
    )
    assert [c.name for c in spec.checks] == ["tool_trajectory", "tool_trajectory-2", "expected_messages"]
    assert [r.score for r in spec.run(TRACE)] == [0.0, 1.0, 1.0]


def test_compact_output_is_a_starting_spec(tmp_path: Path) -> None:
    compact = [
        {"role": "user", "content": "find x"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "tool": "search",
                    "input": {"query": "x"},
                    "output": "search ok",
                    "id": "call_1",
                    "start_time": "2025-01-01T00:00:00.000Z",
                    "end_time": "2025-01-01T00:00:00.250Z",
                    "duration_ms": 250.0,
                }
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "tool": "answer",
                    "input": {},
                    "output": "answer ok",
                    "id": "call_2",
                    "start_time": None,
                    "end_time": None,
                    "duration_ms": None,
                }
            ],
        },
        {"role": "assistant", "content": "All done."},
    ]
    import yaml

    for name, text in [("golden.yaml", yaml.safe_dump(compact, sort_keys=False)), ("golden.json", json.dumps(compact))]:
        spec = load_spec(spec_file(tmp_path, text, name))
        assert [c.name for c in spec.checks] == ["expected_messages"]
        assert spec.run(TRACE)[0].score == 1.0
        other = make_trace(("search", {"query": "y"}), "answer", question="find x")
        result = spec.run(other)[0]
        assert result.score == 0.75
        assert 'query: expected "x", got "y"' in result.reasons[0]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            """
            checks:
              - type: tool_trajectory
                name: flaky

                mode: sometimes
            """,
            'spec.yaml:5: mode must be one of any_order, in_order, exact, subset, superset (got "sometimes")',
        ),
        (
            """
            checks:
              - type: tool_trajectory
                mode: in_order
                expected:
                  - search
                  - tool: answer
                    args_match: fuzzy
            """,
            'spec.yaml:7: args_match must be one of exact, superset, subset, ignore (got "fuzzy")',
        ),
        (
            """
            checks:
              - type: tool_trajectory
                mode: exact
            """,
            "spec.yaml:2: expected is required for mode exact",
        ),
        (
            """
            checks:
              - type: tool_trajectory
                minimums:
                  search: 2
                  answer: many
            """,
            'spec.yaml:5: minimum for "answer" must be a whole number >= 0 (got "many")',
        ),
        (
            """
            checks:
              - type: tool_trajectory
                threshold: 2
            """,
            "spec.yaml:3: threshold must be a number from 0 to 1 (got 2)",
        ),
        (
            """
            checks:
              - type: trajectory
            """,
            "spec.yaml:2: type must be one of tool_trajectory, expected_messages, tool-trajectory, execution-metrics "
            '(got "trajectory")',
        ),
        (
            """
            checks:
              - type: expected_messages
                expected_messages:
                  - role: user
                    content: {regex: "(unclosed"}
            """,
            "spec.yaml:5: regex is not a valid regular expression: missing ), unterminated subpattern at position 0",
        ),
        (
            """
            checks:
              - type: expected_messages
            """,
            "spec.yaml:2: expected_messages is required for an expected_messages check",
        ),
        (
            """
            - role: user
            - role: assistant
              tool_calls:
                - tool: search
                  id: call_1
                  imput: {query: x}
            """,
            'spec.yaml:6: unknown key "imput" in an expected call '
            "(expected one of tool, args, input, args_match, output)",
        ),
        (
            """
            chekcs: []
            """,
            'spec.yaml:1: unknown key "chekcs" in a spec (expected one of checks, evaluators, expected_messages, name, '
            "description)",
        ),
        (
            """
            checks:
              - type: tool_trajectory
                mode: exact
                mode: in_order
            """,
            'spec.yaml:4: duplicate key "mode"',
        ),
        (
            """
            checks:
              - type: tool_trajectory
                expected: [search
            """,
            "spec.yaml:4: not valid YAML: expected ',' or ']', but got '<stream end>'",
        ),
        (
            """
            checks:
              - type: tool_trajectory
                  mode: exact
            """,
            "spec.yaml:3: not valid YAML: mapping values are not allowed here",
        ),
        ("", "spec.yaml: the spec is empty: give checks:, evaluators: or expected_messages:"),
        ("checks: []\n", "spec.yaml:1: the spec has no checks: give checks:, evaluators: or expected_messages:"),
        ("checks: {type: x}\n", 'spec.yaml:1: checks must be a list (got {"type": "x"})'),
        ("just text\n", 'spec.yaml:1: a spec must be a mapping (got "just text")'),
    ],
)
def test_errors_carry_file_and_line(tmp_path: Path, text: str, error: str) -> None:
    assert error_of(tmp_path, text) == error


def test_json_errors_carry_lines(tmp_path: Path) -> None:
    text = '{\n  "checks": [\n    {"type": "tool_trajectory",\n     "mode": "sometimes"}\n  ]\n}\n'
    assert error_of(tmp_path, text, "spec.json").startswith("spec.json:4: mode must be one of")
    assert error_of(tmp_path, '{\n  "checks": [\n}\n', "spec.json") == "spec.json:3: not valid JSON: Expecting value"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"nope\.yaml: no such file$"):
        load_spec(tmp_path / "nope.yaml")


def test_loads_spec_and_errors_without_a_file() -> None:
    spec = loads_spec("checks:\n  - {type: tool_trajectory, minimums: {answer: 1}}\n")
    assert spec.run(TRACE)[0].passed
    with pytest.raises(SpecError, match=r"^<spec>:2: mode must be"):
        loads_spec("checks:\n  - {type: tool_trajectory, mode: x}\n")


def test_yaml_anchors_and_merge_keys(tmp_path: Path) -> None:
    spec = load_spec(
        spec_file(
            tmp_path,
            """
        base: &base
          type: tool_trajectory
          mode: in_order
        checks:
          - <<: *base
            expected: [search]
    """.replace("base: &base", "description: &base"),
        )
    )
    assert isinstance(spec.checks[0], TrajectoryCheck) and spec.checks[0].mode == "in_order"


@pytest.mark.parametrize(
    ("name", "text", "error"),
    [
        ("spec.yaml", "[" * 5000 + "]" * 5000 + "\n", "spec.yaml:1: not valid YAML: nested too deeply"),
        ("spec.yaml", "expected_messages: " + "[" * 900 + "]" * 900 + "\n", "spec.yaml:1: not valid YAML: nested"),
        ("spec.json", "[" * 5000 + "]" * 5000, "spec.json: not valid JSON: nested too deeply"),
        ("spec.yaml", "a: &a [*a]\n", "spec.yaml:1: a YAML alias inside the node it names"),
        ("spec.yaml", "checks:\n  - &c {type: tool_trajectory, expected: [*c]}\n", "spec.yaml:2: a YAML alias inside"),
    ],
)
def test_too_deep_or_self_containing_specs(tmp_path: Path, name: str, text: str, error: str) -> None:
    assert error_of(tmp_path, text, name).startswith(error)


def test_an_alias_used_twice_is_no_cycle(tmp_path: Path) -> None:
    """Shared nodes (the same anchor under two keys, aliases of aliases) are fine: only a node inside itself is not."""
    text = "description: &m [{role: user}]\nchecks:\n  - &c {type: expected_messages, expected_messages: *m}\n"
    spec = load_spec(spec_file(tmp_path, text + "  - *c\n"))
    assert [c.name for c in spec.checks] == ["expected_messages", "expected_messages-2"]

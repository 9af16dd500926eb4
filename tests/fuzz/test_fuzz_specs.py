"""``spanfold check`` with mutated specs (spanfold's own layout, the repo's golden spec) and AgentV eval files: exit
0 or 1 (the checks ran) or 2 with ``SPEC:LINE: problem`` (or ``SPEC: problem``), never a traceback or a hang, and a
JUnit report written whole or not at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from .conftest import FUZZ, Corpus, assert_clear, dumps, mutated_bytes, mutated_value, run_cli, write

GOLDEN = Path(__file__).parents[2] / "examples" / "agent_tests" / "golden.yaml"
OWN_LAYOUT = """
checks:
  - name: order
    type: tool_trajectory
    mode: in_order
    expected: [get_weather, {tool: convert_temperature, args: {to: fahrenheit}, args_match: superset}]
    threshold: 0.5
  - type: tool-trajectory
    mode: in_order
    args_match: [city]
    expected: [{tool: get_weather, args: {city: Paris}, max_duration_ms: 500}]
  - type: execution-metrics
    max_llm_calls: 3
    max_tokens: 2000
    max_duration_ms: 60000
    weight: 2
    min_score: 0.5
  - type: expected_messages
    expected_messages: [{role: user, content: {contains: Paris}}]
"""
EVAL_FILE = """
description: the weather agent
execution: {threshold: 0.8}
assertions:
  - {name: budget, type: execution-metrics, max_tool_calls: 5}
tests:
  - id: weather
    input: What's the weather in Paris and Tokyo?
    assertions:
      - {type: tool-trajectory, mode: in_order, expected: [{tool: get_weather, args: {city: Paris}}]}
      - {name: lookups, type: tool_trajectory, mode: any_order, minimums: {get_weather: 2}, required: true}
      - {type: execution-metrics, max_llm_calls: 3, max_tokens: 1000, negate: false, weight: 1}
"""
SPECS = {"golden.yaml": GOLDEN.read_text(encoding="utf-8"), "own.yaml": OWN_LAYOUT, "eval.yaml": EVAL_FILE}


@st.composite
def mutated_spec(draw: st.DrawFn, text: str) -> tuple[str, bytes]:
    """(file name, content): the spec damaged as bytes, or as data written back as YAML or JSON."""
    if draw(st.integers(0, 3)) == 0:
        return "spec.yaml", draw(mutated_bytes(text.encode()))
    value: Any = draw(mutated_value(yaml.safe_load(text)))
    if draw(st.booleans()):
        return "spec.json", dumps(value).encode()
    try:
        return "spec.yaml", yaml.safe_dump(value, sort_keys=False, allow_unicode=False).encode()
    except yaml.YAMLError:
        return "spec.yaml", dumps(value).encode()


@pytest.mark.parametrize("name", SPECS)
def test_check_runs_or_refuses_the_spec_clearly(name: str, corpus: Corpus, in_tmp: Path) -> None:
    traces = write(Path("traces.jsonl"), corpus.trace_files["invariant.jsonl"])
    report = in_tmp / "report.xml"

    @FUZZ
    @given(spec=mutated_spec(SPECS[name]), junit=st.booleans())
    def check(spec: tuple[str, bytes], junit: bool) -> None:
        report.unlink(missing_ok=True)
        source = write(Path(spec[0]), spec[1])
        outcome = run_cli("check", traces, "--spec", source, *(["--junit", report.name] if junit else []))
        assert_clear(outcome, files=[source], codes=(0, 1, 2))
        if outcome.code == 2 and junit and not report.exists():
            return
        if junit and report.exists():
            assert report.read_text(encoding="utf-8").rstrip().endswith("</testsuites>")

    check()


def test_the_repos_own_specs_pass_unmutated(corpus: Corpus, in_tmp: Path) -> None:
    """The fuzzers' seeds are valid: each runs its checks on the weather run (exit 0 or 1, never 2)."""
    traces = write(
        Path("traces.jsonl"),
        corpus.trace_files["invariant.jsonl"][: corpus.trace_files["invariant.jsonl"].index(b"\n") + 1],
    )
    for name, text in SPECS.items():
        outcome = run_cli("check", traces, "--spec", write(Path(name), text.encode()))
        assert outcome.exception is None and outcome.code in (0, 1), (name, outcome.stderr)

"""AgentV 4.42's graders in spanfold: ``tool-trajectory`` and ``execution-metrics`` scored as AgentV's source scores
them, AgentV eval files graded test by test, and the pytest helpers. (``tests/agentv`` runs AgentV's own CLI on the
same traces; these tests pin each rule on small traces, without Node.)"""

from __future__ import annotations

from typing import Any

import pytest

from spanfold.checks import assert_execution_metrics, assert_spec, execution_metrics
from spanfold.checks.agentv.eval_file import EvalTest
from spanfold.checks.errors import SpecError
from spanfold.checks.spec import loads_spec, parse_spec
from spanfold.trace import Message, ToolCall, Trace, TraceMeta
from spanfold.trace.model import StepTime, Usage

T0 = "2025-06-01T12:00:00Z"


def weather(*, cost: float | None = None, usage: bool = True, failed_call: bool = False) -> Trace:
    """The weather run: get_weather Paris and Tokyo, convert_temperature, an answer; three model calls (each with
    its step, timed and with tokens unless ``usage`` is off); ``failed_call`` adds a model call that failed."""
    calls = [
        ToolCall("c1", "get_weather", {"city": "Paris"}),
        ToolCall("c2", "get_weather", {"city": "Tokyo"}),
    ]
    events = [
        Message("user", "Weather in Paris and Tokyo?", timestamp=T0),
        Message("assistant", None, tool_calls=calls, timestamp=T0),
        Message("tool", "Paris: 18°C", tool_call_id="c1", timestamp=T0),
        Message("tool", "Tokyo: 24°C", tool_call_id="c2", timestamp=T0),
        Message("assistant", None, tool_calls=[ToolCall("c3", "convert_temperature", {"celsius": 18})], timestamp=T0),
        Message("tool", "64.4°F", tool_call_id="c3", timestamp=T0),
    ]
    if failed_call:
        events.append(Message("error", "RateLimitError: slow", error={"type": "RateLimitError"}, timestamp=T0))
    events.append(Message("assistant", "Paris 18°C, Tokyo 24°C (64.4°F).", timestamp=T0))
    steps = [
        StepTime("model", start="2025-06-01T12:00:00.000Z", duration_ms=10.0, usage=Usage(50, 10) if usage else None),
        StepTime("tool", start="2025-06-01T12:00:00.010Z", duration_ms=2.0, name="get_weather", call_id="c1"),
        StepTime("tool", start="2025-06-01T12:00:00.012Z", duration_ms=300.0, name="get_weather", call_id="c2"),
        StepTime("model", start="2025-06-01T12:00:00.400Z", duration_ms=10.0, usage=Usage(80, 10) if usage else None),
        StepTime("tool", start="2025-06-01T12:00:00.410Z", duration_ms=1.0, name="convert_temperature", call_id="c3"),
    ]
    meta = TraceMeta(
        trace_id="t1",
        name="weather",
        usage=Usage(200, 30) if usage else Usage(),
        start=T0,
        duration_ms=500.0,
        steps=steps,
        extra={} if cost is None else {"costUsd": cost},
    )
    return Trace(events, meta)


def grades(trace: Trace, *assertions: dict[str, Any]) -> tuple[float, list[tuple[str, float, bool]]]:
    """The test's score and each grader's (name, score, verdict), for one test of the given graders."""
    spec = parse_spec({"tests": [{"id": "t", "input": "q", "assertions": list(assertions)}]})
    test = spec.checks[0]
    assert isinstance(test, EvalTest)
    return test.run(trace).score, [(g.name, g.score, g.passed) for g in test.grades(trace)]


def trajectory(trace: Trace, **config: Any) -> float:
    return grades(trace, {"type": "tool-trajectory", **config})[0]


def test_args_match_is_exact_by_default_as_in_agentv() -> None:
    partial = [{"tool": "convert_temperature", "args": {"celsius": 18}}]
    assert trajectory(weather(), mode="superset", expected=partial) == 1.0  # the call's arguments are exactly these
    more = [{"tool": "get_weather", "args": {}}]
    assert trajectory(weather(), mode="superset", expected=more) == 0.0  # {} is not {"city": "Paris"}
    assert trajectory(weather(), mode="superset", expected=more, args_match="superset") == 1.0
    assert trajectory(weather(), mode="superset", expected=[{"tool": "get_weather", "args": "any"}]) == 1.0
    fields = [{"tool": "get_weather", "args": {"city": "Paris", "units": "C"}}]
    assert trajectory(weather(), mode="superset", expected=fields, args_match=["city"]) == 1.0
    per_item = [{"tool": "get_weather", "args": {"city": "Tokyo", "x": 1}, "args_match": "subset"}]
    assert trajectory(weather(), mode="superset", expected=per_item) == 1.0  # every key of the call is expected
    assert trajectory(weather(), mode="superset", expected=[{"tool": "get_weather", "args": {"city": 1}}]) == 0.0


def test_in_order_uses_up_a_call_whose_arguments_differ() -> None:
    # AgentV takes the first later call of the tool: Tokyo's, which fails Paris, and Paris is not looked for again
    expected = [
        {"tool": "get_weather", "args": {"city": "Tokyo"}},
        {"tool": "get_weather", "args": {"city": "Paris"}},
    ]
    score, _ = grades(weather(), {"type": "tool-trajectory", "mode": "in_order", "expected": expected})
    assert score == 0.0
    expected.reverse()
    assert trajectory(weather(), mode="in_order", expected=expected) == 1.0


def test_exact_reports_extra_calls_but_scores_the_expected_ones() -> None:
    two = [{"tool": "get_weather"}, {"tool": "get_weather"}]
    assert trajectory(weather(), mode="exact", expected=two) == 1.0  # as AgentV: 2 of 2 positions match
    four = [*two, {"tool": "convert_temperature"}, {"tool": "get_weather"}]
    assert trajectory(weather(), mode="exact", expected=four) == 0.75


def test_superset_is_greedy_and_subset_reuses_items() -> None:
    assert trajectory(weather(), mode="superset", expected=[{"tool": "get_weather"}] * 3) == pytest.approx(2 / 3)
    assert trajectory(weather(), mode="subset", expected=[{"tool": "get_weather"}]) == pytest.approx(2 / 3)
    allowed = [{"tool": "get_weather"}, {"tool": "convert_temperature"}]
    assert trajectory(weather(), mode="subset", expected=allowed) == 1.0


def test_any_order_reads_minimums_only() -> None:
    assert trajectory(weather(), mode="any_order", minimums={"get_weather": 2, "convert_temperature": 2}) == 0.5


def test_max_duration_counts_where_the_call_is_timed() -> None:
    slow = [
        {"tool": "get_weather", "args": {"city": "Paris"}},
        {"tool": "get_weather", "args": {"city": "Tokyo"}, "max_duration_ms": 100},  # it took 300 ms
    ]
    assert trajectory(weather(), mode="in_order", expected=slow) == pytest.approx(2 / 3)  # 2 found, latency missed
    fast = [{"tool": "get_weather", "max_duration_ms": 100, "args": "any"}]
    assert trajectory(weather(), mode="in_order", expected=fast) == 1.0
    untimed = weather()
    untimed.meta.steps = [s for s in untimed.meta.steps if s.kind == "model"]
    for event in untimed.events:
        event.timestamp = None
    assert trajectory(untimed, mode="in_order", expected=slow) == 1.0  # no duration: the limit is not counted


def test_execution_metrics_read_the_run_as_agentv_does() -> None:
    budget = {"type": "execution-metrics", "max_tool_calls": 3, "max_llm_calls": 3, "max_tokens": 230}
    assert grades(weather(), budget)[0] == 1.0
    assert grades(weather(failed_call=True), budget)[0] == pytest.approx(2 / 3)  # a failed model call is an LLM call
    no_usage = grades(weather(usage=False), {"type": "execution-metrics", "max_tokens": 10**9})
    assert no_usage[0] == 0.0  # no tokens reported: the budget is not met by a guess
    assert grades(weather(), {"type": "execution-metrics", "max_duration_ms": 499})[0] == 0.0
    assert grades(weather(), {"type": "execution-metrics", "max_cost_usd": 1})[0] == 0.0  # no cost in the metadata
    assert grades(weather(cost=0.002), {"type": "execution-metrics", "max_cost_usd": 0.01})[0] == 1.0
    assert grades(weather(cost=0.02), {"type": "execution-metrics", "max_cost_usd": 0.01})[0] == 0.0


def test_a_test_combines_its_graders_as_agentv_does() -> None:
    ok = {"type": "execution-metrics", "max_llm_calls": 9}
    bad = {"name": "tools", "type": "execution-metrics", "max_tool_calls": 1}
    assert grades(weather(), ok, {**ok, "name": "b"}, {**ok, "name": "c"}, {**ok, "name": "d"}, bad)[0] == 0.8
    assert grades(weather(), ok, {**bad, "weight": 3})[0] == 0.25
    assert grades(weather(), ok, {**bad, "required": True})[0] == 0.0
    negated = grades(weather(), ok, {**bad, "negate": True})
    assert negated[0] == 1.0 and negated[1][1] == ("tools", 1.0, True)
    spec = parse_spec({"tests": [{"id": "t", "input": "q", "execution": {"threshold": 0.3}, "assertions": [ok, bad]}]})
    assert spec.run(weather())[0].passed  # 0.5 against the test's own threshold


def test_suite_assertions_join_every_test_unless_it_skips_them() -> None:
    own = [{"type": "execution-metrics", "max_llm_calls": 9}]
    spec = parse_spec(
        {
            "assertions": [{"name": "suite", "type": "execution-metrics", "max_llm_calls": 1}],
            "tests": [
                {"id": "a", "input": "q", "assertions": own},
                {"id": "b", "input": "q", "execution": {"skip_defaults": True}, "assertions": own},
            ],
        }
    )
    a, b = spec.checks
    assert isinstance(a, EvalTest) and isinstance(b, EvalTest)
    assert [g.name for g in a.graders] == ["execution-metrics", "suite"]
    assert [g.name for g in b.graders] == ["execution-metrics"]
    assert spec.by_position
    assert [r.name for r in spec.run(weather(), 1)] == ["b"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "tests:\n  - id: t\n    input: q\n    assertions:\n      - type: llm-grader\n        prompt: x\n",
            'spec.yaml:5: spanfold grades tool-trajectory, execution-metrics; a "llm-grader" grader needs agentv',
        ),
        ("tests:\n  - id: t\n    input: q\n    assertions:\n      - Is it polite?\n", "spec.yaml:5: a rubric"),
        ("tests:\n  - id: t\n    assertions: []\n", "spec.yaml:2: test t has no input"),
        (
            "tests:\n  - id: t\n    input: q\n    assertions:\n      - {type: tool-trajectory, mode: any_order}\n",
            "spec.yaml:5: minimums are required for mode any_order",
        ),
        (
            "tests:\n  - id: t\n    input: q\n    assertions:\n      - {type: execution-metrics, max_tokens: -1}\n",
            "spec.yaml:5: max_tokens must be a finite number >= 0",
        ),
        (
            "tests:\n  - id: t\n    input: q\n    criteria: be nice\n",
            "spec.yaml:2: test t has no graders",
        ),
    ],
)
def test_what_spanfold_cannot_grade_is_refused_by_line(text: str, problem: str) -> None:
    with pytest.raises(SpecError) as caught:
        loads_spec(text, file="spec.yaml")
    assert str(caught.value).startswith(problem), str(caught.value)


def test_agentv_graders_in_spanfolds_own_layout_pass_at_their_threshold() -> None:
    budget = {"type": "execution-metrics", "max_tool_calls": 3, "max_llm_calls": 2}
    empty_args = [{"tool": "get_weather", "args": {}}]
    spec = parse_spec(
        {
            "checks": [
                budget,
                {**budget, "name": "lenient", "min_score": 0.5},
                {"type": "tool_trajectory", "mode": "in_order", "expected": empty_args},
                {"type": "tool-trajectory", "mode": "in_order", "expected": empty_args},
            ]
        }
    )
    results = spec.run(weather())
    assert [(r.name, r.score, r.passed) for r in results] == [
        ("execution-metrics", 0.5, False),
        ("lenient", 0.5, True),
        ("tool_trajectory", 1.0, True),  # spanfold's own: arguments matched as a superset by default
        ("tool-trajectory", 0.0, False),  # AgentV's: exactly
    ]
    assert results[0].reasons == ["LLM calls 3 > 2 max"]


def test_the_pytest_helpers_raise_with_the_reasons() -> None:
    assert execution_metrics(weather(), max_llm_calls=3).passed
    assert_execution_metrics(weather(), max_llm_calls=3, max_tokens=230)
    with pytest.raises(AssertionError, match=r"Total tokens 230 > 100 max"):
        assert_execution_metrics(weather(), max_tokens=100)
    calls = {"type": "tool-trajectory", "mode": "any_order", "minimums": {"get_weather": 2}}
    eval_file = {
        "tests": [
            {"id": "calls", "input": "q", "assertions": [calls]},
            {"id": "budget", "input": "q", "assertions": [{"type": "execution-metrics", "max_llm_calls": 1}]},
        ]
    }
    assert_spec(weather(), eval_file, test="calls")
    with pytest.raises(AssertionError, match=r"budget: score 0\.00 < threshold 0\.80\n.*LLM calls 3 > 1 max"):
        assert_spec(weather(), eval_file, test="budget")
    with pytest.raises(ValueError, match="name the one to run"):
        assert_spec(weather(), eval_file)

"""tool_trajectory: every mode on passing and failing trajectories, argument matching, thresholds, reasons."""

from __future__ import annotations

from typing import Any

import pytest

from spanfold.checks import CheckResult, SpecError, tool_trajectory
from spanfold.trace import Message, ToolCall, Trace, TraceMeta

from .conftest import make_trace

SEARCH_ANSWER = make_trace(("search", {"query": "x"}), ("search", {"query": "y"}), ("answer", {"text": "hi"}))


# ---- any_order ------------------------------------------------------------------------------------------------


def test_any_order_minimums_met() -> None:
    result = tool_trajectory(SEARCH_ANSWER, minimums={"search": 2, "answer": 1})
    assert result.passed and result and result.score == 1.0 and result.reasons == []


def test_any_order_score_is_share_of_minimums_met() -> None:
    result = tool_trajectory(SEARCH_ANSWER, minimums={"search": 3, "answer": 1})
    assert not result and result.score == 0.5
    assert result.reasons == ["search: called 2 times, expected at least 3"]


def test_any_order_minimums_on_absent_tool() -> None:
    result = tool_trajectory(SEARCH_ANSWER, minimums={"lookup": 1, "search": 1, "answer": 1, "fetch": 2})
    assert result.score == 0.5
    assert result.reasons == [
        "lookup: called 0 times, expected at least 1",
        "fetch: called 0 times, expected at least 2",
    ]


def test_any_order_expected_counts_repeats() -> None:
    assert tool_trajectory(SEARCH_ANSWER, expected=["answer", "search", "search"]).score == 1.0
    result = tool_trajectory(SEARCH_ANSWER, expected=["search", "search", "search", "answer"])
    assert result.score == 0.5  # two requirements (search x3, answer x1), one met
    assert result.reasons == ["search: called 2 times, expected at least 3"]


def test_any_order_expected_with_args() -> None:
    result = tool_trajectory(SEARCH_ANSWER, expected=[{"tool": "search", "args": {"query": "z"}}, "answer"])
    assert result.score == 0.5
    assert result.reasons == [
        'search(query="z"): 0 matching calls, expected at least 1; '
        'call 1 search(query="x"): query: expected "z", got "x"'
    ]


def test_any_order_with_nothing_to_check_passes() -> None:
    assert tool_trajectory(make_trace()).score == 1.0


def test_any_order_minimums_and_expected_combine() -> None:
    result = tool_trajectory(SEARCH_ANSWER, expected=["answer"], minimums={"search": 5})
    assert result.score == 0.5


# ---- in_order ---------------------------------------------------------------------------------------------------


def test_in_order_passes_with_calls_between() -> None:
    trace = make_trace("plan", "search", "think", "answer")
    assert tool_trajectory(trace, mode="in_order", expected=["search", "answer"]).score == 1.0


def test_in_order_out_of_order() -> None:
    result = tool_trajectory(make_trace("b", "a", "c"), mode="in_order", expected=["a", "b", "c"])
    assert result.score == pytest.approx(2 / 3)
    assert result.reasons == ["call 3: expected b (expected[1]) but got c(); no later call matches"]


def test_in_order_missing_tool_at_end() -> None:
    result = tool_trajectory(make_trace("search"), mode="in_order", expected=["search", "answer"])
    assert result.score == 0.5
    assert result.reasons == ["call 2: expected answer (expected[1]) but the trace has 1 tool call"]


def test_in_order_repeated_tools() -> None:
    trace = make_trace("search", "answer")
    result = tool_trajectory(trace, mode="in_order", expected=["search", "search", "answer"])
    assert result.score == pytest.approx(2 / 3)
    assert result.reasons[0] == "call 2: expected search (expected[1]) but got answer(); no later call matches"
    assert (
        tool_trajectory(
            make_trace("search", "x", "search", "answer"), mode="in_order", expected=["search", "search", "answer"]
        ).score
        == 1.0
    )


def test_in_order_names_the_first_divergence_with_args() -> None:
    expected = [{"tool": "search", "args": {"query": "x"}}, {"tool": "search", "args": {"query": "z"}}, "answer"]
    result = tool_trajectory(SEARCH_ANSWER, mode="in_order", expected=expected)
    assert result.score == pytest.approx(2 / 3)
    assert result.reasons == [
        'call 2: expected search(query="z") (expected[1]) but got search(query="y") '
        '(query: expected "z", got "y"); no later call matches'
    ]


def test_in_order_empty_trace() -> None:
    result = tool_trajectory(make_trace(), mode="in_order", expected=["search"])
    assert result.score == 0.0
    assert result.reasons == ["call 1: expected search (expected[0]) but the trace has 0 tool calls"]


# ---- exact --------------------------------------------------------------------------------------------------------


def test_exact_passes() -> None:
    assert tool_trajectory(SEARCH_ANSWER, mode="exact", expected=["search", "search", "answer"]).score == 1.0


def test_exact_extra_trailing_call_costs_score() -> None:
    result = tool_trajectory(SEARCH_ANSWER, mode="exact", expected=["search", "search"])
    assert result.score == pytest.approx(2 / 3)
    assert result.reasons == ['call 3: unexpected extra call answer(text="hi") (expected 2 calls, got 3)']


def test_exact_missing_calls() -> None:
    result = tool_trajectory(make_trace("search"), mode="exact", expected=["search", "fetch", "answer"])
    assert result.score == pytest.approx(1 / 3)
    assert result.reasons == ["call 2: expected fetch, answer but the trace has 1 tool call"]


def test_exact_wrong_call_names_position_expected_and_actual() -> None:
    result = tool_trajectory(
        SEARCH_ANSWER, mode="exact", expected=["search", {"tool": "search", "args": {"query": "x"}}, "search"]
    )
    assert result.score == pytest.approx(1 / 3)
    assert result.reasons == [
        'call 2: expected search(query="x") but got search(query="y") (query: expected "x", got "y")',
        'call 3: expected search but got answer(text="hi")',
    ]


def test_exact_out_of_order() -> None:
    result = tool_trajectory(make_trace("b", "a"), mode="exact", expected=["a", "b"])
    assert result.score == 0.0
    assert result.reasons[0] == "call 1: expected a but got b()"


def test_exact_no_calls_expected_none_made() -> None:
    assert tool_trajectory(make_trace(), mode="exact", expected=[]).score == 1.0
    result = tool_trajectory(make_trace("oops"), mode="exact", expected=[])
    assert result.score == 0.0
    assert result.reasons == ["call 1: unexpected extra call oops() (expected 0 calls, got 1)"]


# ---- subset / superset ----------------------------------------------------------------------------------------


def test_subset_passes_when_every_call_is_expected() -> None:
    assert tool_trajectory(make_trace("a"), mode="subset", expected=["a", "b"]).score == 1.0
    assert tool_trajectory(make_trace(), mode="subset", expected=["a"]).score == 1.0


def test_subset_extra_tool() -> None:
    result = tool_trajectory(make_trace("a", "c", "b"), mode="subset", expected=["a", "b"])
    assert result.score == pytest.approx(2 / 3)
    assert result.reasons == ["call 2: c() is not among the expected calls"]


def test_subset_is_a_multiset() -> None:
    result = tool_trajectory(make_trace("a", "a"), mode="subset", expected=["a", "b"])
    assert result.score == 0.5
    assert result.reasons == ["call 2: a() is one more than the 1 expected"]


def test_superset_passes_with_extra_calls() -> None:
    assert tool_trajectory(make_trace("c", "b", "a"), mode="superset", expected=["a", "b"]).score == 1.0


def test_superset_missing_and_repeated() -> None:
    result = tool_trajectory(make_trace("a", "b"), mode="superset", expected=["a", "a", "c"])
    assert result.score == pytest.approx(1 / 3)
    assert result.reasons == [
        "expected a (expected[1]): listed 2 times but only 1 call matches",
        "expected c (expected[2]) not found among the 2 tool calls",
    ]


def test_superset_finds_the_best_assignment() -> None:
    # a greedy pass would give search(query="x") to the first, unconstrained item and then miss the second
    expected = ["search", {"tool": "search", "args": {"query": "x"}}]
    trace = make_trace(("search", {"query": "x"}), ("search", {"query": "y"}))
    assert tool_trajectory(trace, mode="superset", expected=expected).score == 1.0
    assert tool_trajectory(trace, mode="subset", expected=expected).score == 1.0


def test_superset_near_miss_reason() -> None:
    result = tool_trajectory(SEARCH_ANSWER, mode="superset", expected=[{"tool": "answer", "args": {"text": "no"}}])
    assert result.reasons == [
        'expected answer(text="no") (expected[0]) not found among the 3 tool calls; '
        'call 3 answer(text="hi"): text: expected "no", got "hi"'
    ]


# ---- arguments --------------------------------------------------------------------------------------------------

ARGS = {"query": "paris", "filters": {"lang": "en", "max": 3}, "tags": ["a", "b"]}
TRACE_ARGS = make_trace(("search", ARGS))


def _args(args: Any, match: str | None = None) -> CheckResult:
    item: dict[str, Any] = {"tool": "search", "args": args}
    if match is not None:
        item["args_match"] = match
    return tool_trajectory(TRACE_ARGS, mode="exact", expected=[item])


@pytest.mark.parametrize(
    ("args", "match", "passed"),
    [
        ({"query": "paris"}, None, True),  # default: superset
        ({"filters": {"lang": "en"}}, "superset", True),  # recursive
        ({"filters": {"lang": "fr"}}, "superset", False),
        ({"query": "paris", "extra": 1}, "superset", False),
        ({"tags": ["a"]}, "superset", False),  # lists match item by item
        ({**ARGS, "extra": 1}, "subset", True),
        ({"query": "paris"}, "subset", False),
        (ARGS, "exact", True),
        ({**ARGS, "tags": ["b", "a"]}, "exact", False),
        ({"query": "paris"}, "exact", False),
        ({"anything": 1}, "ignore", True),
        ({}, "superset", True),
        ({}, "exact", False),
    ],
)
def test_args_match_modes(args: dict[str, Any], match: str | None, passed: bool) -> None:
    assert _args(args, match).passed is passed


@pytest.mark.parametrize(
    ("args", "match", "reason"),
    [
        ({"query": "rome"}, None, 'query: expected "rome", got "paris"'),
        ({"filters": {"max": 4}}, None, "filters.max: expected 4, got 3"),
        ({"page": 1}, None, "page: missing (expected 1)"),
        ({"query": "paris"}, "exact", 'filters: not expected (got {"lang": "en", "max": 3})'),
        ({"tags": ["a"]}, None, "tags: expected 1 items, got 2"),
    ],
)
def test_args_diff_in_reason(args: dict[str, Any], match: str | None, reason: str) -> None:
    assert _args(args, match).reasons[0].endswith(f"({reason})")


def test_input_is_a_synonym_of_args() -> None:
    assert tool_trajectory(TRACE_ARGS, mode="exact", expected=[{"tool": "search", "input": {"query": "paris"}}])
    assert not tool_trajectory(TRACE_ARGS, mode="exact", expected=[{"tool": "search", "input": {"query": "x"}}])


def test_bool_is_not_one() -> None:
    trace = make_trace(("f", {"flag": True, "n": 1}))
    assert tool_trajectory(trace, mode="exact", expected=[{"tool": "f", "args": {"n": 1.0}}])
    assert not tool_trajectory(trace, mode="exact", expected=[{"tool": "f", "args": {"flag": 1}}])


def test_arguments_as_json_string_and_raw_string() -> None:
    trace = make_trace("f")
    trace[1]["tool_calls"][0]["function"]["arguments"] = '{"city": "Paris"}'
    assert tool_trajectory(trace, mode="exact", expected=[{"tool": "f", "args": {"city": "Paris"}}])
    trace[1]["tool_calls"][0]["function"]["arguments"] = "not json"
    result = tool_trajectory(trace, mode="exact", expected=[{"tool": "f", "args": {"city": "Paris"}}])
    assert result.reasons == [
        'call 1: expected f(city="Paris") but got f("not json") (arguments are not a JSON object: "not json")'
    ]
    assert tool_trajectory(trace, mode="exact", expected=[{"tool": "f", "args": {}, "args_match": "ignore"}])


def test_expected_output() -> None:
    trace = make_trace("search")
    assert tool_trajectory(trace, mode="exact", expected=[{"tool": "search", "output": {"contains": "ok"}}])
    result = tool_trajectory(trace, mode="exact", expected=[{"tool": "search", "output": "nope"}])
    assert result.reasons == [
        'call 1: expected search -> "nope" but got search() (output: expected "nope", got "search ok")'
    ]


# ---- thresholds, results, trace shapes --------------------------------------------------------------------------


def test_threshold() -> None:
    result = tool_trajectory(make_trace("a", "x"), mode="exact", expected=["a", "b"], threshold=0.5)
    assert result.passed and result.score == 0.5 and result.reasons == ["call 2: expected b but got x()"]
    assert not tool_trajectory(make_trace("a", "x"), mode="exact", expected=["a", "b"], threshold=0.51)
    assert tool_trajectory(make_trace("x"), mode="exact", expected=["a"], threshold=0.0)


def test_result_shape() -> None:
    result = tool_trajectory(make_trace("b"), mode="exact", expected=["a"], name="first-call")
    assert (result.name, result.kind, result.threshold, result.status) == ("first-call", "tool_trajectory", 1.0, "FAIL")
    assert "call 1: expected a but got b()" in repr(result)
    assert result.explain().splitlines() == [
        "first-call: FAIL (score 0.00, threshold 1.00)",
        "  - call 1: expected a but got b()",
    ]


def test_many_divergences_are_cut_short() -> None:
    result = tool_trajectory(make_trace(*["x"] * 12), mode="exact", expected=["a"] * 12)
    assert len(result.reasons) == 9 and result.reasons[-1] == "... and 4 more"


def test_spanfold_trace_object() -> None:
    events = [
        Message("user", "hi"),
        Message("assistant", None, tool_calls=[ToolCall("c1", "search", {"q": "x"}), ToolCall("c2", "fetch", None)]),
        Message("tool", "found", tool_call_id="c1"),
        Message("tool", "fetched", tool_call_id="c2"),
        Message("assistant", "bye"),
    ]
    trace = Trace(events, TraceMeta(trace_id="t1"))
    assert tool_trajectory(
        trace, mode="exact", expected=[{"tool": "search", "args": {"q": "x"}, "output": "found"}, "fetch"]
    )
    assert tool_trajectory(
        trace.to_invariant(), mode="exact", expected=["search", {"tool": "fetch", "output": "fetched"}]
    )


def test_agentv_document() -> None:
    doc = {
        "trace": [
            {"type": "message", "text": "hi", "metadata": {"role": "user"}},
            {"type": "tool_call", "id": "c1", "name": "search", "input": {"q": "x"}},
            {"type": "tool_result", "id": "c1", "output": "found"},
            {"type": "model_step", "text": "bye", "metadata": {"role": "assistant"}},
        ]
    }
    assert tool_trajectory(doc, mode="exact", expected=[{"tool": "search", "args": {"q": "x"}, "output": "found"}])


def test_outputs_without_ids_attach_in_order() -> None:
    trace = make_trace(["a", "b"])
    for event in trace:
        event.pop("tool_call_id", None)
    assert tool_trajectory(
        trace, mode="exact", expected=[{"tool": "a", "output": "a ok"}, {"tool": "b", "output": "b ok"}]
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "sometimes"}, 'mode must be one of any_order, in_order, exact, subset, superset (got "sometimes")'),
        ({"mode": "exact"}, "expected is required for mode exact"),
        ({"mode": "in_order", "expected": ["a"], "minimums": {"a": 1}}, "minimums apply only to mode any_order"),
        ({"expected": ["a", {"tool": "b", "args_match": "fuzzy"}]}, "expected[1]: args_match must be one of"),
        ({"expected": [{"tool": "b", "argz": {}}]}, 'expected[0]: unknown key "argz" in an expected call'),
        ({"expected": [{"args": {}}]}, "expected[0]: tool must be a tool name (got null)"),
        ({"expected": [3]}, "expected[0]: an expected call (a tool name or {tool: ...}) must be a mapping (got 3)"),
        ({"minimums": {"a": -1}}, 'minimums: minimum for "a" must be a whole number >= 0 (got -1)'),
        ({"minimums": {"a": True}}, 'minimums: minimum for "a" must be a whole number >= 0 (got true)'),
        ({"threshold": 1.5}, "threshold must be a number from 0 to 1 (got 1.5)"),
        ({"expected": [{"tool": "a", "args": {}, "input": {}}]}, "expected[0]: give args or input"),
    ],
)
def test_invalid_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError) as info:
        tool_trajectory(SEARCH_ANSWER, **kwargs)
    assert str(info.value).startswith(message)
    assert isinstance(info.value, ValueError)


def test_not_a_trace() -> None:
    from spanfold.checks import TraceFormatError

    with pytest.raises(TraceFormatError):
        tool_trajectory("nope")  # type: ignore[arg-type]
    with pytest.raises(TraceFormatError, match="event 1 has no role"):
        tool_trajectory([{"content": "x"}])


def _brute_force(adj: list[list[int]], n_right: int) -> int:
    best = 0

    def go(i: int, used: frozenset[int], size: int) -> None:
        nonlocal best
        if i == len(adj):
            best = max(best, size)
            return
        go(i + 1, used, size)
        for r in adj[i]:
            if r not in used:
                go(i + 1, used | {r}, size + 1)

    go(0, frozenset(), 0)
    return best


def test_matching_is_maximum() -> None:
    import random

    from spanfold.checks.trajectory import _max_matching

    rng = random.Random(6)
    for _ in range(300):
        n_left, n_right = rng.randint(0, 6), rng.randint(0, 6)
        adj = [[r for r in range(n_right) if rng.random() < 0.35] for _ in range(n_left)]
        match = _max_matching(adj, n_right)
        pairs = [(i, r) for i, r in enumerate(match) if r is not None]
        assert all(r in adj[i] for i, r in pairs)
        assert len({r for _, r in pairs}) == len(pairs)
        assert len(pairs) == _brute_force(adj, n_right), adj


def test_long_traces_are_quick() -> None:
    import time

    trace = make_trace(*[("search", {"q": str(i)}) for i in range(1000)])
    expected: list[Any] = ["search"] * 500 + [{"tool": "search", "args": {"q": "5"}}]
    start = time.thread_time()  # the CPU this thread spent: a busy machine does not move it, a quadratic match does
    for mode in ("any_order", "in_order", "exact", "subset", "superset"):
        tool_trajectory(trace, mode=mode, expected=expected)
    assert time.thread_time() - start < 2.0

"""expected_messages: the compact spec against a trace (content exact / contains / regex / skipped, tool calls)."""

from __future__ import annotations

from typing import Any

import pytest

from spanfold.checks import SpecError, expected_messages

from .conftest import make_trace

TRACE = make_trace(
    [("get_weather", {"city": "Paris", "units": "C"}), ("get_weather", {"city": "Tokyo", "units": "C"})],
    ("convert", {"celsius": 21}),
    question="What's the weather in Paris and Tokyo?",
    answer="Paris is 21C (69.8F), Tokyo is 18C.",
)


def test_full_compact_spec_passes() -> None:
    spec = [
        {"role": "user", "content": "What's the weather in Paris and Tokyo?"},
        {
            "role": "assistant",
            "tool_calls": [
                {"tool": "get_weather", "input": {"city": "Paris"}, "output": "get_weather ok"},
                {"tool": "get_weather", "input": {"city": "Tokyo"}},
            ],
        },
        {
            "role": "assistant",
            "tool_calls": [{"tool": "convert", "input": {"celsius": 21}, "output": {"contains": "ok"}}],
        },
        {"role": "assistant", "content": {"regex": r"Paris is \d+C"}},
    ]
    result = expected_messages(TRACE, spec)
    assert result.passed and result.score == 1.0 and result.reasons == [] and result.kind == "expected_messages"


@pytest.mark.parametrize(
    ("content", "passed"),
    [
        ("Paris is 21C (69.8F), Tokyo is 18C.", True),
        ("Paris is 21C", False),
        ({"contains": "Tokyo is 18C"}, True),
        ({"contains": "Berlin"}, False),
        ({"regex": r"^Paris is \d+C"}, True),
        ({"regex": r"^Tokyo"}, False),
        (None, True),
    ],
)
def test_content_matching(content: Any, passed: bool) -> None:
    assert expected_messages(TRACE, [{"role": "assistant", "content": content}]).passed is passed


def test_absent_content_is_skipped() -> None:
    assert expected_messages(TRACE, [{"role": "user"}, {"role": "assistant"}, {"role": "assistant"}])


def test_reason_names_the_spec_item_and_the_closest_message() -> None:
    spec = [{"role": "user"}, {"role": "assistant", "content": {"contains": "Berlin"}}]
    result = expected_messages(TRACE, spec)
    assert result.score == 0.5
    assert result.reasons == [
        'expected_messages[1] (assistant text containing "Berlin"): not found after event 1; '
        'closest: event 2 (assistant): content: expected text containing "Berlin", got none'
    ]


def test_tool_input_is_matched_as_a_subset() -> None:
    ok = [{"role": "assistant", "tool_calls": [{"tool": "convert", "input": {}}]}]
    assert expected_messages(TRACE, ok)
    bad = [{"role": "assistant", "tool_calls": [{"tool": "convert", "input": {"celsius": 20}}]}]
    result = expected_messages(TRACE, bad)
    assert result.score == 0.0
    assert result.reasons == [
        "expected_messages[0] (assistant calling convert): not found in the trace; "
        "closest: event 2 (assistant): tool calls: expected 1 (convert), got 2 (get_weather, get_weather)"
    ]


def test_tool_call_input_mismatch_reason() -> None:
    spec = [
        {
            "role": "assistant",
            "tool_calls": [
                {"tool": "get_weather", "input": {"city": "Paris"}},
                {"tool": "get_weather", "input": {"city": "Rome"}},
            ],
        }
    ]
    result = expected_messages(TRACE, spec)
    assert result.reasons[0].endswith(
        'closest: event 2 (assistant): tool call 2 (get_weather): city: expected "Rome", got "Tokyo"'
    )


def test_tool_output_matching() -> None:
    def spec(output: Any) -> list[dict[str, Any]]:
        return [{"role": "assistant", "tool_calls": [{"tool": "convert", "output": output}]}]

    assert expected_messages(TRACE, spec("convert ok"))
    assert expected_messages(TRACE, spec({"regex": "^conv"}))
    assert not expected_messages(TRACE, spec("convert"))
    assert not expected_messages(TRACE, spec({"contains": "fail"}))


def test_structured_output_is_matched_as_data() -> None:
    trace = make_trace("lookup")
    trace[2]["content"] = '{"temp": 21, "unit": "C", "extra": [1, 2]}'
    spec = [{"role": "assistant", "tool_calls": [{"tool": "lookup", "output": {"temp": 21}}]}]
    assert expected_messages(trace, spec)
    spec[0]["tool_calls"][0]["output"] = {"temp": 22}
    result = expected_messages(trace, spec)
    assert "tool call 1 (lookup): output: temp: expected 22, got 21" in result.reasons[0]


def test_messages_are_matched_in_order() -> None:
    spec = [{"role": "assistant", "content": {"contains": "Paris is"}}, {"role": "user"}]
    result = expected_messages(TRACE, spec)
    assert result.score == 0.5
    assert result.reasons == ["expected_messages[1] (user): not found after event 7; no later user message"]


def test_messages_left_out_of_the_spec_may_come_between() -> None:
    assert expected_messages(TRACE, [{"role": "user"}, {"role": "assistant", "content": {"contains": "Tokyo"}}])


def test_tool_calls_empty_list_means_none() -> None:
    assert expected_messages(TRACE, [{"role": "assistant", "tool_calls": [], "content": {"contains": "Paris"}}])
    assert not expected_messages(make_trace("x", answer=""), [{"role": "assistant", "tool_calls": [], "content": "x"}])


def test_threshold_and_score() -> None:
    spec = [{"role": "user"}, {"role": "system"}, {"role": "assistant"}, {"role": "tool_user"}]
    result = expected_messages(TRACE, spec, threshold=0.5)
    assert result.score == 0.5 and result.passed
    assert not expected_messages(TRACE, spec, threshold=0.75)


def test_compact_output_extra_keys_are_ignored() -> None:
    spec = [
        {"role": "user", "content": "What's the weather in Paris and Tokyo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "tool": "get_weather",
                    "input": {"city": "Paris", "units": "C"},
                    "output": "get_weather ok",
                    "id": "call_1",
                    "start_time": "2025-01-01T00:00:00Z",
                    "end_time": "2025-01-01T00:00:01Z",
                    "duration_ms": 1000.0,
                },
                {
                    "tool": "get_weather",
                    "input": {"city": "Tokyo", "units": "C"},
                    "output": "get_weather ok",
                    "id": "call_2",
                    "start_time": None,
                    "end_time": None,
                    "duration_ms": None,
                },
            ],
        },
    ]
    assert expected_messages(TRACE, spec)
    assert expected_messages(TRACE, {"expected_messages": spec})


def test_content_chunks_are_text() -> None:
    trace = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "hello "},
                {"type": "image", "image_url": "x"},
                {"type": "text", "text": "world"},
            ],
        }
    ]
    assert expected_messages(trace, [{"role": "user", "content": "hello world"}])


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ([{"content": "x"}], "expected_messages[0]: role must be a string such as user or assistant (got null)"),
        ([{"role": "tool", "content": "x"}], "expected_messages[0]: role tool is not a message in the compact format"),
        ([{"role": "user", "content": {"contain": "x"}}], "expected_messages[0]: content must be a string, {contains"),
        ([{"role": "user", "content": {"regex": "("}}], "expected_messages[0].content: regex is not a valid regular"),
        ([{"role": "user", "content": 3}], "expected_messages[0]: content must be a string"),
        ([{"role": "user", "tool_calls": {"tool": "x"}}], "expected_messages[0]: tool_calls must be a list"),
        (
            [{"role": "assistant", "tool_calls": [{"tool": "x", "inputs": {}}]}],
            'expected_messages[0].tool_calls[0]: unknown key "inputs" in an expected call',
        ),
        ([{"role": "user", "text": "x"}], 'expected_messages[0]: unknown key "text" in an expected message'),
        ("user: hi", "expected_messages must be a list"),
    ],
)
def test_invalid_spec(spec: Any, message: str) -> None:
    with pytest.raises(SpecError) as info:
        expected_messages(TRACE, spec)
    assert str(info.value).startswith(message)

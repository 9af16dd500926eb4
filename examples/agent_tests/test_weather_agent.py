"""Testing the *process* of an agent, not only its answer: which tools, in which order, with which arguments.

Run: ``pytest examples/agent_tests`` (no API key, no network: the mock server plays the model).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import weather_agent

from spanfold.checks import assert_messages, assert_trajectory, load_spec, tool_trajectory
from spanfold.checks.captured import CapturedTraces
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec

QUESTION = "What's the weather in Paris and Tokyo? And Paris's temperature in fahrenheit, please."


def test_answer_mentions_both_cities(client: Any) -> None:
    answer = weather_agent.ask(client, QUESTION)
    assert "Paris" in answer and "Tokyo" in answer


def test_tool_sequence(client: Any, spanfold_traces: CapturedTraces) -> None:
    weather_agent.ask(client, QUESTION)
    trace = spanfold_traces.last
    # both lookups (in one parallel turn), then the conversion: nothing else, nothing more
    assert_trajectory(trace, ["get_weather", "get_weather", "convert_temperature"], mode="exact")


def test_tool_arguments(client: Any, spanfold_traces: CapturedTraces) -> None:
    weather_agent.ask(client, QUESTION)
    assert_trajectory(
        spanfold_traces.last,
        [
            {"tool": "get_weather", "args": {"city": "Tokyo"}},  # any order among the calls
            {"tool": "get_weather", "args": {"city": "Paris"}},
            {"tool": "convert_temperature", "args": {"celsius": 18, "to": "fahrenheit"}, "args_match": "exact"},
        ],
        mode="superset",
    )


def test_conversation(client: Any, spanfold_traces: CapturedTraces) -> None:
    weather_agent.ask(client, QUESTION)
    assert_messages(
        spanfold_traces.last,
        [
            {"role": "user", "content": QUESTION},
            {
                "role": "assistant",
                "tool_calls": [
                    {"tool": "get_weather", "input": {"city": "Paris"}},
                    {"tool": "get_weather", "input": {"city": "Tokyo"}},
                ],
            },
            {"role": "assistant", "tool_calls": [{"tool": "convert_temperature", "output": "18°C is 64.4°F"}]},
            {"role": "assistant", "content": {"contains": "64.4°F"}},
        ],
    )


def test_golden_spec(client: Any, spanfold_traces: CapturedTraces) -> None:
    """The same spec file ``spanfold check`` runs in CI, here inside a test."""
    weather_agent.ask(client, QUESTION)
    spec = load_spec(Path(__file__).with_name("golden.yaml"))
    results = spec.run(spanfold_traces.last)
    failed = [r.explain() for r in results if not r]
    assert not failed, "\n".join(failed)


def test_one_trace_per_question(client: Any, spanfold_traces: CapturedTraces) -> None:
    weather_agent.ask(client, QUESTION)
    weather_agent.ask(client, "And in Tokyo only?")
    assert len(spanfold_traces) == 2


def test_a_wrong_turn_is_caught(server: MockLLMServer, client: Any, spanfold_traces: CapturedTraces) -> None:
    """Script the model to skip the lookups: the trajectory check says exactly where it went wrong."""
    server.script(
        Reply.tools([ToolCallSpec("convert_temperature", {"celsius": 20, "to": "fahrenheit"})]),
        Reply.text("It is 68°F in Paris."),
    )
    weather_agent.ask(client, QUESTION)
    result = tool_trajectory(spanfold_traces.last, mode="in_order", expected=["get_weather", "convert_temperature"])
    assert result.score == 0.5
    assert result.reasons[0].startswith("call 1: expected get_weather (expected[0]) but got convert_temperature(")
    with pytest.raises(AssertionError, match="actual tool calls:"):
        assert_trajectory(spanfold_traces.last, ["get_weather", "convert_temperature"])

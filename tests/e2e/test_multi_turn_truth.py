"""A multi-turn run's trace says what the run was handed and what it produced, and every per-step figure points at
what the step produced (issue: the trace tells the truth, round 3, item 1).

A support bot answers two questions in one conversation, re-sending the conversation so far with the second: one
``spanfold.agent`` per turn, or no agent span (zero-code: the turns stitched into one run). Every installed provider,
the real SDK over HTTP to the mock server. In turn 2's trace the first events are turn 1 (handed: its question, tool
calls, results and answer, then the new question); the model steps of turn 2 link to turn 2's messages, and the tool
calls the run made are turn 2's alone.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import spanfold
from spanfold.testing import MockLLMServer
from spanfold.testing.agents import PROVIDERS, run_conversation

from ..conftest import Traced
from .test_provider_matrix import INSTALLED

QUESTIONS = ("What's the weather in Paris and Tokyo?", "And again, in Paris and Tokyo, for tomorrow?")


def _written(traced: Traced) -> list[tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]]:
    """(events, metadata, summary) of each trace written, as the files hold them."""
    traces = traced.traces()
    lines = [json.loads(line) for line in (traced.directory / "traces.meta.jsonl").read_text().splitlines()]
    return [(events, line["metadata"], line["summary"]) for events, line in zip(traces, lines, strict=True)]


def _user_positions(events: list[dict[str, Any]]) -> list[int]:
    return [n for n, e in enumerate(events) if e["role"] == "user" and isinstance(e.get("content"), str)]


@pytest.mark.parametrize("provider", INSTALLED)
def test_an_agent_per_turn_links_each_step_to_its_own_turn(
    traced: Traced, server: MockLLMServer, provider: str
) -> None:
    chosen = PROVIDERS[provider]
    answers = run_conversation(chosen, chosen.client(server), QUESTIONS, each_turn=lambda n: spanfold.agent("support"))
    assert len(answers) == 2 and all(answers)
    first, second = _written(traced)
    events, meta, summary = second
    asked = _user_positions(events)[-1]  # turn 2's question: the last thing the run was handed
    assert events[asked]["content"] == QUESTIONS[1]
    assert meta["handed"] == asked + 1, (meta["handed"], [e["role"] for e in events])
    models = [s for s in meta["steps"] if s["kind"] == "model"]
    assert len(models) == 3  # two weather calls asked, the conversion asked, the answer
    for step in models:  # each links to an event this turn produced: an assistant message after the question
        assert step["event"] > asked and events[step["event"]]["role"] == "assistant", (step, events)
    assert models[0]["event"] == asked + 1
    ran = [s["name"] for s in meta["steps"] if s["kind"] == "tool"]
    assert summary["toolCallsByName"] == {name: ran.count(name) for name in set(ran)}  # history's calls not counted
    assert summary["toolCallsByName"] == {"get_weather": 2, "convert_temperature": 1}
    events1, meta1, summary1 = first  # turn 1: handed its system prompt and question
    assert meta1["handed"] == _user_positions(events1)[0] + 1
    assert summary1["toolCallsByName"] == {"get_weather": 2, "convert_temperature": 1}


@pytest.mark.parametrize("provider", INSTALLED)
def test_a_stitched_conversation_is_handed_only_its_opening(
    traced: Traced, server: MockLLMServer, provider: str
) -> None:
    """No agent span: the two turns are one stitched run, handed its opening question, and every model step links to
    the message it produced (the second turn's steps after the second question)."""
    chosen = PROVIDERS[provider]
    run_conversation(chosen, chosen.client(server), QUESTIONS)
    ((events, meta, summary),) = _written(traced)
    questions = _user_positions(events)
    assert [events[n]["content"] for n in questions] == list(QUESTIONS)
    assert meta["handed"] == questions[0] + 1
    models = [s for s in meta["steps"] if s["kind"] == "model"]
    assert len(models) == 6
    linked = [s["event"] for s in models]
    assert linked == sorted(set(linked)) and all(events[n]["role"] == "assistant" for n in linked)
    assert sum(n > questions[1] for n in linked) == 3
    assert summary["toolCallsByName"] == {"get_weather": 4, "convert_temperature": 2}

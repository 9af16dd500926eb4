"""The OpenAI Agents SDK run's ``gen_ai.conversation.id``: only what the application names a conversation, the trace's
``group_id`` (``RunConfig(group_id=...)``, ``agents.trace(..., group_id=...)``), on the run's root and on each agent
it hands off to; never the SDK's trace id (one run, not a conversation). The SDK over the Responses API of the
embedded mock server, as in test_openai_agents.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import agents
import pytest
from agents import Agent, RunConfig, Runner

from spanfold.testing import MockLLMServer

from .test_openai_agents import QUESTION, TRIAGE, triage_then_weather, weather_agent, weather_events

CONVERSATION = "gen_ai.conversation.id"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    yield


def conversation_ids(global_spans: Any) -> list[Any]:
    return [dict(s.attributes or {}).get(CONVERSATION) for s in global_spans.get_finished_spans()]


async def test_no_group_no_conversation_id(traced: Any, server: MockLLMServer, global_spans: Any) -> None:
    await Runner.run(weather_agent(server), QUESTION)
    assert traced.one() == weather_events()
    assert set(conversation_ids(global_spans)) == {None}
    assert "conversation_id" not in traced.metas()[0]["metadata"]


async def test_group_id_is_the_conversation(traced: Any, global_spans: Any) -> None:
    with MockLLMServer(triage_then_weather) as server:
        weather = weather_agent(server)
        triage = Agent(name="Triage agent", instructions=TRIAGE, handoffs=[weather], model=weather.model)
        await Runner.run(triage, QUESTION, run_config=RunConfig(group_id="chat-7"))
    spans = global_spans.get_finished_spans()
    agents_ = {s.name: dict(s.attributes or {}) for s in spans if s.name.startswith("invoke_agent ")}
    assert {name: attrs.get(CONVERSATION) for name, attrs in agents_.items()} == {
        "invoke_agent Triage agent": "chat-7",
        "invoke_agent Weather agent": "chat-7",
    }
    assert len(traced.one()) == 11  # one conversation: the weather agent's calls re-send none of the history
    assert traced.metas()[0]["metadata"]["conversation_id"] == "chat-7"


async def test_a_trace_s_group_id(traced: Any, server: MockLLMServer, global_spans: Any) -> None:
    with agents.trace("Weather workflow", group_id="thread-42"):
        await Runner.run(weather_agent(server), QUESTION)
    assert traced.one() == weather_events()
    (root,) = [s for s in global_spans.get_finished_spans() if s.parent is None]
    assert dict(root.attributes or {})[CONVERSATION] == "thread-42"

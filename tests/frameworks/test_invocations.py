"""Invocation spans as the conventions name them now: ``invoke_agent`` when a model drives the control flow (a
prebuilt LangGraph agent, ``spanfold.agent``), ``invoke_workflow`` when the application does (a LangGraph
``StateGraph``: ``gen_ai.workflow.name`` its name, never LangGraph's default), ``handle_conversation_turn`` for an
OpenAI Agents SDK run; each says whether it runs inside another invocation of the process
(``gen_ai.invocation.is_nested``). Real runs over the embedded mock server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.graph import END, START, MessagesState, StateGraph

import spanfold
from spanfold.testing import MockLLMServer

from ..conftest import Traced
from ..semconv.names_check import unlisted
from .langchain_helpers import AGENT_NAME, question, weather_agent

NESTED = "gen_ai.invocation.is_nested"


def invocations(global_spans: Any) -> dict[str, dict[str, Any]]:
    """The invocation spans by name, their attributes."""
    ops = ("invoke_agent", "invoke_workflow", "handle_conversation_turn")
    return {s.name: dict(s.attributes or {}) for s in global_spans.get_finished_spans() if s.name.startswith(ops)}


def ask_graph(server: MockLLMServer, name: str | None) -> Any:
    """A StateGraph of the application's: one node that asks the prebuilt weather agent."""
    inner = weather_agent(server)

    def ask(state: MessagesState) -> dict[str, Any]:
        return {"messages": inner.invoke(state)["messages"][len(state["messages"]) :]}

    graph = StateGraph(MessagesState)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph.compile(name=name) if name else graph.compile()


def test_a_prebuilt_agent_is_an_agent(traced: Traced, server: MockLLMServer, global_spans: Any) -> None:
    weather_agent(server).invoke(question())
    traced.one()
    attrs = invocations(global_spans)[f"invoke_agent {AGENT_NAME}"]
    assert attrs["gen_ai.operation.name"] == "invoke_agent"
    assert attrs["gen_ai.agent.name"] == AGENT_NAME
    assert attrs[NESTED] is False
    assert "gen_ai.workflow.name" not in attrs


def test_a_state_graph_is_a_workflow(traced: Traced, server: MockLLMServer, global_spans: Any) -> None:
    ask_graph(server, "supervisor").invoke(question())
    events = traced.one()
    assert unlisted(global_spans.get_finished_spans()) == set()
    assert len(events) == 8
    assert traced.metas()[0]["metadata"]["name"] == "supervisor"  # the workflow's name names the trace
    (only,) = invocations(global_spans).items()  # the agent inside is the workflow's step: no second root
    assert only == (
        "invoke_workflow supervisor",
        {
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.workflow.name": "supervisor",
            NESTED: False,
            "input.value": events[1]["content"],
            "input.mime_type": "text/plain",
            "output.value": events[-1]["content"],
            "output.mime_type": "text/plain",
        },
    )


def test_langgraph_s_default_name_is_no_workflow_name(traced: Traced, server: MockLLMServer, global_spans: Any) -> None:
    ask_graph(server, None).invoke(question())
    assert len(traced.one()) == 8
    (name, attrs) = next(iter(invocations(global_spans).items()))
    assert name == "invoke_workflow"
    assert "gen_ai.workflow.name" not in attrs and "gen_ai.agent.name" not in attrs


def test_a_run_inside_a_run_is_nested(traced: Traced, global_spans: Any) -> None:
    with spanfold.agent("outer"), spanfold.agent("inner"):
        pass
    runs = invocations(global_spans)
    assert runs["invoke_agent outer"][NESTED] is False
    assert runs["invoke_agent inner"][NESTED] is True


@pytest.fixture
def _offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    yield


async def test_an_agents_sdk_turn_inside_a_run_is_nested(
    traced: Traced, server: MockLLMServer, global_spans: Any, _offline: None
) -> None:
    from agents import Runner

    from .test_openai_agents import QUESTION, weather_events
    from .test_openai_agents import weather_agent as sdk_weather_agent

    async with spanfold.agent("app"):
        await Runner.run(sdk_weather_agent(server), QUESTION)
    assert traced.one() == weather_events()
    runs = invocations(global_spans)
    assert runs["invoke_agent app"][NESTED] is False
    assert runs["handle_conversation_turn Weather agent"][NESTED] is True
    assert runs["invoke_agent Weather agent"][NESTED] is True
    assert unlisted(global_spans.get_finished_spans()) == set()  # every name it writes is in the table


async def test_a_handoff_writes_only_names_of_the_table(traced: Traced, global_spans: Any, _offline: None) -> None:
    from agents import Agent, Runner

    from .test_openai_agents import QUESTION, TRIAGE, triage_then_weather
    from .test_openai_agents import weather_agent as sdk_weather_agent

    with MockLLMServer(triage_then_weather) as server:
        weather = sdk_weather_agent(server)
        triage = Agent(name="Triage agent", instructions=TRIAGE, handoffs=[weather], model=weather.model)
        await Runner.run(triage, QUESTION)
    traced.one()
    assert unlisted(global_spans.get_finished_spans()) == set()

"""CrewAI under spanfold.init() (its own venv, ``.ci/frameworks``: CrewAI pins ``openai < 3``): the weather agent as
a CrewAI ``Agent`` with native tools on CrewAI's ``LLM`` (its OpenAI provider) against the embedded mock server, in
a ``Crew`` (``kickoff``, ``kickoff_async``, ``akickoff``) and on its own (``Agent.kickoff``). A crew's kickoff is one
trace rooted at ``invoke_agent {crew name}``, each agent's task an ``invoke_agent {role}`` span in it, every tool run
an ``execute_tool`` span with the model's call id, asserted event by event."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai import LLM, Agent, Crew, Task
from crewai.tools import tool

from spanfold.testing import WEATHER, MockLLMServer, Reply, ToolCallSpec

from ..conftest import Traced
from . import weather
from .contract import Contract, Framework
from .helpers import folded
from .weather import ANSWER

ROLE = "Weather reporter"
CREW = "weather-crew"


get_weather = tool("get_weather")(weather.get_weather)
convert_temperature = tool("convert_temperature")(weather.convert_temperature)


def llm(server: MockLLMServer) -> LLM:
    return LLM(model="openai/gpt-4o-mini", base_url=server.base_url, api_key="sk-test", max_retries=0)


def reporter(server: MockLLMServer, role: str = ROLE, tools: list[Any] | None = None) -> Agent:
    tools = [get_weather, convert_temperature] if tools is None else tools
    return Agent(role=role, goal="Report the weather", backstory="You know weather.", llm=llm(server), tools=tools)


def weather_crew(server: MockLLMServer) -> Crew:
    agent = reporter(server)
    task = Task(description=WEATHER.question, expected_output="One sentence.", agent=agent)
    return Crew(agents=[agent], tasks=[task], name=CREW)


def assert_weather_trace(events: list[dict[str, Any]]) -> None:
    assert events[0] == {
        "role": "system",
        "content": f"You are {ROLE}. You know weather.\nYour personal goal is: Report the weather",
    }
    assert events[1]["role"] == "user" and WEATHER.question in events[1]["content"]
    assert events[2:] == weather.WEATHER_STEPS


def spans_named(global_spans: Any, prefix: str) -> list[Any]:
    return [s for s in global_spans.get_finished_spans() if s.name.startswith(prefix)]


def assert_crew_tree(global_spans: Any) -> None:
    """The crew's span is the root; the agent's is its child; the model calls and tool runs are the agent's."""
    (crew,) = spans_named(global_spans, f"invoke_agent {CREW}")
    (agent,) = spans_named(global_spans, f"invoke_agent {ROLE}")
    assert crew.parent is None and agent.parent is not None and agent.parent.span_id == crew.context.span_id
    steps = spans_named(global_spans, "chat ") + spans_named(global_spans, "execute_tool")
    assert len(steps) == 6 and all(s.context.trace_id == crew.context.trace_id for s in steps)
    assert all(
        s.parent is not None and s.parent.span_id == agent.context.span_id for s in spans_named(global_spans, "chat ")
    )
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in spans_named(global_spans, "execute_tool")}
    assert sorted(tools) == ["call_mock_1", "call_mock_2", "call_mock_3"]
    assert tools["call_mock_2"].attributes["gen_ai.tool.call.arguments"] == '{"city":"Tokyo"}'
    assert tools["call_mock_3"].attributes["gen_ai.tool.call.result"] == "18°C is 64.4°F"


def test_a_crew_kickoff_is_one_trace_named_after_the_crew(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer(WEATHER.replies) as server:
        assert str(weather_crew(server).kickoff()) == ANSWER
    assert_weather_trace(traced.one())
    meta = traced.metas()[0]["metadata"]
    assert meta["name"] == CREW and meta["status"] == "complete"
    assert_crew_tree(global_spans)
    (run,) = folded(global_spans)
    assert {e.metadata.get("agent") for e in run.events} == {ROLE}


def test_kickoff_async_is_one_trace_with_one_crew_span(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer(WEATHER.replies) as server:
        assert str(asyncio.run(weather_crew(server).kickoff_async())) == ANSWER
    assert_weather_trace(traced.one())
    assert_crew_tree(global_spans)


def test_akickoff_is_one_trace(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer(WEATHER.replies) as server:
        assert str(asyncio.run(weather_crew(server).akickoff())) == ANSWER
    assert_weather_trace(traced.one())
    assert_crew_tree(global_spans)


def test_an_agent_on_its_own_is_one_trace_named_after_its_role(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer(WEATHER.replies) as server:
        assert str(reporter(server).kickoff(WEATHER.question)) == ANSWER
    events = traced.one()
    assert events[2:] == weather.WEATHER_STEPS
    assert traced.metas()[0]["metadata"]["name"] == ROLE
    assert [s.name for s in spans_named(global_spans, "invoke_agent")] == [f"invoke_agent {ROLE}"]


def test_each_agent_of_a_crew_runs_under_its_role(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer() as server:
        server.script(
            Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]),
            Reply.text("Paris: 18°C, sunny"),
            Reply.text("Pack sunglasses for Paris."),
        )
        researcher = reporter(server, "Researcher", [get_weather])
        advisor = reporter(server, "Advisor", [])
        tasks = [
            Task(description="Find the weather in Paris.", expected_output="The weather.", agent=researcher),
            Task(description="Advise what to pack.", expected_output="One sentence.", agent=advisor),
        ]
        crew = Crew(agents=[researcher, advisor], tasks=tasks, name="trip-crew")
        assert str(crew.kickoff()) == "Pack sunglasses for Paris."
    events = traced.one()
    (run,) = folded(global_spans)
    assert [(e.role, e.metadata.get("agent")) for e in run.events] == [
        ("system", "Researcher"),
        ("user", "Researcher"),
        ("assistant", "Researcher"),
        ("tool", "Researcher"),
        ("assistant", "Researcher"),
        ("system", "Advisor"),
        ("user", "Advisor"),
        ("assistant", "Advisor"),
    ]
    assert events[3] == {"role": "tool", "content": "Paris: 18°C, sunny", "tool_call_id": "call_mock_1"}
    assert "Paris: 18°C, sunny" in events[6]["content"]  # the researcher's answer is the advisor's context
    assert events[7] == {"role": "assistant", "content": "Pack sunglasses for Paris."}
    assert traced.metas()[0]["metadata"]["name"] == "trip-crew"


def test_a_failing_tool_is_an_error_output(traced: Traced) -> None:
    with MockLLMServer() as server:
        server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Atlantis"})]), Reply.text("No forecast."))
        agent = reporter(server)
        task = Task(description="Weather in Atlantis?", expected_output="One sentence.", agent=agent)
        assert str(Crew(agents=[agent], tasks=[task], name=CREW).kickoff()) == "No forecast."
    events = traced.one()
    assert [e["role"] for e in events] == ["system", "user", "assistant", "tool", "assistant"]
    failed = events[3]
    assert failed["tool_call_id"] == "call_mock_1"
    assert failed["error"]["type"] == "tool_error"
    assert "no forecast for Atlantis" in failed["content"]
    assert traced.metas()[0]["summary"]["errorCount"] == 1


class TestContract(Contract):
    @pytest.fixture
    def framework(self) -> Framework:
        """A crew inside the application's run opens no span of its own: not the crew's, not its agent's."""
        return Framework(
            lambda server: weather_crew(server).kickoff(),
            lambda events, _: assert_weather_trace(events),
            WEATHER.replies,
        )


@pytest.fixture(autouse=True)
def _quiet_crewai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CREWAI_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("CREWAI_TRACING_ENABLED", "false")

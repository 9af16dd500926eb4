"""Agno under spanfold.init(): the weather agent as an Agno ``Agent`` on ``OpenAIChat`` against the embedded mock
server, run with ``run``, ``run(stream=True)``, ``arun`` and ``arun(stream=True)``, and a ``Team`` delegating to a
member. Each run is one trace rooted at ``invoke_agent {name}``, with the openai patch's model steps and Agno's tool
runs (with the model's call ids) in it, equal event by event to the plain-openai weather agent's trace."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from agno.agent import Agent
from agno.models.openai import OpenAIChat
from agno.team import Team

import spanfold
from spanfold.testing import WEATHER, MockLLMServer, Reply, ToolCallSpec, run_agent

from ..conftest import Traced
from .contract import Contract, Framework, events_are
from .helpers import folded
from .weather import WEATHER_RUN, convert_temperature, get_weather

NAME = "weather-bot"


def chat(server: MockLLMServer) -> OpenAIChat:
    return OpenAIChat(id="gpt-4o-mini", base_url=server.base_url, api_key="sk-test", max_retries=0)


def weather_agent(server: MockLLMServer, **options: Any) -> Agent:
    tools = [get_weather, convert_temperature]
    return Agent(name=NAME, model=chat(server), tools=tools, instructions=WEATHER.system, telemetry=False, **options)


def plain_trace(traced: Traced) -> list[dict[str, Any]]:
    """The plain-openai weather agent's flat trace (spanfold.testing's loop, in ``spanfold.agent``)."""
    with MockLLMServer(WEATHER.replies) as server, spanfold.agent(NAME):
        run_agent("openai", openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0))
    (plain,) = traced.traces()
    return plain


def assert_weather_run(traced: Traced, global_spans: Any, plain: list[dict[str, Any]]) -> None:
    ours = traced.traces()[-1]
    assert ours == plain
    assert [e["tool_call_id"] for e in ours if e["role"] == "tool"] == ["call_mock_1", "call_mock_2", "call_mock_3"]
    meta = traced.metas()[-1]["metadata"]
    assert meta["name"] == NAME and meta["status"] == "complete"
    spans = [s for s in global_spans.get_finished_spans() if s.context.trace_id == _root(global_spans).context.trace_id]
    assert sorted(s.name for s in spans) == sorted(
        [
            f"invoke_agent {NAME}",
            *(["chat gpt-4o-mini"] * 3),
            *(["execute_tool get_weather"] * 2),
            "execute_tool convert_temperature",
        ]
    )
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in spans if s.name.startswith("execute_tool")}
    assert tools["call_mock_2"].attributes["gen_ai.tool.call.arguments"] == '{"city":"Tokyo"}'
    assert tools["call_mock_3"].attributes["gen_ai.tool.call.result"] == "18°C is 64.4°F"


def _root(global_spans: Any) -> Any:
    (root,) = [s for s in global_spans.get_finished_spans() if s.name == f"invoke_agent {NAME}" and s.parent is None][
        -1:
    ]
    return root


def test_run_is_one_trace_named_after_the_agent(traced: Traced, global_spans: Any) -> None:
    plain = plain_trace(traced)
    global_spans.clear()
    with MockLLMServer(WEATHER.replies) as server:
        output = weather_agent(server).run(WEATHER.question)
    assert output.content == plain[-1]["content"]
    assert_weather_run(traced, global_spans, plain)


def test_a_streamed_run_is_one_trace(traced: Traced, global_spans: Any) -> None:
    plain = plain_trace(traced)
    global_spans.clear()
    with MockLLMServer(WEATHER.replies) as server:
        events = list(weather_agent(server).run(WEATHER.question, stream=True))
    assert "".join(str(e.content) for e in events if type(e).__name__ == "RunContentEvent") == plain[-1]["content"]
    assert_weather_run(traced, global_spans, plain)


def test_arun_is_one_trace(traced: Traced, global_spans: Any) -> None:
    plain = plain_trace(traced)
    global_spans.clear()
    with MockLLMServer(WEATHER.replies) as server:
        output = asyncio.run(weather_agent(server).arun(WEATHER.question))
    assert output.content == plain[-1]["content"]
    assert_weather_run(traced, global_spans, plain)


def test_a_streamed_arun_is_one_trace(traced: Traced, global_spans: Any) -> None:
    plain = plain_trace(traced)
    global_spans.clear()

    async def run(server: MockLLMServer) -> list[Any]:
        return [e async for e in weather_agent(server).arun(WEATHER.question, stream=True)]

    with MockLLMServer(WEATHER.replies) as server:
        events = asyncio.run(run(server))
    assert "".join(str(e.content) for e in events if type(e).__name__ == "RunContentEvent") == plain[-1]["content"]
    assert_weather_run(traced, global_spans, plain)


def test_a_failing_tool_is_an_error_output(traced: Traced) -> None:
    with MockLLMServer() as server:
        server.script(
            Reply.tools([ToolCallSpec("get_weather", {"city": "Atlantis"})]),
            Reply.text("No forecast for Atlantis."),
        )
        output = weather_agent(server).run("Weather in Atlantis?")
    assert output.content == "No forecast for Atlantis."
    events = traced.one()
    assert [e["role"] for e in events] == ["system", "user", "assistant", "tool", "assistant"]
    failed = events[3]
    assert failed["tool_call_id"] == "call_mock_1"
    assert failed["error"]["type"] == "tool_error"
    assert "no forecast for Atlantis" in failed["content"]
    assert traced.metas()[0]["summary"]["errorCount"] == 1


def test_a_model_error_is_the_runs_error(traced: Traced, global_spans: Any) -> None:
    """Agno returns the failure (status ERROR) rather than raising it: the run's span fails with it."""
    with MockLLMServer() as server:
        server.script(Reply.error(400, "bad request"))
        output = weather_agent(server).run("Weather?")
    assert getattr(output.status, "value", output.status) == "ERROR"
    events = traced.one()
    assert [e["role"] for e in events] == ["system", "user", "error"]
    assert traced.metas()[0]["metadata"]["status"] == "error"
    (root,) = [s for s in global_spans.get_finished_spans() if s.name == f"invoke_agent {NAME}"]
    assert root.attributes["error.type"] == "agent_error"


class TestContract(Contract):
    @pytest.fixture
    def framework(self) -> Framework:
        return Framework(
            lambda server: weather_agent(server).run(WEATHER.question), events_are(WEATHER_RUN), WEATHER.replies
        )


def test_a_team_member_runs_under_its_own_name_inside_the_delegation(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer() as server:
        server.script(
            Reply.tools(
                [ToolCallSpec("delegate_task_to_member", {"member_id": "weather-agent", "task": "Paris weather"})]
            ),
            Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]),
            Reply.text("Paris: 18°C, sunny"),
            Reply.text("It is sunny in Paris."),
        )
        member = Agent(
            name="weather-agent", id="weather-agent", model=chat(server), tools=[get_weather], telemetry=False
        )
        team = Team(name="travel-team", members=[member], model=chat(server), telemetry=False)
        assert team.run("Weather in Paris?").content == "It is sunny in Paris."
    events = traced.one()
    (run,) = folded(global_spans)
    assert [(e.role, e.metadata.get("agent")) for e in run.events] == [
        ("system", "travel-team"),
        ("user", "travel-team"),
        ("assistant", "travel-team"),
        ("user", "weather-agent"),
        ("assistant", "weather-agent"),
        ("tool", "weather-agent"),
        ("assistant", "weather-agent"),
        ("tool", "travel-team"),
        ("assistant", "travel-team"),
    ]
    assert events[2]["tool_calls"][0]["function"]["name"] == "delegate_task_to_member"
    assert events[3:] == [
        {"role": "user", "content": "Paris weather"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_mock_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                }
            ],
        },
        {"role": "tool", "content": "Paris: 18°C, sunny", "tool_call_id": "call_mock_2"},
        {"role": "assistant", "content": "Paris: 18°C, sunny"},
        {"role": "tool", "content": "Paris: 18°C, sunny", "tool_call_id": "call_mock_1"},
        {"role": "assistant", "content": "It is sunny in Paris."},
    ]
    assert traced.metas()[0]["metadata"]["name"] == "travel-team"
    spans = global_spans.get_finished_spans()
    (delegation,) = [s for s in spans if s.name == "execute_tool delegate_task_to_member"]
    (member_run,) = [s for s in spans if s.name == "invoke_agent weather-agent"]
    assert member_run.parent is not None and member_run.parent.span_id == delegation.context.span_id
    assert delegation.attributes["gen_ai.tool.call.result"] == "Paris: 18°C, sunny"

"""AutoGen AgentChat under spanfold.init() (its own venv, ``.ci/frameworks``: autogen-core pins ``protobuf ~= 5.29``):
the weather agent as an ``AssistantAgent`` on ``OpenAIChatCompletionClient`` against the embedded mock server, on its
own (``run``, ``run_stream`` with the model's replies streamed) and in a ``RoundRobinGroupChat``. AgentChat is
asynchronous only (no synchronous run). An agent's run is one trace rooted at AutoGen's own ``invoke_agent {agent}``;
a team's run one trace rooted at spanfold's ``invoke_agent {team}``, each agent's turns under its name; every tool run
an ``execute_tool`` span with the model's call id, its arguments and its result (AutoGen's own tool spans carry
neither), asserted event by event."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core.models import ModelInfo
from autogen_ext.models.openai import OpenAIChatCompletionClient

from spanfold.testing import WEATHER, MockLLMServer, Reply, ToolCallSpec

from ..conftest import Traced
from ..semconv.names_check import unlisted
from .contract import Contract, Framework
from .helpers import folded
from .weather import ANSWER, FIRST_STEP, QUESTION, SYSTEM, WEATHER_RUN, call, convert_temperature, get_weather

MODEL = "weather-model"
INFO = ModelInfo(vision=False, function_calling=True, json_output=False, family="unknown", structured_output=False)


def client(server: MockLLMServer) -> OpenAIChatCompletionClient:
    return OpenAIChatCompletionClient(
        model=MODEL, base_url=server.base_url, api_key="test", model_info=INFO, max_retries=0
    )


def weather_agent(server: MockLLMServer, name: str = "weather_agent", **kwargs: Any) -> AssistantAgent:
    kwargs.setdefault("tools", [get_weather, convert_temperature])
    kwargs.setdefault("system_message", WEATHER.system)
    return AssistantAgent(name, model_client=client(server), **kwargs)


def spans_named(global_spans: Any, prefix: str) -> list[Any]:
    return [s for s in global_spans.get_finished_spans() if s.name.startswith(prefix)]


def assert_one_agent_trace(traced: Traced, global_spans: Any, name: str = "weather_agent") -> None:
    """The run's metadata names the agent; its events carry its name; spanfold's spans write only listed names."""
    meta = traced.metas()[0]["metadata"]
    assert meta["name"] == name and meta["status"] == "complete"
    (run,) = folded(global_spans)
    assert {e.metadata.get("agent") for e in run.events} == {name}
    assert not unlisted(global_spans.get_finished_spans())


async def streamed(items: AsyncIterator[Any]) -> TaskResult:
    async for item in items:
        if isinstance(item, TaskResult):
            return item
    raise AssertionError("the stream ended without its result")


def test_an_agent_run_is_one_trace_with_its_tool_outputs(traced: Traced, global_spans: Any) -> None:
    """AutoGen's default run ends on the tool results (no model call is sent them): they are the tool spans'."""
    with MockLLMServer(WEATHER.replies) as server:
        result = asyncio.run(weather_agent(server).run(task=WEATHER.question))
    assert result.messages[-1].to_text() == "Paris: 18°C, sunny\nTokyo: 24°C, cloudy"
    assert traced.one() == [SYSTEM, QUESTION, *FIRST_STEP]
    assert_one_agent_trace(traced, global_spans)
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in spans_named(global_spans, "execute_tool")}
    ours = [s for s in tools.values() if s.instrumentation_scope.name.startswith("spanfold")]
    assert len(ours) == 2 and tools["call_mock_2"].attributes["gen_ai.tool.call.arguments"] == '{"city":"Tokyo"}'


def test_an_agent_run_with_tool_iterations_is_the_whole_run(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer(WEATHER.replies) as server:
        result = asyncio.run(weather_agent(server, max_tool_iterations=5).run(task=WEATHER.question))
    assert result.messages[-1].to_text() == ANSWER
    assert traced.one() == WEATHER_RUN
    assert_one_agent_trace(traced, global_spans)


def test_run_stream_with_streamed_model_replies_is_one_trace(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer(WEATHER.replies) as server:
        agent = weather_agent(server, max_tool_iterations=5, model_client_stream=True)
        result = asyncio.run(streamed(agent.run_stream(task=WEATHER.question)))
        assert all(r.body.get("stream") is True for r in server.requests)
    assert result.messages[-1].to_text() == ANSWER
    assert traced.one() == WEATHER_RUN
    assert_one_agent_trace(traced, global_spans)


def test_with_content_capture_off_the_run_keeps_its_roles_tools_and_ids(traced_off: Traced, global_spans: Any) -> None:
    with MockLLMServer(WEATHER.replies) as server:
        asyncio.run(weather_agent(server).run(task=WEATHER.question))
    events = traced_off.one()
    assert [(e["role"], e.get("tool_call_id"), e.get("content")) for e in events[3:]] == [
        ("tool", "call_mock_1", None),
        ("tool", "call_mock_2", None),
    ]
    assert [c["function"]["name"] for c in events[2]["tool_calls"]] == ["get_weather", "get_weather"]
    ours = [s for s in spans_named(global_spans, "execute_tool") if s.instrumentation_scope.name.startswith("spanfold")]
    assert len(ours) == 2 and not any("gen_ai.tool.call.result" in s.attributes for s in ours)


def test_a_failing_tool_is_an_error_output(traced: Traced) -> None:
    with MockLLMServer() as server:
        server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Atlantis"})]))
        asyncio.run(weather_agent(server).run(task="Weather in Atlantis?"))
    events = traced.one()
    assert [e["role"] for e in events] == ["system", "user", "assistant", "tool"]
    failed = events[3]
    assert failed["tool_call_id"] == "call_mock_1"
    assert failed["error"]["type"] == "tool_error"
    assert failed["content"] == "no forecast for Atlantis"
    assert traced.metas()[0]["summary"]["errorCount"] == 1


def test_an_unknown_tool_is_an_error_output(traced: Traced) -> None:
    """A call AutoGen cannot run (no such tool) has no AutoGen span at all: spanfold's records what the model got."""
    with MockLLMServer() as server:
        server.script(Reply.tools([ToolCallSpec("get_forecast", {"city": "Paris"})]))
        asyncio.run(weather_agent(server).run(task="Forecast for Paris?"))
    failed = traced.one()[3]
    assert failed["tool_call_id"] == "call_mock_1" and failed["error"]["type"] == "tool_error"
    assert failed["content"] == "Error: tool 'get_forecast' not found in any workbench"


#: A model call that failed (the mock server's HTTP 500), as its event.
MODEL_DOWN = {
    "role": "error",
    "content": "openai.InternalServerError: Error code: 500 - the model is down",
    "error": {"type": "openai.InternalServerError", "message": "Error code: 500 - the model is down"},
}


def test_a_failed_run_is_marked_failed(traced: Traced) -> None:
    with MockLLMServer() as server:
        server.script(Reply.error(500, "the model is down"))
        with pytest.raises(Exception, match="the model is down"):
            asyncio.run(weather_agent(server).run(task=WEATHER.question))
    assert traced.one() == [SYSTEM, QUESTION, MODEL_DOWN]
    meta = traced.metas()[0]["metadata"]
    assert meta["name"] == "weather_agent" and meta["status"] == "error"


def weather_team(server: MockLLMServer) -> RoundRobinGroupChat:
    """The weather agent and a critic taking turns: the agent's second turn re-sends its first."""
    server.script(
        Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]),
        Reply.text("Say it in Fahrenheit."),
        Reply.tools([ToolCallSpec("convert_temperature", {"celsius": 18})]),
    )
    critic = AssistantAgent("critic", model_client=client(server), system_message="Critique the answer.")
    return RoundRobinGroupChat(
        [weather_agent(server), critic], termination_condition=MaxMessageTermination(4), name="weather_team"
    )


#: The team's run: each agent's turns one thread under its name, its history shown once.
TEAM_RUN = [
    ("system", "weather_agent", WEATHER.system),
    ("user", "weather_agent", "Weather in Paris?"),
    ("assistant", "weather_agent", [call("call_mock_1", "get_weather", {"city": "Paris"})]),
    ("tool", "weather_agent", "Paris: 18°C, sunny"),
    ("system", "critic", "Critique the answer."),
    ("user", "critic", "Weather in Paris?"),
    ("user", "critic", "Paris: 18°C, sunny"),
    ("assistant", "critic", "Say it in Fahrenheit."),
    ("user", "weather_agent", "Say it in Fahrenheit."),
    ("assistant", "weather_agent", [call("call_mock_2", "convert_temperature", {"celsius": 18})]),
    ("tool", "weather_agent", "18°C is 64.4°F"),
]


def _team_events(global_spans: Any) -> list[tuple[str, str | None, Any]]:
    (run,) = folded(global_spans)
    return [
        (e.role, e.metadata.get("agent"), [tc.to_invariant() for tc in e.tool_calls] if e.tool_calls else e.content)
        for e in run.events
    ]


@pytest.mark.parametrize("how", ["run", "run_stream"])
def test_a_team_run_is_one_trace_each_agent_under_its_name(traced: Traced, global_spans: Any, how: str) -> None:
    with MockLLMServer() as server:
        team = weather_team(server)
        if how == "run":
            result = asyncio.run(team.run(task="Weather in Paris?"))
        else:
            result = asyncio.run(streamed(team.run_stream(task="Weather in Paris?")))
    assert result.messages[-1].to_text() == "18°C is 64.4°F"
    events = traced.one()
    assert [e.get("tool_call_id") for e in events if e["role"] == "tool"] == ["call_mock_1", "call_mock_2"]
    assert _team_events(global_spans) == TEAM_RUN
    meta = traced.metas()[0]["metadata"]
    assert meta["name"] == "weather_team" and meta["status"] == "complete"
    assert traced.metas()[0]["summary"]["toolCallsByName"] == {"get_weather": 1, "convert_temperature": 1}
    (team_span,) = spans_named(global_spans, "invoke_agent weather_team")
    assert team_span.parent is None
    turns = spans_named(global_spans, "invoke_agent weather_agent") + spans_named(global_spans, "invoke_agent critic")
    assert len(turns) == 3 and all(s.context.trace_id == team_span.context.trace_id for s in turns)


def test_a_failed_team_run_is_marked_failed(traced: Traced) -> None:
    with MockLLMServer() as server:
        server.script(Reply.error(500, "the model is down"))
        team = RoundRobinGroupChat([weather_agent(server)], max_turns=1, name="weather_team")
        with pytest.raises(RuntimeError, match="the model is down"):
            asyncio.run(team.run(task=WEATHER.question))
    assert traced.one() == [SYSTEM, QUESTION, MODEL_DOWN]
    meta = traced.metas()[0]["metadata"]
    assert meta["name"] == "weather_team" and meta["status"] == "error"


class TestContract(Contract):
    @pytest.fixture
    def framework(self) -> Framework:
        """A team inside the application's run opens no span of its own; AutoGen's own agent turns nest in it."""

        async def run(server: MockLLMServer) -> TaskResult:
            return await weather_team(server).run(task="Weather in Paris?")

        def trace(events: list[dict[str, Any]], result: TaskResult) -> None:
            said = [(e["role"], e.get("tool_calls") or e["content"]) for e in events]
            assert said == [(role, content) for role, _, content in TEAM_RUN]

        turns = ("invoke_agent critic", "invoke_agent weather_agent", "invoke_agent weather_agent")
        return Framework(run, trace, nested=turns)


@pytest.fixture(autouse=True)
def _no_model_warnings() -> Any:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Resolved model mismatch", category=UserWarning)
        yield

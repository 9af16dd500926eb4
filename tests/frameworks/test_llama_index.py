"""LlamaIndex agents under spanfold.init() (their own venv, ``.ci/frameworks``: ``llama-index-llms-openai`` pins
``openai < 3``): the weather agent as a ``FunctionAgent`` on LlamaIndex's ``OpenAI`` LLM against the embedded mock
server, awaited and streamed, and an ``AgentWorkflow`` with a handoff. Each run is one trace rooted at
``invoke_agent {agent name}``, every tool call an ``execute_tool`` span with the model's call id, equal event by
event to the plain-openai weather agent's trace."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.llms.openai import OpenAI

import spanfold
from spanfold.testing import WEATHER, MockLLMServer, Reply, ToolCallSpec, run_agent

from ..conftest import Traced
from .contract import Contract, Framework, events_are
from .weather import WEATHER_RUN, convert_temperature, get_weather

NAME = "weather-bot"


def llm(server: MockLLMServer) -> OpenAI:
    return OpenAI(model="gpt-4o-mini", api_base=server.base_url, api_key="sk-test", max_retries=0)


def weather_agent(server: MockLLMServer, name: str = NAME, **options: Any) -> FunctionAgent:
    options.setdefault("tools", [get_weather, convert_temperature])
    options.setdefault("system_prompt", WEATHER.system)
    return FunctionAgent(name=name, llm=llm(server), **options)


def plain_trace(traced: Traced, *, stream: bool = False) -> list[dict[str, Any]]:
    """The plain-openai weather agent's flat trace (spanfold.testing's loop, in ``spanfold.agent``)."""
    with MockLLMServer(WEATHER.replies) as server, spanfold.agent(NAME):
        run_agent("openai", openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0), stream=stream)
    (plain,) = traced.traces()
    return plain


def spans_named(global_spans: Any, prefix: str) -> list[Any]:
    return [s for s in global_spans.get_finished_spans() if s.name.startswith(prefix)]


def assert_one_run(global_spans: Any, name: str = NAME) -> None:
    (root,) = [s for s in spans_named(global_spans, f"invoke_agent {name}") if s.parent is None]
    steps = spans_named(global_spans, "chat ") + spans_named(global_spans, "execute_tool")
    assert len(steps) == 6 and all(s.context.trace_id == root.context.trace_id for s in steps)
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in spans_named(global_spans, "execute_tool")}
    assert sorted(tools) == ["call_mock_1", "call_mock_2", "call_mock_3"]
    assert tools["call_mock_2"].attributes["gen_ai.tool.call.arguments"] == '{"city":"Tokyo"}'
    assert tools["call_mock_3"].attributes["gen_ai.tool.call.result"] == "18°C is 64.4°F"


def test_an_agent_run_is_one_trace_named_after_the_agent(traced: Traced, global_spans: Any) -> None:
    plain = plain_trace(traced, stream=True)  # FunctionAgent streams its model calls by default
    global_spans.clear()

    async def run() -> Any:
        with MockLLMServer(WEATHER.replies) as server:
            return await weather_agent(server).run(WEATHER.question)

    assert str(asyncio.run(run())) == plain[-1]["content"]
    assert traced.traces()[-1] == plain
    meta = traced.metas()[-1]["metadata"]
    assert meta["name"] == NAME and meta["status"] == "complete"
    assert_one_run(global_spans)


def test_a_run_whose_events_are_streamed_is_one_trace(traced: Traced, global_spans: Any) -> None:
    plain = plain_trace(traced)
    global_spans.clear()

    async def run() -> list[str]:
        with MockLLMServer(WEATHER.replies) as server:
            handler = weather_agent(server, streaming=False).run(WEATHER.question)
            kinds = [type(event).__name__ async for event in handler.stream_events()]
            await handler
            return kinds

    kinds = asyncio.run(run())
    assert kinds.count("ToolCallResult") == 3
    assert traced.traces()[-1] == plain
    assert_one_run(global_spans)


def test_a_failing_tool_is_an_error_output(traced: Traced) -> None:
    async def run() -> Any:
        with MockLLMServer() as server:
            server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Atlantis"})]), Reply.text("No forecast."))
            return await weather_agent(server, streaming=False).run("Weather in Atlantis?")

    assert str(asyncio.run(run())) == "No forecast."
    events = traced.one()
    assert [e["role"] for e in events] == ["system", "user", "assistant", "tool", "assistant"]
    failed = events[3]
    assert failed["tool_call_id"] == "call_mock_1"
    assert failed["error"]["type"] == "tool_error"
    assert failed["content"] == "no forecast for Atlantis"
    assert traced.metas()[0]["summary"]["errorCount"] == 1


def test_an_agent_workflow_with_a_handoff_is_one_trace_named_after_its_root_agent(
    traced: Traced, global_spans: Any
) -> None:
    async def run() -> Any:
        with MockLLMServer() as server:
            server.script(
                Reply.tools([ToolCallSpec("handoff", {"to_agent": "weather", "reason": "a weather question"})]),
                Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]),
                Reply.text("Paris: 18°C, sunny."),
            )
            triage = FunctionAgent(
                name="triage", description="Routes questions.", llm=llm(server), can_handoff_to=["weather"], tools=[]
            )
            # no system prompt: a handoff to an agent with one puts it at the head of a history already shown, which
            # the fold then shows again (docs/frameworks.md, LlamaIndex limits)
            weather = weather_agent(
                server, "weather", description="Knows the weather.", streaming=False, system_prompt=None
            )
            workflow = AgentWorkflow(agents=[triage, weather], root_agent="triage")
            return await workflow.run(user_msg="Weather in Paris?")

    assert str(asyncio.run(run())) == "Paris: 18°C, sunny."
    events = traced.one()
    calls = [(e["tool_calls"][0]["function"]["name"], e["tool_calls"][0]["id"]) for e in events if e.get("tool_calls")]
    assert calls == [("handoff", "call_mock_1"), ("get_weather", "call_mock_2")]
    tools = [e for e in events if e["role"] == "tool"]
    assert [t["tool_call_id"] for t in tools] == ["call_mock_1", "call_mock_2"]
    assert tools[1]["content"] == "Paris: 18°C, sunny"
    assert events[-1] == {"role": "assistant", "content": "Paris: 18°C, sunny."}
    assert traced.metas()[0]["metadata"]["name"] == "triage"
    assert [s.name for s in spans_named(global_spans, "invoke_agent")] == ["invoke_agent triage"]


class TestContract(Contract):
    @pytest.fixture
    def framework(self) -> Framework:
        async def run(server: MockLLMServer) -> Any:
            return await weather_agent(server).run(WEATHER.question)

        return Framework(run, events_are(WEATHER_RUN), WEATHER.replies)

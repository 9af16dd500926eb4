"""Microsoft Agent Framework under spanfold.init(): the weather agent as an ``Agent`` on ``OpenAIChatCompletionClient``
against the embedded mock server, run and streamed, with Agent Framework's own instrumentation on (its default: its
``invoke_agent`` / ``execute_tool`` / ``chat`` spans are folded, spanfold adds no run or tool span of its own) and off
(spanfold makes them). Either way one trace named after the agent, every tool call paired with its run, each model
call one step, asserted event by event."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from agent_framework import Agent, WorkflowBuilder
from agent_framework.observability import disable_instrumentation, enable_instrumentation
from agent_framework.openai import OpenAIChatCompletionClient

from spanfold.testing import WEATHER, MockLLMServer, Reply, ToolCallSpec

from ..conftest import Traced, traced_into
from ..semconv.names_check import unlisted
from .contract import Contract, Framework, events_are
from .weather import ANSWER, WEATHER_RUN, convert_temperature, get_weather

STEPS = ["model", "tool", "tool", "model", "tool", "model"]


@pytest.fixture(params=["own_spans", "spanfolds"])
def telemetry(request: pytest.FixtureRequest) -> Iterator[str]:
    """Agent Framework's own instrumentation on (its default) or off."""
    if request.param == "spanfolds":
        disable_instrumentation()
    try:
        yield str(request.param)
    finally:
        enable_instrumentation(force=True)


def agent(server: MockLLMServer) -> Agent:
    client = OpenAIChatCompletionClient(model="weather-model", base_url=server.base_url, api_key="test")
    return Agent(
        client=client, name="weather_agent", instructions=WEATHER.system, tools=[get_weather, convert_temperature]
    )


def producers(global_spans: Any, prefix: str) -> set[str]:
    """Who made the spans whose name starts with ``prefix``: spanfold, or Agent Framework."""
    return {
        "spanfold" if s.instrumentation_scope.name.startswith("spanfold") else "agent_framework"
        for s in global_spans.get_finished_spans()
        if s.name.startswith(prefix)
    }


def assert_weather_run(traced: Traced, global_spans: Any, telemetry: str) -> None:
    assert traced.one() == WEATHER_RUN
    meta = traced.metas()[0]["metadata"]
    assert meta["name"] == "weather_agent" and meta["status"] == "complete"
    assert [s["kind"] for s in meta["steps"]] == STEPS
    calls = [s.get("call_id") for s in meta["steps"] if s["kind"] == "tool"]
    assert calls == ["call_mock_1", "call_mock_2", "call_mock_3"]
    expected = {"spanfold"} if telemetry == "spanfolds" else {"agent_framework"}
    assert producers(global_spans, "invoke_agent") == expected
    assert producers(global_spans, "execute_tool") == expected
    ours = [s for s in global_spans.get_finished_spans() if s.instrumentation_scope.name.startswith("spanfold")]
    assert not unlisted(ours)


def test_a_run_is_one_trace_named_after_its_agent(traced: Traced, global_spans: Any, telemetry: str) -> None:
    with MockLLMServer(WEATHER.replies) as server:
        result = asyncio.run(agent(server).run(WEATHER.question))
    assert result.text == ANSWER
    assert_weather_run(traced, global_spans, telemetry)


def test_a_streamed_run_is_the_same_trace(traced: Traced, global_spans: Any, telemetry: str) -> None:
    async def streamed(server: MockLLMServer) -> str:
        text = []
        async for update in agent(server).run(WEATHER.question, stream=True):
            text.append(update.text or "")
        return "".join(text)

    with MockLLMServer(WEATHER.replies) as server:
        assert asyncio.run(streamed(server)) == ANSWER
        assert all(r.body.get("stream") is True for r in server.requests)
    assert_weather_run(traced, global_spans, telemetry)


class TestContract(Contract):
    @pytest.fixture
    def framework(self, telemetry: str) -> Framework:
        """Its own ``invoke_agent`` span (its instrumentation on) nests in the application's run."""

        async def run(server: MockLLMServer) -> Any:
            return await agent(server).run(WEATHER.question)

        nested = ("invoke_agent weather_agent",) if telemetry == "own_spans" else ()
        return Framework(run, events_are(WEATHER_RUN), WEATHER.replies, nested)


def test_a_failing_tool_is_an_error_output(traced: Traced, telemetry: str) -> None:
    with MockLLMServer() as server:
        server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Atlantis"})]), Reply.text("No forecast."))
        asyncio.run(agent(server).run("Weather in Atlantis?"))
    events = traced.one()
    assert [e["role"] for e in events] == ["system", "user", "assistant", "tool", "assistant"]
    failed = events[3]
    assert failed["tool_call_id"] == "call_mock_1" and failed["error"]["type"] == "ValueError"
    assert traced.metas()[0]["summary"]["errorCount"] == 1


def test_with_content_capture_off_the_run_keeps_its_roles_tools_and_ids(
    traced_off: Traced, global_spans: Any, telemetry: str
) -> None:
    with MockLLMServer(WEATHER.replies) as server:
        asyncio.run(agent(server).run(WEATHER.question))
    events = traced_off.one()
    shape = [(e["role"], e.get("tool_call_id")) for e in events]
    assert shape == [(e["role"], e.get("tool_call_id")) for e in WEATHER_RUN]
    assert not any(e.get("content") for e in events if e["role"] == "tool")
    assert traced_off.metas()[0]["metadata"]["name"] == "weather_agent"


def test_redaction_applies_to_every_event(tmp_path: Any, _global_provider: Any, telemetry: str) -> None:
    with traced_into(tmp_path / "traces", redact=lambda text: text.replace("Paris", "[city]")) as traced:
        with MockLLMServer(WEATHER.replies) as server:
            asyncio.run(agent(server).run(WEATHER.question))
        events = traced.one()
    assert "Paris" not in json.dumps(events, ensure_ascii=False)
    assert events[3] == {"role": "tool", "content": "[city]: 18°C, sunny", "tool_call_id": "call_mock_1"}


def test_a_workflow_is_one_trace_named_after_it(traced: Traced, global_spans: Any, telemetry: str) -> None:
    """A writer and a reviewer agent in a two-step workflow: one run named after the workflow (Agent Framework's own
    ``workflow.run`` span names no operation: read as the workflow's run), each agent's call one step."""
    with MockLLMServer() as server:
        server.script(Reply.text("Draft: Paris is sunny."), Reply.text("Reviewed: Paris is sunny today."))
        client = OpenAIChatCompletionClient(model="weather-model", base_url=server.base_url, api_key="test")
        writer = Agent(client=client, name="writer", instructions="Write.")
        reviewer = Agent(client=client, name="reviewer", instructions="Review.")
        workflow = WorkflowBuilder(name="pipeline", start_executor=writer, output_from=[reviewer])
        result = asyncio.run(workflow.add_edge(writer, reviewer).build().run("Weather in Paris?"))
    assert str(result.get_outputs()[-1]) == "Reviewed: Paris is sunny today."
    question = {"role": "user", "content": "Weather in Paris?"}
    draft = {"role": "assistant", "content": "Draft: Paris is sunny."}
    assert traced.one() == [
        {"role": "system", "content": "Write."},
        question,
        draft,
        {"role": "system", "content": "Review."},
        question,
        draft,
        {"role": "assistant", "content": "Reviewed: Paris is sunny today."},
    ]
    meta = traced.metas()[0]["metadata"]
    assert meta["name"] == "pipeline" and [s["kind"] for s in meta["steps"]] == ["model", "model"]
    agents = sorted(s.name for s in global_spans.get_finished_spans() if s.name.startswith("invoke_agent"))
    assert agents == ["invoke_agent reviewer", "invoke_agent writer"]

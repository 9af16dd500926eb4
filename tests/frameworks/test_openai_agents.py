"""The OpenAI Agents SDK, traced by spanfold's tracing processor: the weather agent written with the SDK (function
tools, a tool that raises, a handoff) over the Responses API of the embedded mock server, run with ``Runner.run``,
``run_sync`` and ``run_streamed``. Each run is one OTel trace rooted in ``handle_conversation_turn {starting agent}``,
each agent an ``invoke_agent {agent}`` span under it; the model calls are the openai patch's spans under those (the
SDK's own response spans are not turned into model steps); the folded trace is asserted event by event. The SDK's
tracing stays on and its processors stay in place; with no API key its exporter skips the upload, so the tests stay
offline."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import agents
import openai
import pytest
from agents import Agent, OpenAIResponsesModel, Runner, function_tool
from agents.tracing import get_trace_provider
from opentelemetry.trace import StatusCode

from spanfold.instrumentation.frameworks import openai_agents
from spanfold.testing import MockLLMServer, MockRequest, Reply, ToolCallSpec, scenarios

from ..conftest import EXPECTED_SHAPE, shape, traced_into
from .helpers import folded, span_ids

QUESTION = "Weather in Paris and Tokyo, and Paris in Fahrenheit?"
INSTRUCTIONS = "You are a weather assistant. Use the tools, then answer in one sentence."
TRIAGE = "You route questions to the right agent."


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No key for the SDK's own exporter: it skips the upload (a warning in its log), never the network."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    yield


@function_tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    if city == "Atlantis":
        raise ValueError(f"no forecast for {city}")
    return scenarios.get_weather(city)


@function_tool
def convert_temperature(celsius: float, to: str) -> str:
    """Convert a temperature in degrees Celsius to another unit."""
    return scenarios.convert_temperature(celsius, to)


def weather_agent(server: MockLLMServer) -> Agent[Any]:
    client = openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    return Agent(
        name="Weather agent",
        instructions=INSTRUCTIONS,
        tools=[get_weather, convert_temperature],
        model=OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client),
    )


async def run(agent: Agent[Any], question: str, mode: str) -> Any:
    if mode == "run":
        return await Runner.run(agent, question)
    if mode == "run_streamed":
        result = Runner.run_streamed(agent, question)
        async for _ in result.stream_events():
            pass
        return result
    raise AssertionError(mode)


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def weather_events(system: str = INSTRUCTIONS, user: str = QUESTION) -> list[dict[str, Any]]:
    """The weather agent's flat trace (ids as the mock server numbers them)."""
    paris, tokyo = scenarios.get_weather("Paris"), scenarios.get_weather("Tokyo")
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": user},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                call("call_mock_1", "get_weather", {"city": "Paris"}),
                call("call_mock_2", "get_weather", {"city": "Tokyo"}),
            ],
        },
        {"role": "tool", "content": paris, "tool_call_id": "call_mock_1"},
        {"role": "tool", "content": tokyo, "tool_call_id": "call_mock_2"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("call_mock_3", "convert_temperature", {"celsius": 18, "to": "fahrenheit"})],
        },
        {"role": "tool", "content": "18°C is 64.4°F", "tool_call_id": "call_mock_3"},
        {
            "role": "assistant",
            "content": f"Here is the weather: {paris}; {tokyo}. In Fahrenheit: 18°C is 64.4°F.",
        },
    ]


def assert_one_tree(global_spans: Any, root_name: str) -> None:
    """Every span of the run in one OTel trace, under the root ``handle_conversation_turn`` span (not nested in
    another invocation), named after the starting agent; the model calls are the openai patch's ``chat`` spans (one
    per model call), the tool runs ``execute_tool`` spans."""
    spans = global_spans.get_finished_spans()
    assert len({s.context.trace_id for s in spans}) == 1
    (root,) = [s for s in spans if s.parent is None]
    assert root.name == root_name
    attrs = dict(root.attributes or {})
    assert attrs["gen_ai.agent.name"] == root_name.removeprefix("handle_conversation_turn ")
    assert attrs["gen_ai.operation.name"] == "handle_conversation_turn"
    assert attrs["gen_ai.invocation.is_nested"] is False
    for agent in (s for s in spans if s.name.startswith("invoke_agent ")):  # each agent of the turn, nested in it
        assert dict(agent.attributes or {})["gen_ai.invocation.is_nested"] is True
    by_id = {s.context.span_id: s for s in spans}
    for span in spans:
        top = span
        while top.parent is not None:
            top = by_id[top.parent.span_id]
        assert top is root


@pytest.mark.parametrize("mode", ["run", "run_sync", "run_streamed"])
async def test_weather_agent(traced: Any, server: MockLLMServer, global_spans: Any, mode: str) -> None:
    agent = weather_agent(server)
    if mode == "run_sync":  # its own event loop: in a worker thread, as an app without one would call it
        import asyncio

        result = await asyncio.to_thread(Runner.run_sync, agent, QUESTION)
    else:
        result = await run(agent, QUESTION, mode)
    events = traced.one()
    assert events == weather_events()
    assert result.final_output == events[-1]["content"]
    assert shape(events) == EXPECTED_SHAPE
    (meta,) = traced.metas()
    assert meta["metadata"]["name"] == "Weather agent"

    assert_one_tree(global_spans, "handle_conversation_turn Weather agent")
    names = sorted(s.name for s in global_spans.get_finished_spans())
    assert names == sorted(
        ["handle_conversation_turn Weather agent", "invoke_agent Weather agent"]
        + ["chat gpt-4o-mini"] * 3
        + ["execute_tool get_weather"] * 2
        + ["execute_tool convert_temperature"]
    )
    (trace,) = folded(global_spans)  # the tool results are the tool spans' (their own time), not the next inputs
    assert {e.metadata["span_id"] for e in trace.events if e.role == "tool"} == span_ids(global_spans, "execute_tool")
    tool = next(s for s in global_spans.get_finished_spans() if s.name == "execute_tool convert_temperature")
    assert dict(tool.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "convert_temperature",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.arguments": '{"celsius":18,"to":"fahrenheit"}',
        "gen_ai.tool.call.result": "18°C is 64.4°F",
        "input.value": '{"celsius":18,"to":"fahrenheit"}',
        "input.mime_type": "application/json",
        "output.value": "18°C is 64.4°F",
        "output.mime_type": "text/plain",
    }


async def test_tool_that_raises(traced: Any, server: MockLLMServer, global_spans: Any) -> None:
    server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Atlantis"})]), Reply.text("No forecast."))
    result = await Runner.run(weather_agent(server), "Weather in Atlantis?")
    assert result.final_output == "No forecast."
    told = next(i for i in server.requests[1].input_items if i.get("type") == "function_call_output")["output"]
    assert told == "An error occurred while running the tool. Please try again."  # the SDK's default error text
    # The SDK's own error record; it keeps the exception's text out of its traces by default.
    message = "Error running tool (non-fatal): Tool execution failed. Error details are redacted."
    assert traced.one() == [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": "Weather in Atlantis?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("call_mock_1", "get_weather", {"city": "Atlantis"})],
        },
        {
            "role": "tool",
            "content": message,
            "tool_call_id": "call_mock_1",
            "error": {"type": "tool_error", "message": message},
        },
        {"role": "assistant", "content": "No forecast."},
    ]
    (tool,) = [s for s in global_spans.get_finished_spans() if s.name == "execute_tool get_weather"]
    assert tool.status.status_code == StatusCode.ERROR
    assert dict(tool.attributes or {})["gen_ai.tool.call.result"] == told


def triage_then_weather(request: MockRequest) -> Reply:
    """The triage agent hands off to the weather agent, which runs the weather script."""
    tools = [t.get("name") for t in request.body.get("tools", [])]
    if "transfer_to_weather_agent" in tools:
        return Reply.tools([ToolCallSpec("transfer_to_weather_agent", {})])
    return scenarios.weather_agent(request)


@pytest.mark.parametrize("mode", ["run", "run_streamed"])
async def test_handoff(traced: Any, global_spans: Any, mode: str) -> None:
    with MockLLMServer(triage_then_weather) as server:
        weather = weather_agent(server)
        triage = Agent(name="Triage agent", instructions=TRIAGE, handoffs=[weather], model=weather.model)
        await run(triage, QUESTION, mode)
    events = traced.one()
    transfer = {"role": "tool", "content": json.dumps({"assistant": "Weather agent"}), "tool_call_id": "call_mock_1"}
    expected = weather_events(system=TRIAGE)
    for later in expected[2:]:  # the weather agent's calls come after the transfer call
        for c in later.get("tool_calls", []):
            c["id"] = f"call_mock_{int(c['id'].rsplit('_', 1)[1]) + 1}"
        if "tool_call_id" in later:
            later["tool_call_id"] = f"call_mock_{int(later['tool_call_id'].rsplit('_', 1)[1]) + 1}"
    assert events == [
        *expected[:2],
        {"role": "assistant", "content": None, "tool_calls": [call("call_mock_1", "transfer_to_weather_agent", {})]},
        # The handoff's tool span (its time; its text from the weather agent's first call), then that call's
        # instructions.
        transfer,
        {"role": "system", "content": INSTRUCTIONS},
        *expected[2:],
    ]
    (meta,) = traced.metas()
    assert meta["metadata"]["name"] == "Triage agent"
    assert_one_tree(global_spans, "handle_conversation_turn Triage agent")
    spans = global_spans.get_finished_spans()
    root = next(s for s in spans if s.parent is None)
    triage, child = (next(s for s in spans if s.name == f"invoke_agent {n} agent") for n in ("Triage", "Weather"))
    assert triage.parent is not None and triage.parent.span_id == root.context.span_id
    assert child.parent is not None and child.parent.span_id == root.context.span_id
    # the handoff: the tool the model called, run under the agent that hands off
    (handoff,) = [s for s in spans if s.name == "execute_tool transfer_to_weather_agent"]
    assert handoff.parent is not None and handoff.parent.span_id == triage.context.span_id
    assert dict(handoff.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "transfer_to_weather_agent",
        "gen_ai.tool.type": "function",
        "openai_agents.handoff.from_agent": "Triage agent",
        "openai_agents.handoff.to_agent": "Weather agent",
    }
    (trace,) = folded(global_spans)
    (transferred,) = [e for e in trace.events if e.role == "tool" and e.tool_call_id == "call_mock_1"]
    assert transferred.metadata["span_id"] == format(handoff.context.span_id, "016x")
    # one run: the same SDK trace id on both (the fold's one thread); no conversation id, which the run does not name
    run_ids = {dict(s.attributes or {})["openai_agents.trace.id"] for s in (root, child)}
    assert len(run_ids) == 1 and run_ids.pop().startswith("trace_")
    assert not any("gen_ai.conversation.id" in (s.attributes or {}) for s in spans)


async def test_content_capture_off(tmp_path: Path, server: MockLLMServer, global_spans: Any) -> None:
    with traced_into(tmp_path / "traces-off", capture_content=False) as traced:
        await Runner.run(weather_agent(server), QUESTION)
        events = traced.one()
    assert shape(events) == EXPECTED_SHAPE
    assert all(e["content"] is None for e in events if e["role"] in ("tool", "user"))
    for span in global_spans.get_finished_spans():
        attrs = json.dumps(dict(span.attributes or {}), ensure_ascii=False)
        assert "Paris: 18" not in attrs and "gen_ai.tool.call.arguments" not in attrs


async def test_one_trace_per_run(traced: Any, server: MockLLMServer) -> None:
    agent = weather_agent(server)
    await Runner.run(agent, QUESTION)
    await Runner.run(agent, QUESTION)
    runs = traced.traces()
    assert len(runs) == 2 and all(shape(r) == EXPECTED_SHAPE for r in runs)
    assert [m["metadata"]["name"] for m in traced.metas()] == ["Weather agent"] * 2


async def test_sdk_processors_kept_and_offline(traced: Any, server: MockLLMServer) -> None:
    """spanfold's processor is added beside the SDK's (its upload to OpenAI stays the user's choice), once, and with
    no key that upload is skipped: nothing leaves the machine."""
    processors = get_trace_provider()._multi_processor._processors  # type: ignore[attr-defined]
    ours = [p for p in processors if isinstance(p, openai_agents.AgentsTracing)]
    assert ours == [openai_agents.processor()] and isinstance(ours[0], agents.tracing.TracingProcessor)
    assert any(type(p).__name__ == "BatchTraceProcessor" for p in processors)
    from agents.tracing.processors import default_exporter

    assert default_exporter().api_key is None  # the SDK's exporter skips the upload


async def test_uninstrumented_processor_is_inert(traced: Any, server: MockLLMServer, global_spans: Any) -> None:
    openai_agents.OpenAIAgentsInstrumentor().uninstrument()
    try:
        await Runner.run(weather_agent(server), QUESTION)
    finally:
        openai_agents.OpenAIAgentsInstrumentor().instrument(runtime=None)
    assert not [s for s in global_spans.get_finished_spans() if not s.name.startswith("chat ")]


async def test_guardrail_event_and_agent_error(traced: Any, server: MockLLMServer, global_spans: Any) -> None:
    """A guardrail is an event on the agent's span; an error the SDK records on the agent (max turns) is the agent
    span's error, and the run's exception reaches the caller unchanged."""

    @agents.input_guardrail
    async def polite(ctx: Any, agent: Any, question: Any) -> agents.GuardrailFunctionOutput:
        return agents.GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)

    agent = weather_agent(server).clone(input_guardrails=[polite])
    with pytest.raises(agents.MaxTurnsExceeded):
        await Runner.run(agent, QUESTION, max_turns=1)
    spans = global_spans.get_finished_spans()
    root = next(s for s in spans if s.parent is None)
    (running,) = [s for s in spans if s.name == "invoke_agent Weather agent"]
    (event,) = [e for e in running.events if e.name == "openai_agents.guardrail"]
    assert dict(event.attributes or {}) == {
        "openai_agents.guardrail.name": "polite",
        "openai_agents.guardrail.triggered": False,
    }
    for failed in (running, root):  # the agent's error, and the turn's: the run stopped there
        assert failed.status.status_code == StatusCode.ERROR
        assert dict(failed.attributes or {})["error.type"] == "agent_error"
        assert failed.status.description is not None and "Max turns exceeded" in failed.status.description
    events = traced.one()
    assert [e["role"] for e in events] == ["system", "user", "assistant", "tool", "tool"]


async def test_mcp_tools_of_an_agent_are_one_step_each(traced: Any, server: MockLLMServer, global_spans: Any) -> None:
    """An agent whose tools are an MCP server's (the SDK's ``MCPServerStdio``): the SDK's function span is the MCP
    call's span too (it gets the MCP attributes; no second span), and the trace is the weather agent's."""
    import sys

    from agents.mcp import MCPServerStdio

    from .test_mcp import SERVER_SCRIPT, SRC

    params = {"command": sys.executable, "args": [str(SERVER_SCRIPT)], "env": {"PYTHONPATH": str(SRC)}}
    async with MCPServerStdio(params=params) as mcp_server:  # type: ignore[arg-type]
        agent = weather_agent(server).clone(tools=[], mcp_servers=[mcp_server])
        await Runner.run(agent, QUESTION)
    assert traced.one() == weather_events()
    spans = global_spans.get_finished_spans()
    tools = [s for s in spans if s.name == "execute_tool get_weather"]
    assert len(tools) == 2  # one span per call: the SDK's function span, with the MCP call's attributes
    assert all(dict(s.attributes or {})["mcp.method.name"] == "tools/call" for s in tools)
    assert not [s for s in spans if s.name.startswith("tools/call ")]


def test_traces_never_finished_are_bounded(traced: Any, global_spans: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import context as otel_context

    from spanfold import counters
    from spanfold.instrumentation.frameworks import openai_agents_processor

    monkeypatch.setattr(openai_agents_processor, "MAX_OPEN_RUNS", 2)
    # Traces started and never finished in order leave the context they attached (contextvars reset in order only):
    # the test puts this thread's context back when it is done.
    before = otel_context.attach(otel_context.get_current())
    try:
        started = [agents.trace(f"workflow {n}") for n in range(3)]
        for sdk_trace in started:
            sdk_trace.start()
        closed = [s.name for s in global_spans.get_finished_spans()]
        assert closed == ["handle_conversation_turn"]  # the oldest (no agent ran in it), closed when the third opened
        assert counters.snapshot().get("openai_agents.runs_never_finished") == 1
        for sdk_trace in started:
            sdk_trace.finish()
        assert len(global_spans.get_finished_spans()) == 3
    finally:
        otel_context.detach(before)

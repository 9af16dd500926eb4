"""The MCP client instrumentor: a real stdio MCP server (tests/frameworks/mcp_weather_server.py, started by the SDK's
``stdio_client``), driven by the weather agent written with the openai SDK against the embedded mock server. The folded
trace is asserted event by event: tool results come from the ``tools/call {tool}`` spans (the MCP client spans, GenAI
tool runs too: their time, their errors), paired
with the model's calls by the id the agent passes, else by name and arguments."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import openai
import pytest
from opentelemetry.trace import SpanKind, StatusCode

import spanfold
from spanfold.testing import WEATHER, MockLLMServer, Reply, ToolCallSpec, scenarios

from ..conftest import EXPECTED_SHAPE, shape, traced_into
from .helpers import folded, span_ids

mcp = pytest.importorskip("mcp")  # the SDK matrix runs this module, and only one of its venvs installs mcp (1.x)

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

#: mcp 2.x emits spans of its own and keeps the negotiated protocol version on the session; 1.x does neither.
MCP2 = int(mcp.__version__.split(".")[0]) >= 2 if hasattr(mcp, "__version__") else hasattr(mcp, "MCPError")
MCP_ERROR: type[Exception] = getattr(mcp, "MCPError", None) or mcp.McpError  # 1.x: McpError

SERVER_SCRIPT = Path(__file__).with_name("mcp_weather_server.py")
SRC = Path(spanfold.__file__).resolve().parents[1]
MODEL = "gpt-4o-mini"


@asynccontextmanager
async def weather_session() -> AsyncIterator[ClientSession]:
    """A session with the stdio weather server, its stderr kept out of the test output."""
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER_SCRIPT)], env={"PYTHONPATH": str(SRC)})
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as streams, ClientSession(*streams) as session:
            await session.initialize()
            yield session


async def mcp_tools(session: ClientSession) -> list[dict[str, Any]]:
    listed = await session.list_tools()
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": getattr(t, "input_schema", None) or t.inputSchema,
            },
        }  # mcp 1.x: inputSchema
        for t in listed.tools
    ]


def client_spans(global_spans: Any) -> list[Any]:
    """spanfold's MCP client spans (``tools/call {tool}``), not a server's of the same name (an in-process server)."""
    return [
        s
        for s in global_spans.get_finished_spans()
        if s.name.startswith("tools/call ") and s.instrumentation_scope.name.startswith("spanfold")
    ]


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def agent_loop(
    session: ClientSession, server: MockLLMServer, *, pass_ids: bool = True, question: str = WEATHER.question
) -> list[dict[str, Any]]:
    """The weather agent: model calls through the openai SDK, tool calls through the MCP session; returns the
    conversation it built (the oracle)."""
    client = openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    tools = await mcp_tools(session)
    history: list[dict[str, Any]] = [
        {"role": "system", "content": WEATHER.system},
        {"role": "user", "content": question},
    ]
    for _ in range(6):
        response = await client.chat.completions.create(model=MODEL, messages=history, tools=tools)  # type: ignore[arg-type]
        message = response.choices[0].message
        history.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return history
        for call in message.tool_calls:
            ids = {"tool_call_id": call.id} if pass_ids else {}
            result = await session.call_tool(call.function.name, json.loads(call.function.arguments), **ids)
            history.append({"role": "tool", "tool_call_id": call.id, "content": text_of(result)})
    raise AssertionError("the agent did not finish")


def oracle(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for msg in history:
        if msg["role"] == "tool":
            events.append({"role": "tool", "content": msg["content"], "tool_call_id": msg["tool_call_id"]})
            continue
        event: dict[str, Any] = {"role": msg["role"], "content": msg.get("content")}
        if msg.get("tool_calls"):
            event["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])},
                }
                for c in msg["tool_calls"]
            ]
        events.append(event)
    return events


@pytest.mark.parametrize("pass_ids", [True, False], ids=["paired-by-id", "paired-by-name-and-arguments"])
async def test_weather_agent_over_stdio(traced: Any, server: MockLLMServer, global_spans: Any, pass_ids: bool) -> None:
    async with weather_session() as session:
        with spanfold.agent("mcp-weather"):
            history = await agent_loop(session, server, pass_ids=pass_ids)
    events = traced.one()
    assert events == oracle(history)
    assert shape(events) == EXPECTED_SHAPE
    assert events[3] == {
        "role": "tool",
        "content": scenarios.get_weather("Paris"),
        "tool_call_id": events[2]["tool_calls"][0]["id"],
    }
    assert traced.metas()[0]["metadata"]["name"] == "mcp-weather"

    # Each tool result is the MCP span's (its own time), never the next model call's input.
    (trace,) = folded(global_spans)
    tool_events = [e for e in trace.events if e.role == "tool"]
    assert {e.metadata["span_id"] for e in tool_events} == span_ids(global_spans, "tools/call ")
    tool_spans = client_spans(global_spans)
    assert [s.name for s in tool_spans] == ["tools/call get_weather"] * 2 + ["tools/call convert_temperature"]
    assert {s.kind for s in tool_spans} == {SpanKind.CLIENT}
    paris = dict(tool_spans[0].attributes or {})
    expected = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.type": "function",
        "mcp.method.name": "tools/call",
        "gen_ai.tool.call.arguments": '{"city":"Paris"}',
        "gen_ai.tool.call.result": scenarios.get_weather("Paris"),
        "input.value": '{"city":"Paris"}',
        "input.mime_type": "application/json",
        "output.value": scenarios.get_weather("Paris"),
        "output.mime_type": "text/plain",
    }
    if MCP2:
        expected["mcp.protocol.version"] = paris["mcp.protocol.version"]
    # The model's call id on each span, passed or not: inside the agent's trace the call with the run's exact name
    # and arguments names it, as the source does for a zero-code run.
    expected["gen_ai.tool.call.id"] = events[2]["tool_calls"][0]["id"]
    assert paris == expected
    calls = [c["id"] for e in events for c in e.get("tool_calls") or []]
    assert [dict(s.attributes or {}).get("gen_ai.tool.call.id") for s in tool_spans] == calls
    if not MCP2:
        return
    # The SDK's own client span (2.x) nests under ours and is no tool step.
    sends = [s for s in global_spans.get_finished_spans() if s.name == "MCP send tools/call get_weather"]
    assert len(sends) == 2
    assert {s.parent.span_id for s in sends if s.parent} == {s.context.span_id for s in tool_spans[:2]}


async def test_zero_code_run_without_ids_puts_the_matched_call_id_on_each_span(
    traced: Any, server: MockLLMServer, global_spans: Any
) -> None:
    """``call_tool(name, args)`` with no ``tool_call_id=`` and no agent span: the source pairs each run with the
    model's call by name and arguments, and that call's id goes on the span (a backend can pair it), as the id the
    agent would have passed."""
    async with weather_session() as session:
        history = await agent_loop(session, server, pass_ids=False)
    events = traced.one()
    assert events == oracle(history)
    calls = [c for e in events if e.get("tool_calls") for c in e["tool_calls"]]
    tool_spans = client_spans(global_spans)
    assert [dict(s.attributes or {}).get("gen_ai.tool.call.id") for s in tool_spans] == [c["id"] for c in calls]


async def test_a_run_matching_only_by_name_gets_no_call_id(
    traced: Any, server: MockLLMServer, global_spans: Any
) -> None:
    """A run whose arguments are not the model's (the agent changed them) joins the run by name, but the span is not
    given an id on that guess."""
    async with weather_session() as session:
        client = openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        history: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
        server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]))
        await client.chat.completions.create(model=MODEL, messages=history, tools=await mcp_tools(session))  # type: ignore[arg-type]
        await session.call_tool("get_weather", {"city": "Paris, France"})
    (span,) = client_spans(global_spans)
    assert "gen_ai.tool.call.id" not in dict(span.attributes or {})


async def test_is_error_result_and_exception(traced: Any, server: MockLLMServer, global_spans: Any) -> None:
    server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Atlantis"})]), Reply.text("No forecast."))
    async with weather_session() as session:
        with spanfold.agent("mcp-weather"):
            history = await agent_loop(session, server, question="Weather in Atlantis?")
        # A call that raises (the client's read timeout): recorded, raised unchanged, the session still usable.
        with spanfold.agent("mcp-timeout"), pytest.raises(MCP_ERROR, match=r"(?i)timed out") as raised:
            await session.call_tool(
                "slow", {"seconds": 3}, read_timeout_seconds=0.2 if MCP2 else timedelta(seconds=0.2)
            )
        assert type(raised.value) is MCP_ERROR
    error_text = "Error executing tool get_weather: no forecast for Atlantis"
    assert history[3]["content"] == error_text
    first, second = traced.traces()
    call_id = first[2]["tool_calls"][0]["id"]
    assert first == [
        {"role": "system", "content": WEATHER.system},
        {"role": "user", "content": "Weather in Atlantis?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Atlantis"}},
                }
            ],
        },
        {
            "role": "tool",
            "content": error_text,
            "tool_call_id": call_id,
            "error": {"type": "tool_error", "message": error_text},
        },
        {"role": "assistant", "content": "No forecast."},
    ]
    timeout = str(raised.value)  # 1.x: "Timed out while waiting for response to ClientRequest. Waited 0.2 seconds."
    assert timeout == "Request 'tools/call' timed out" or not MCP2
    assert second == [
        {
            "role": "tool",
            "content": timeout,
            "error": {"type": f"{MCP_ERROR.__module__}.{MCP_ERROR.__qualname__}", "message": timeout},
        }
    ]
    spans = {s.name: s for s in client_spans(global_spans)}
    assert spans["tools/call get_weather"].status.status_code == StatusCode.ERROR
    assert spans["tools/call slow"].status.status_code == StatusCode.ERROR
    assert [e.name for e in spans["tools/call slow"].events] == ["exception"]


async def test_content_capture_off(tmp_path: Path, server: MockLLMServer, global_spans: Any) -> None:
    async with weather_session() as session:
        with traced_into(tmp_path / "traces-off", capture_content=False) as traced:
            with spanfold.agent("mcp-weather"):
                await agent_loop(session, server)
            events = traced.one()
    assert shape(events) == EXPECTED_SHAPE
    assert all(e["content"] is None for e in events if e["role"] == "tool")
    for span in global_spans.get_finished_spans():
        attrs = dict(span.attributes or {})
        assert "gen_ai.tool.call.arguments" not in attrs and "gen_ai.tool.call.result" not in attrs
        assert "Paris: 18" not in json.dumps(attrs, ensure_ascii=False)


async def test_one_trace_per_run(traced: Any, server: MockLLMServer) -> None:
    async with weather_session() as session:
        for name in ("first", "second"):
            with spanfold.agent(name):
                await agent_loop(session, server)
    runs = traced.traces()
    assert len(runs) == 2 and all(shape(run) == EXPECTED_SHAPE for run in runs)
    assert [m["metadata"]["name"] for m in traced.metas()] == ["first", "second"]


@pytest.mark.skipif(not MCP2, reason="mcp 1.x has no in-process Client and emits no spans of its own")
async def test_in_process_server_spans_make_one_tool_step(
    traced: Any, server: MockLLMServer, global_spans: Any
) -> None:
    """An in-process server emits its own ``tools/call`` span (execute_tool, no arguments or result) under ours:
    the trace still has one tool step per call."""
    from mcp.client import Client

    from .mcp_weather_server import server as weather_server

    async with Client(weather_server) as client:
        with spanfold.agent("mcp-weather"):
            history = await agent_loop(client.session, server)
    servers = [s for s in global_spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert [s.name for s in servers].count("tools/call get_weather") == 2
    assert [s.name for s in client_spans(global_spans)].count("tools/call get_weather") == 2
    assert traced.one() == oracle(history)

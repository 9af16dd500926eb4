"""The MCP client as the MCP conventions describe it: a ``tools/call {tool}`` client span; no second span where
spanfold already traces the tool's run (the MCP attributes go on that span); and the call's trace context sent in
the request's ``params._meta``, so the server's spans join the client's trace (mcp 2.x sends it itself, spanfold adds
it for mcp 1.x). Real stdio servers (tests/frameworks/mcp_weather_server.py, mcp_trace_server.py) and the SDK's
in-process client."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

import spanfold
from spanfold.instrumentation.frameworks import mcp as mcp_instrumentation
from spanfold.testing import scenarios

from ..semconv.names_check import unlisted
from .test_mcp import MCP2, SRC, text_of, weather_session

mcp = pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

TRACE_SERVER = Path(__file__).with_name("mcp_trace_server.py")


@asynccontextmanager
async def trace_session() -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=[str(TRACE_SERVER)], env={"PYTHONPATH": str(SRC)})
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as streams, ClientSession(*streams) as session:
            await session.initialize()
            yield session


def named(global_spans: Any, name: str) -> list[Any]:
    return [s for s in global_spans.get_finished_spans() if s.name == name]


async def test_a_call_inside_the_tool_s_own_span_makes_no_second_span(traced: Any, global_spans: Any) -> None:
    @spanfold.tool
    async def get_weather(city: str) -> str:
        async with weather_session() as session:
            return text_of(await session.call_tool("get_weather", {"city": city}))

    with spanfold.agent("weather"):
        assert await get_weather("Paris") == scenarios.get_weather("Paris")
    traced.one()
    (tool,) = named(global_spans, "execute_tool get_weather")
    assert not named(global_spans, "tools/call get_weather")
    attrs = dict(tool.attributes or {})
    assert attrs["mcp.method.name"] == "tools/call"
    assert attrs["gen_ai.tool.call.result"] == scenarios.get_weather("Paris")  # the tool's own span records it
    if MCP2:
        assert attrs["mcp.protocol.version"]


async def test_an_error_result_fails_the_enclosing_tool_span(traced: Any, global_spans: Any) -> None:
    @spanfold.tool
    async def get_weather(city: str) -> str:
        async with weather_session() as session:
            return text_of(await session.call_tool("get_weather", {"city": city}))

    with spanfold.agent("weather"):
        text = await get_weather("Atlantis")
    assert "no forecast for Atlantis" in text
    (tool,) = named(global_spans, "execute_tool get_weather")
    assert tool.status.status_code == StatusCode.ERROR
    assert dict(tool.attributes or {})["error.type"] == "tool_error"


async def test_a_dispatcher_of_another_name_gets_the_client_span_under_it(traced: Any, global_spans: Any) -> None:
    @spanfold.tool(name="run_mcp_tool")
    async def run(name: str, arguments: dict[str, Any]) -> str:
        async with weather_session() as session:
            return text_of(await session.call_tool(name, arguments))

    with spanfold.agent("weather"):
        await run("get_weather", {"city": "Tokyo"})
    (outer,) = named(global_spans, "execute_tool run_mcp_tool")
    (client,) = named(global_spans, "tools/call get_weather")
    assert client.kind == SpanKind.CLIENT
    assert client.parent is not None and client.parent.span_id == outer.context.span_id
    assert dict(client.attributes or {})["gen_ai.operation.name"] == "execute_tool"
    assert unlisted(global_spans.get_finished_spans()) == set()  # every name it writes is in the table


async def test_the_server_receives_the_call_s_trace_context(traced: Any, global_spans: Any) -> None:
    async with trace_session() as session:
        with spanfold.agent("ctx"):
            result = await session.call_tool("traceparent", {})
    received = text_of(result)
    version, trace_id, parent_id, _flags = received.split("-")
    (client,) = named(global_spans, "tools/call traceparent")
    assert version == "00" and trace_id == format(client.context.trace_id, "032x")
    # the client span itself (mcp 1.x: spanfold sent it), or the SDK's own send span under it (mcp 2.x sends it)
    under = {
        format(s.context.span_id, "016x")
        for s in global_spans.get_finished_spans()
        if s.parent and s.parent.span_id == client.context.span_id
    }
    assert parent_id == format(client.context.span_id, "016x") or (MCP2 and parent_id in under)


@pytest.mark.skipif(not MCP2, reason="mcp 1.x has no in-process Client and no server spans")
async def test_an_in_process_server_s_span_joins_the_client_s_trace(traced: Any, global_spans: Any) -> None:
    from mcp.client import Client

    from .mcp_weather_server import server as weather_server

    async with Client(weather_server) as client:
        with spanfold.agent("weather"):
            await client.session.call_tool("get_weather", {"city": "Paris"})
    spans = global_spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}
    (ours,) = [s for s in spans if s.name == "tools/call get_weather" and s.kind == SpanKind.CLIENT]
    (theirs,) = [s for s in spans if s.name == "tools/call get_weather" and s.kind == SpanKind.SERVER]
    assert theirs.context.trace_id == ours.context.trace_id
    up = theirs
    while up.parent is not None and up.context.span_id != ours.context.span_id:
        up = by_id[up.parent.span_id]
    assert up is ours  # the server span is under the client span


async def test_meta_gets_the_context_where_the_sdk_sends_none(
    traced: Any, global_spans: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mcp 1.x path (the SDK sends no context): the caller's ``meta`` keys kept, ``traceparent`` added."""
    monkeypatch.setattr(mcp_instrumentation, "_sdk_propagates", lambda: False)

    async def call_tool(name: str, arguments: Any = None, *, meta: dict[str, Any] | None = None) -> None:
        return None

    span = trace.get_tracer("test").start_span("tools/call x")
    try:
        kwargs = mcp_instrumentation.with_trace_context(call_tool, {"meta": {"progressToken": 7}}, span)
    finally:
        span.end()
    assert kwargs["meta"]["progressToken"] == 7
    assert kwargs["meta"]["traceparent"].split("-")[2] == format(span.get_span_context().span_id, "016x")
    monkeypatch.setattr(mcp_instrumentation, "_sdk_propagates", lambda: True)
    assert mcp_instrumentation.with_trace_context(call_tool, {}, span) == {}

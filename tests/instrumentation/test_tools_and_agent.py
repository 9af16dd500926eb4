"""``@spanfold.tool`` and ``spanfold.agent`` spans."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode

import spanfold
from spanfold.content import runtime


def _attrs(span: Any) -> dict[str, Any]:
    """The span's attributes but the stitching marker (whether a zero-code conversation is active depends on the
    tests before; tests/e2e/test_source_stitching.py checks it)."""
    return {k: v for k, v in (span.attributes or {}).items() if k != "spanfold.stitched"}


def test_tool_bare_decorator(global_spans: Any) -> None:
    @spanfold.tool
    def get_weather(city: str, unit: str = "celsius") -> dict[str, Any]:
        """Current weather for a city.

        Long description that is not recorded.
        """
        return {"city": city, "temp": 21}

    assert get_weather("Paris") == {"city": "Paris", "temp": 21}
    assert get_weather.__name__ == "get_weather"
    (span,) = global_spans.get_finished_spans()
    assert span.name == "execute_tool get_weather"
    assert span.kind == SpanKind.INTERNAL
    assert _attrs(span) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.type": "function",
        "input.value": '{"city":"Paris"}',
        "input.mime_type": "application/json",
        "output.value": '{"city":"Paris","temp":21}',
        "output.mime_type": "application/json",
        "gen_ai.tool.description": "Current weather for a city.",
        "gen_ai.tool.call.arguments": '{"city":"Paris"}',
        "gen_ai.tool.call.result": '{"city":"Paris","temp":21}',
    }


def test_tool_with_name_and_call_id(global_spans: Any) -> None:
    @spanfold.tool(name="search")
    def find(query: str) -> str:
        return f"results for {query}"

    assert find(query="otel", tool_call_id="call_7") == "results for otel"  # not passed to the function
    (span,) = global_spans.get_finished_spans()
    attrs = _attrs(span)
    assert span.name == "execute_tool search"
    assert attrs["gen_ai.tool.call.id"] == "call_7"
    assert attrs["gen_ai.tool.call.arguments"] == '{"query":"otel"}'
    assert attrs["gen_ai.tool.call.result"] == "results for otel"


def test_tool_that_declares_call_id_receives_it(global_spans: Any) -> None:
    @spanfold.tool
    def echo(x: int, tool_call_id: str | None = None) -> str:
        return f"{x}:{tool_call_id}"

    assert echo(1, tool_call_id="c1") == "1:c1"


def test_tool_error_propagates_and_is_recorded(global_spans: Any) -> None:
    @spanfold.tool
    def broken(x: int) -> int:
        raise ValueError(f"bad {x}")

    with pytest.raises(ValueError, match="bad 3"):
        broken(3)
    (span,) = global_spans.get_finished_spans()
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == "ValueError: bad 3"
    assert _attrs(span)["error.type"] == "ValueError"
    assert "gen_ai.tool.call.result" not in _attrs(span)


async def test_async_tool(global_spans: Any) -> None:
    @spanfold.tool
    async def slow(n: int) -> list[int]:
        await asyncio.sleep(0)
        return list(range(n))

    assert await slow(3) == [0, 1, 2]
    (span,) = global_spans.get_finished_spans()
    assert _attrs(span)["gen_ai.tool.call.result"] == "[0,1,2]"


def test_tool_content_capture_off(global_spans: Any) -> None:
    @spanfold.tool
    def secret(password: str) -> str:
        return "ok " + password

    runtime.activate(runtime.Runtime(capture_content=False))
    try:
        secret("hunter2")
    finally:
        runtime.activate(None)
    (span,) = global_spans.get_finished_spans()
    assert "hunter2" not in json.dumps(_attrs(span))
    assert _attrs(span)["gen_ai.tool.name"] == "secret"


def test_method_tool_drops_self(global_spans: Any) -> None:
    class Tools:
        @spanfold.tool
        def add(self, a: int, b: int) -> int:
            return a + b

    assert Tools().add(1, 2) == 3
    (span,) = global_spans.get_finished_spans()
    assert _attrs(span)["gen_ai.tool.call.arguments"] == '{"a":1,"b":2}'


def test_agent_context_manager_parents_everything(global_spans: Any) -> None:
    @spanfold.tool
    def step() -> str:
        return "done"

    with spanfold.agent("bot", conversation_id="conv-1"):
        step()
        step()
    tool1, tool2, root = global_spans.get_finished_spans()
    assert root.name == "invoke_agent bot"
    assert _attrs(root) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "bot",
        "gen_ai.conversation.id": "conv-1",
        "gen_ai.invocation.is_nested": False,
    }
    assert root.parent is None
    assert tool1.parent.span_id == root.context.span_id
    assert tool2.context.trace_id == root.context.trace_id


def test_agent_error(global_spans: Any) -> None:
    with pytest.raises(KeyError), spanfold.agent("bot"):
        raise KeyError("x")
    (root,) = global_spans.get_finished_spans()
    assert root.status.status_code == StatusCode.ERROR
    assert _attrs(root)["error.type"] == "KeyError"


async def test_agent_async_and_decorator_concurrent(global_spans: Any) -> None:
    @spanfold.tool
    async def work(i: int) -> int:
        await asyncio.sleep(0.001)
        return i

    @spanfold.agent("worker")
    async def run(i: int) -> int:
        await work(i)
        return await work(i + 100)

    shared = spanfold.agent("shared")

    async def run_shared(i: int) -> None:
        async with shared:
            await work(i)

    await asyncio.gather(*(run(i) for i in range(10)), *(run_shared(i) for i in range(5)))
    spans = global_spans.get_finished_spans()
    roots = {s.context.trace_id: s for s in spans if s.parent is None}
    assert sorted(s.name for s in roots.values()) == ["invoke_agent shared"] * 5 + ["invoke_agent worker"] * 10
    for span in spans:
        if span.parent is not None:
            assert span.parent.span_id == roots[span.context.trace_id].context.span_id


def test_agent_sync_decorator(global_spans: Any) -> None:
    @spanfold.agent("deco")
    def run() -> int:
        return 5

    assert run() == 5
    assert run() == 5
    assert [s.name for s in global_spans.get_finished_spans()] == ["invoke_agent deco"] * 2


async def test_generator_tools_are_not_traced_and_keep_their_semantics(global_spans: Any) -> None:
    @spanfold.tool
    def search(query: str) -> Any:
        yield f"{query}: first"
        received = yield f"{query}: second"
        yield f"got {received}"

    @spanfold.tool(name="stream_rows")
    async def rows(n: int) -> Any:
        for i in range(n):
            yield i

    gen = search("otel", tool_call_id="call_9")  # the id is taken off, as for any tool
    assert next(gen) == "otel: first"
    assert next(gen) == "otel: second"
    assert gen.send("x") == "got x"
    assert [i async for i in rows(3, tool_call_id="call_10")] == [0, 1, 2]
    assert global_spans.get_finished_spans() == ()  # a span around the call would hide the result from the fold


def test_agent_objects_leave_no_context_state_behind() -> None:
    """One ContextVar for every agent: running many decorated agents does not grow the context."""
    import contextvars

    @spanfold.agent("bot")
    def run() -> int:
        return 1

    before = len(contextvars.copy_context())
    assert sum(run() for _ in range(200)) == 200
    assert len(contextvars.copy_context()) <= before + 1

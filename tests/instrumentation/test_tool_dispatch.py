"""``@spanfold.tool(dispatch=True)``: one function that runs many tools by name. Each call is an ``execute_tool`` span
named after the tool it ran, with that tool's arguments and the model's call id, so the fold pairs it with the
model's call: with ``spanfold.agent`` one output per call (no nameless duplicates), without it one trace for the run
(no stray one-event traces). The real openai and anthropic SDKs over real HTTP to the mock server's weather agent."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import openai
import pytest

import spanfold
from spanfold.testing import WEATHER, MockLLMServer, scenarios

from ..conftest import EXPECTED_SHAPE, shape

MODEL = "gpt-4o-mini"


@spanfold.tool(dispatch=True)
def run_tool(name: str, arguments: Any) -> str:
    """Runs any weather tool by name (this is the dispatcher's doc, not a tool's)."""
    return scenarios.run_weather_tool(name, json.loads(arguments) if isinstance(arguments, str) else arguments)


@spanfold.tool(dispatch=True)
async def arun_tool(name: str, arguments: Any, attempt: int = 1) -> str:
    await asyncio.sleep(0)
    return scenarios.run_weather_tool(name, arguments)


@spanfold.tool(dispatch=True)
def run_call(call: Any) -> str:
    """Runs the tool call the SDK returned."""
    if isinstance(call, dict):  # Bedrock's block
        return scenarios.run_weather_tool(call["toolUse"]["name"], call["toolUse"]["input"])
    if getattr(call, "function", None) is not None:
        return scenarios.run_weather_tool(call.function.name, json.loads(call.function.arguments))
    return scenarios.run_weather_tool(call.name, call.input)


def tool_spans(global_spans: Any) -> list[Any]:
    return [s for s in global_spans.get_finished_spans() if s.name.startswith("execute_tool ")]


def chat_loop(server: MockLLMServer, how: str) -> list[dict[str, Any]]:
    """The weather agent on the openai SDK, its tools run through a dispatcher: by name and JSON arguments with the
    call id (``by_name``), by name and parsed arguments without it (``by_name_no_id``), or handed the call itself
    (``by_call``). Returns the history it built (the oracle)."""
    client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    history: list[dict[str, Any]] = [
        {"role": "system", "content": WEATHER.system},
        {"role": "user", "content": WEATHER.question},
    ]
    for _ in range(6):
        message = (
            client.chat.completions.create(model=MODEL, messages=history, tools=scenarios.WEATHER_TOOLS_OPENAI)  # type: ignore[arg-type]
            .choices[0]
            .message
        )
        history.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return history
        for call in message.tool_calls:
            if how == "by_call":
                result = run_call(call)
            elif how == "by_name":
                result = run_tool(call.function.name, call.function.arguments, tool_call_id=call.id)
            else:
                result = run_tool(call.function.name, json.loads(call.function.arguments))
            history.append({"role": "tool", "tool_call_id": call.id, "content": result})
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


HOW = ["by_name", "by_name_no_id", "by_call"]


@pytest.mark.parametrize("how", HOW)
def test_dispatcher_in_an_agent_run_gives_one_output_per_call(
    traced: Any, server: MockLLMServer, global_spans: Any, how: str
) -> None:
    with spanfold.agent("dispatcher"):
        history = chat_loop(server, how)
    events = traced.one()
    assert events == oracle(history)
    assert shape(events) == EXPECTED_SHAPE
    spans = tool_spans(global_spans)
    assert [s.name for s in spans] == ["execute_tool get_weather"] * 2 + ["execute_tool convert_temperature"]
    calls = [c for e in events if e.get("tool_calls") for c in e["tool_calls"]]
    for span, call in zip(spans, calls, strict=True):
        attrs = dict(span.attributes or {})
        assert attrs["gen_ai.tool.name"] == call["function"]["name"]
        assert json.loads(str(attrs["gen_ai.tool.call.arguments"])) == call["function"]["arguments"]
        assert attrs.get("gen_ai.tool.call.id") == call["id"]  # without one passed: the call of its exact arguments
        assert "gen_ai.tool.description" not in attrs  # the dispatcher's doc describes no tool
    # every output is the tool span's own (its time), never a second, nameless copy from the next call's inputs
    tool_events = [e for e in events if e["role"] == "tool"]
    assert len(tool_events) == 3


@pytest.mark.parametrize("how", HOW)
def test_dispatcher_without_an_agent_is_one_trace(
    traced: Any, server: MockLLMServer, global_spans: Any, how: str
) -> None:
    history = chat_loop(server, how)
    events = traced.one()  # no stray one-event traces of the tool runs
    assert events == oracle(history)
    calls = [c for e in events if e.get("tool_calls") for c in e["tool_calls"]]
    # the model's call id on every span: given, taken from the call, or the one the source matched by name and args
    assert [dict(s.attributes or {}).get("gen_ai.tool.call.id") for s in tool_spans(global_spans)] == [
        c["id"] for c in calls
    ]


def test_dispatcher_handed_an_anthropic_tool_use_block(traced: Any, server: MockLLMServer, global_spans: Any) -> None:
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=server.anthropic_base_url, max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": WEATHER.question}]
    with spanfold.agent("claude-dispatcher"):
        for _ in range(6):
            reply = client.messages.create(
                model="claude-x", max_tokens=256, messages=messages, tools=scenarios.WEATHER_TOOLS_ANTHROPIC
            )  # type: ignore[arg-type]
            messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
            uses = [b for b in reply.content if b.type == "tool_use"]
            if not uses:
                break
            results = [{"type": "tool_result", "tool_use_id": u.id, "content": run_call(u)} for u in uses]
            messages.append({"role": "user", "content": results})
    events = traced.one()
    assert shape(events) == EXPECTED_SHAPE[1:]
    calls = [c for e in events if e.get("tool_calls") for c in e["tool_calls"]]
    outputs = [e for e in events if e["role"] == "tool"]
    assert [(o["tool_call_id"], o["content"]) for o in outputs] == [
        (c["id"], scenarios.run_weather_tool(c["function"]["name"], c["function"]["arguments"])) for c in calls
    ]
    assert [dict(s.attributes or {})["gen_ai.tool.call.id"] for s in tool_spans(global_spans)] == [
        c["id"] for c in calls
    ]


async def test_async_dispatcher_with_an_argument_of_its_own(global_spans: Any) -> None:
    assert await arun_tool("get_weather", {"city": "Paris"}, 2, tool_call_id="call_9") == scenarios.get_weather("Paris")
    (span,) = tool_spans(global_spans)
    assert span.name == "execute_tool get_weather"
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.type": "function",
        "input.value": '{"city":"Paris"}',
        "input.mime_type": "application/json",
        "output.value": scenarios.get_weather("Paris"),
        "output.mime_type": "text/plain",
        "gen_ai.tool.call.id": "call_9",
        "gen_ai.tool.call.arguments": '{"city":"Paris"}',
        "gen_ai.tool.call.result": scenarios.get_weather("Paris"),
    }


def test_a_bedrock_tool_use_block_and_what_is_no_tool_call(global_spans: Any) -> None:
    """Bedrock's ``{"toolUse": ...}`` block names its tool; a first argument that is neither a name nor a tool call
    leaves the span as a plain ``@tool`` span of the dispatcher (never an error in the app)."""
    block = {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Tokyo"}}}
    assert run_call(block) == scenarios.get_weather("Tokyo")

    @spanfold.tool(dispatch=True)
    def odd(value: Any = None) -> str:
        return "ok"

    assert odd(42) == "ok" and odd() == "ok"
    spans = tool_spans(global_spans)
    assert [s.name for s in spans] == ["execute_tool get_weather", "execute_tool odd", "execute_tool odd"]
    assert dict(spans[0].attributes or {})["gen_ai.tool.call.id"] == "tooluse_1"
    assert dict(spans[1].attributes or {})["gen_ai.tool.call.arguments"] == '{"value":42}'
    assert spanfold.stats().get("faults", 0) == 0


def test_concurrent_agent_runs_each_pair_runs_without_ids_in_their_own_trace(
    traced: Any, server: MockLLMServer, global_spans: Any
) -> None:
    """Two users' agents at once, both asking the same tools with the same arguments, tools run without an id: each
    span gets the id of its own run's call (its trace's), never the other's: nothing is paired across traces."""
    import threading

    histories: dict[str, list[dict[str, Any]]] = {}
    start = threading.Barrier(2)

    def user(name: str) -> None:
        start.wait()
        with spanfold.agent(name):
            histories[name] = chat_loop(server, "by_name_no_id")

    threads = [threading.Thread(target=user, args=(n,)) for n in ("alice", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    spans = tool_spans(global_spans)
    assert len(spans) == 6
    for trace_id in {s.context.trace_id for s in spans}:
        agent = next(
            s for s in global_spans.get_finished_spans() if s.context.trace_id == trace_id and s.parent is None
        )
        mine = [s for s in spans if s.context.trace_id == trace_id]
        calls = [
            c["id"] for m in histories[str(agent.attributes["gen_ai.agent.name"])] for c in m.get("tool_calls") or []
        ]
        assert sorted(str(dict(s.attributes or {}).get("gen_ai.tool.call.id")) for s in mine) == sorted(calls)

"""OpenAI Responses API, folded: the real SDK over real HTTP, ``spanfold.init()``, the Invariant trace asserted event by
event against an oracle built from the agent's own items (no spanfold code), full history and
``previous_response_id`` chains alike."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

import spanfold
from spanfold.testing import WEATHER, MockLLMServer, Reply, scenarios

from ..conftest import EXPECTED_SHAPE, shape

MODEL = "gpt-4.1-mini"
TOOLS = scenarios.WEATHER_TOOLS_RESPONSES
QUESTION = "Weather in Paris and Tokyo, and Paris in Fahrenheit?"


def client_for(server: MockLLMServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-secret", base_url=server.base_url, max_retries=0)


def field(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else getattr(value, key, None)


def invariant_of(instructions: str | None, items: list[Any]) -> list[dict[str, Any]]:
    """The Invariant events a list of Responses items stands for (the oracle): model items that follow each other
    make one assistant event."""
    events: list[dict[str, Any]] = [{"role": "system", "content": instructions}] if instructions else []
    assistant: dict[str, Any] | None = None
    for item in items:
        kind = field(item, "type")
        if kind == "function_call":
            if assistant is None:
                assistant = {"role": "assistant", "content": None}
                events.append(assistant)
            assistant.setdefault("tool_calls", []).append(
                {
                    "id": field(item, "call_id"),
                    "type": "function",
                    "function": {"name": field(item, "name"), "arguments": json.loads(field(item, "arguments"))},
                }
            )
            continue
        if kind == "message" and field(item, "role") == "assistant":
            text = "".join(field(c, "text") for c in field(item, "content"))
            if assistant is None:
                assistant = {"role": "assistant", "content": text}
                events.append(assistant)
            else:
                assistant["content"] = (assistant["content"] or "") + text
            continue
        assistant = None
        if kind == "function_call_output":
            events.append({"role": "tool", "content": field(item, "output"), "tool_call_id": field(item, "call_id")})
        else:
            events.append({"role": field(item, "role"), "content": field(item, "content")})
    return [{k: v for k, v in e.items()} for e in events]


def run_calls(output: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function_call_output",
            "call_id": item.call_id,
            "output": WEATHER.tool_functions[item.name](**json.loads(item.arguments), tool_call_id=item.call_id),
        }
        for item in output
        if item.type == "function_call"
    ]


def full_history_loop(client: openai.OpenAI, *, stream: bool = False) -> list[Any]:
    """The history is re-sent on every call."""
    items: list[Any] = [{"role": "user", "content": QUESTION}]
    for _ in range(6):
        if stream:
            with client.responses.stream(model=MODEL, instructions=WEATHER.system, input=items, tools=TOOLS) as s:
                response = s.get_final_response()
        else:
            response = client.responses.create(model=MODEL, instructions=WEATHER.system, input=items, tools=TOOLS)
        items += response.output
        outputs = run_calls(response.output)
        if not outputs:
            return items
        items += outputs
    raise AssertionError("agent did not finish")


def chained_loop(client: openai.OpenAI) -> list[Any]:
    """Only the new items are sent; ``previous_response_id`` carries the history on the server."""
    items: list[Any] = [{"role": "user", "content": QUESTION}]
    new: list[Any] = list(items)
    previous: str | None = None
    for _ in range(6):
        kwargs: dict[str, Any] = {"previous_response_id": previous} if previous else {}
        response = client.responses.create(model=MODEL, instructions=WEATHER.system, input=new, tools=TOOLS, **kwargs)
        items += response.output
        new = run_calls(response.output)
        if not new:
            return items
        items += new
        previous = response.id
    raise AssertionError("agent did not finish")


def test_single_call(traced: Any, server: MockLLMServer) -> None:
    server.script(Reply.text("Hello there."))
    client_for(server).responses.create(model=MODEL, input="Hi!")
    assert traced.one() == [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello there."}]


def test_multi_step_full_history(traced: Any, server: MockLLMServer) -> None:
    with spanfold.agent("gpt-weather"):
        items = full_history_loop(client_for(server))
    events = traced.one()
    assert events == invariant_of(WEATHER.system, items)
    assert shape(events) == EXPECTED_SHAPE


def test_multi_step_streamed_helper(traced: Any, server: MockLLMServer) -> None:
    with spanfold.agent("gpt-weather"):
        items = full_history_loop(client_for(server), stream=True)
    assert traced.one() == invariant_of(WEATHER.system, items)


@pytest.mark.parametrize("with_agent", [True, False])
def test_previous_response_id_chain(traced: Any, server: MockLLMServer, with_agent: bool) -> None:
    """History not re-sent: the chain still folds into one conversation, each item once (no agent wrapper: the
    un-parented calls are stitched by ``previous_response_id``)."""
    if with_agent:
        with spanfold.agent("gpt-chain"):
            items = chained_loop(client_for(server))
    else:
        items = chained_loop(client_for(server))
    events = traced.one()
    assert events == invariant_of(WEATHER.system, items)
    assert shape(events) == EXPECTED_SHAPE


async def test_multi_step_async(traced: Any, server: MockLLMServer) -> None:
    client = openai.AsyncOpenAI(api_key="sk-secret", base_url=server.base_url, max_retries=0)
    items: list[Any] = [{"role": "user", "content": QUESTION}]
    async with spanfold.agent("gpt-async"):
        while True:
            async with client.responses.stream(model=MODEL, instructions=WEATHER.system, input=items, tools=TOOLS) as s:
                response = await s.get_final_response()
            items += response.output
            outputs = [
                {
                    "type": "function_call_output",
                    "call_id": item.call_id,
                    "output": scenarios.run_weather_tool(item.name, json.loads(item.arguments)),
                }
                for item in response.output
                if item.type == "function_call"
            ]
            if not outputs:
                break
            items += outputs
    events = traced.one()
    assert events == invariant_of(WEATHER.system, items)
    assert shape(events) == EXPECTED_SHAPE

"""OpenAI Chat Completions, end to end: the real SDK over real HTTP, spanfold.init(), the folded JSONL trace."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import openai

import spanfold
from spanfold import demo
from spanfold.testing import WEATHER, MockLLMServer, Reply, count_tokens, scenarios
from spanfold.testing.agents import PROVIDERS

from ..conftest import EXPECTED_SHAPE, shape
from .conftest import invariant_of

MODEL = PROVIDERS["openai"].model
TOOLS = scenarios.WEATHER_TOOLS_OPENAI


def client_for(server: MockLLMServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test-secret", base_url=server.base_url, max_retries=0)


def agent_loop(client: openai.OpenAI, question: str, *, stream: bool = False, use_tools: bool = True) -> list[Any]:
    """A plain tool loop; returns the message history it built (the oracle's input)."""
    messages: list[Any] = [{"role": "system", "content": WEATHER.system}, {"role": "user", "content": question}]
    for _ in range(6):
        if stream:
            with client.chat.completions.stream(model=MODEL, messages=messages, tools=TOOLS) as s:
                message = s.get_final_completion().choices[0].message
        else:
            message = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS).choices[0].message
        messages.append(message)
        if not message.tool_calls:
            return messages
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)
            if use_tools:
                result = WEATHER.tool_functions[call.function.name](**args, tool_call_id=call.id)
            else:
                result = scenarios.run_weather_tool(call.function.name, args)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise AssertionError("agent did not finish")


def test_single_call(traced: Any, server: MockLLMServer) -> None:
    server.script(Reply.text("Hello there."))
    client = client_for(server)
    reply = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi!"}])
    assert reply.choices[0].message.content == "Hello there."
    assert traced.one() == [
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello there."},
    ]
    (meta,) = traced.metas()
    assert meta["metadata"]["models"] == [MODEL]
    assert meta["metadata"]["usage"]["output_tokens"] == count_tokens("Hello there.") == reply.usage.completion_tokens
    assert meta["metadata"]["usage"]["input_tokens"] == reply.usage.prompt_tokens
    assert meta["metadata"]["status"] == "complete"


def test_multi_step_parallel_tools(traced: Any, server: MockLLMServer) -> None:
    with spanfold.agent("weather-bot"):
        history = agent_loop(client_for(server), "Weather in Paris and Tokyo?")
    events = traced.one()
    assert events == invariant_of(history)
    assert shape(events) == EXPECTED_SHAPE
    assert events[3]["tool_call_id"] == events[2]["tool_calls"][0]["id"]  # parallel calls keep the model's order
    assert events[4]["tool_call_id"] == events[2]["tool_calls"][1]["id"]
    assert events[3]["content"] == scenarios.get_weather("Paris")
    (meta,) = traced.metas()
    assert meta["metadata"]["name"] == "weather-bot"
    assert meta["summary"]["toolCallsByName"] == {"convert_temperature": 1, "get_weather": 2}


def test_multi_step_streamed(traced: Any, server: MockLLMServer) -> None:
    with spanfold.agent("weather-bot"):
        history = agent_loop(client_for(server), "Weather in Paris and Tokyo?", stream=True)
    events = traced.one()
    assert events == invariant_of(history)
    assert shape(events) == EXPECTED_SHAPE


async def test_multi_step_async(traced: Any, server: MockLLMServer) -> None:
    client = openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    messages: list[Any] = [{"role": "system", "content": WEATHER.system}, {"role": "user", "content": "Weather?"}]

    @spanfold.tool
    async def get_weather(city: str) -> str:
        await asyncio.sleep(0)
        return scenarios.get_weather(city)

    @spanfold.tool
    async def convert_temperature(celsius: float, to: str) -> str:
        return scenarios.convert_temperature(celsius, to)

    tools = {"get_weather": get_weather, "convert_temperature": convert_temperature}
    async with spanfold.agent("async-bot"):
        while True:
            stream = await client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, stream=True)
            text, calls = "", {}
            async for chunk in stream:
                delta = chunk.choices[0].delta if chunk.choices else None
                if delta and delta.content:
                    text += delta.content
                for tc in (delta.tool_calls or []) if delta else []:
                    slot = calls.setdefault(tc.index, {"id": tc.id, "name": None, "args": ""})
                    slot["name"] = (tc.function.name if tc.function else None) or slot["name"]
                    slot["args"] += (tc.function.arguments if tc.function else None) or ""
            if not calls:
                messages.append({"role": "assistant", "content": text})
                break
            messages.append(
                {
                    "role": "assistant",
                    "content": text or None,
                    "tool_calls": [
                        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["args"]}}
                        for c in calls.values()
                    ],
                }
            )
            results = await asyncio.gather(
                *(tools[c["name"]](**json.loads(c["args"]), tool_call_id=c["id"]) for c in calls.values())
            )
            for c, result in zip(calls.values(), results, strict=True):
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
    events = traced.one()
    assert events == invariant_of(messages)
    assert shape(events) == EXPECTED_SHAPE


def test_loop_without_agent_or_tool_is_one_trace(traced: Any, server: MockLLMServer) -> None:
    history = agent_loop(client_for(server), "Weather please.", use_tools=False)
    events = traced.one()
    assert events == invariant_of(history)
    (meta,) = traced.metas()
    assert len(meta["metadata"]["otel_trace_ids"]) == 1  # three un-parented calls, one trace id from the source


def test_concurrent_agents_threads(traced: Any, server: MockLLMServer) -> None:
    histories: dict[int, list[Any]] = {}

    def run(i: int) -> None:
        with spanfold.agent(f"bot-{i}"):
            histories[i] = agent_loop(client_for(server), f"Question number {i}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    traces = traced.traces()
    assert len(traces) == 6
    by_question = {t[1]["content"]: t for t in traces}
    for i, history in histories.items():
        assert by_question[f"Question number {i}"] == invariant_of(history)


async def test_concurrent_agents_asyncio(traced: Any, server: MockLLMServer) -> None:
    client = openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)

    async def run(i: int) -> list[Any]:
        messages: list[Any] = [{"role": "user", "content": f"Async question {i}"}]
        async with spanfold.agent(f"bot-{i}"):
            while True:
                msg = (
                    (await client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS))
                    .choices[0]
                    .message
                )
                messages.append(msg)
                if not msg.tool_calls:
                    return messages
                for call in msg.tool_calls:
                    result = scenarios.run_weather_tool(call.function.name, json.loads(call.function.arguments))
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})

    histories = await asyncio.gather(*(run(i) for i in range(8)))
    traces = traced.traces()
    assert len(traces) == 8
    by_question = {t[0]["content"]: t for t in traces}
    for i, history in enumerate(histories):
        assert by_question[f"Async question {i}"] == invariant_of(history)


def test_demo_runs(tmp_path: Any, _global_provider: Any) -> None:
    path = demo.run(str(tmp_path), echo=False)
    spanfold.shutdown()
    (line,) = path.read_text().splitlines()
    assert shape(json.loads(line)) == EXPECTED_SHAPE


def test_no_credentials_in_output(traced: Any, server: MockLLMServer) -> None:
    with spanfold.agent("bot"):
        agent_loop(client_for(server), "Weather?")
    traced.traces()
    for path in traced.directory.iterdir():
        body = path.read_text()
        assert "sk-test-secret" not in body and "Bearer" not in body

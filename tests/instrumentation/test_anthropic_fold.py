"""Anthropic Messages, folded: the real SDK over real HTTP, ``spanfold.init()``, the Invariant trace asserted event by
event against an oracle built from the agent's own history (no spanfold code). Also the SDK's native spans folded
without spanfold's instrumentation, and one agent run that mixes Anthropic and OpenAI calls."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import openai

import spanfold
from spanfold.testing import WEATHER, MockLLMServer, Reply, ToolCallSpec, scenarios

from ..conftest import EXPECTED_SHAPE, shape

MODEL = "claude-mock-4"
SYSTEM = WEATHER.system
QUESTION = "Weather in Paris and Tokyo, and Paris in Fahrenheit?"
TOOLS = scenarios.WEATHER_TOOLS_ANTHROPIC


def client_for(server: MockLLMServer, **options: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-secret", base_url=server.anthropic_base_url, max_retries=0, **options)


def field(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else getattr(value, key, None)


def invariant_of(system: str | None, history: list[Any]) -> list[dict[str, Any]]:
    """The Invariant events an Anthropic conversation stands for (the oracle)."""
    events: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for msg in history:
        role, content = field(msg, "role"), field(msg, "content")
        if isinstance(content, str):
            events.append({"role": role, "content": content})
            continue
        texts, calls = [], []
        for block in content:
            kind = field(block, "type")
            if kind == "tool_result":
                result = field(block, "content")
                events.append({"role": "tool", "content": result, "tool_call_id": field(block, "tool_use_id")})
            elif kind == "text":
                texts.append(field(block, "text"))
            elif kind == "tool_use":
                calls.append(
                    {
                        "id": field(block, "id"),
                        "type": "function",
                        "function": {"name": field(block, "name"), "arguments": field(block, "input")},
                    }
                )
        if texts or calls:
            event: dict[str, Any] = {"role": role, "content": "".join(texts) or None}
            if calls:
                event["tool_calls"] = calls
            events.append(event)
    return events


def agent_loop(client: anthropic.Anthropic, *, stream: bool = False, use_tools: bool = True) -> list[Any]:
    """A plain Anthropic tool loop; returns the history it built (the oracle's input)."""
    history: list[Any] = [{"role": "user", "content": QUESTION}]
    for _ in range(6):
        if stream:
            with client.messages.stream(model=MODEL, max_tokens=512, system=SYSTEM, messages=history, tools=TOOLS) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(model=MODEL, max_tokens=512, system=SYSTEM, messages=history, tools=TOOLS)
        history.append({"role": "assistant", "content": message.content})
        calls = [b for b in message.content if b.type == "tool_use"]
        if not calls:
            return history
        results = []
        for call in calls:
            if use_tools:
                result = WEATHER.tool_functions[call.name](**call.input, tool_call_id=call.id)
            else:
                result = scenarios.run_weather_tool(call.name, call.input)
            results.append({"type": "tool_result", "tool_use_id": call.id, "content": result})
        history.append({"role": "user", "content": results})
    raise AssertionError("agent did not finish")


def test_single_call(traced: Any, server: MockLLMServer) -> None:
    server.script(Reply.text("Hello there."))
    client_for(server).messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "Hi!"}])
    assert traced.one() == [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello there."}]


def test_multi_step_parallel_tools(traced: Any, server: MockLLMServer) -> None:
    with spanfold.agent("claude-weather"):
        history = agent_loop(client_for(server))
    events = traced.one()
    assert events == invariant_of(SYSTEM, history)
    assert shape(events) == EXPECTED_SHAPE
    assert events[3] == {
        "role": "tool",
        "content": scenarios.get_weather("Paris"),
        "tool_call_id": events[2]["tool_calls"][0]["id"],
    }


def test_multi_step_streamed_helper(traced: Any, server: MockLLMServer) -> None:
    with spanfold.agent("claude-weather"):
        history = agent_loop(client_for(server), stream=True)
    assert traced.one() == invariant_of(SYSTEM, history)


async def test_multi_step_async(traced: Any, server: MockLLMServer) -> None:
    client = anthropic.AsyncAnthropic(api_key="sk-ant-secret", base_url=server.anthropic_base_url, max_retries=0)
    history: list[Any] = [{"role": "user", "content": QUESTION}]
    async with spanfold.agent("claude-async"):
        while True:
            stream = await client.messages.create(
                model=MODEL, max_tokens=512, system=SYSTEM, messages=history, tools=TOOLS, stream=True
            )
            blocks: dict[int, dict[str, Any]] = {}
            async for event in stream:
                if event.type == "content_block_start":
                    blocks[event.index] = event.content_block.model_dump(exclude_none=True)
                    blocks[event.index]["_json"] = ""
                elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                    blocks[event.index]["text"] += event.delta.text
                elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                    blocks[event.index]["_json"] += event.delta.partial_json
            content = []
            for index in sorted(blocks):
                block = blocks[index]
                raw = block.pop("_json")
                if block["type"] == "tool_use":
                    block["input"] = json.loads(raw or "{}")
                content.append({k: v for k, v in block.items() if k in ("type", "text", "id", "name", "input")})
            history.append({"role": "assistant", "content": content})
            calls = [b for b in content if b["type"] == "tool_use"]
            if not calls:
                break
            await asyncio.sleep(0)
            history.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": c["id"],
                            "content": scenarios.run_weather_tool(c["name"], c["input"]),
                        }
                        for c in calls
                    ],
                }
            )
    events = traced.one()
    assert events == invariant_of(SYSTEM, history)
    assert shape(events) == EXPECTED_SHAPE


def test_loop_without_agent_or_tool_is_one_trace(traced: Any, server: MockLLMServer) -> None:
    history = agent_loop(client_for(server), use_tools=False)
    assert traced.one() == invariant_of(SYSTEM, history)


def test_multimodal_user_message(traced: Any, server: MockLLMServer) -> None:
    server.script(Reply.text("A cat."))
    client_for(server).messages.create(
        model=MODEL,
        max_tokens=64,
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                ],
            }
        ],
    )
    assert traced.one() == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            ],
        },
        {"role": "assistant", "content": "A cat."},
    ]


def test_native_spans_folded_without_spanfold_instrumentation(traced: Any, server: MockLLMServer) -> None:
    """The SDK's own spans (content mode) reach spanfold's fold with spanfold's Anthropic wrappers off: the native
    dialect makes the same flat trace, tool runner included."""
    from spanfold.instrumentation.providers.anthropic.patches import AnthropicInstrumentor

    AnthropicInstrumentor().uninstrument()

    @anthropic.beta_tool
    def get_weather(city: str) -> str:
        """Get the current weather in a city."""
        return scenarios.get_weather(city)

    @anthropic.beta_tool
    def convert_temperature(celsius: float, to: str) -> str:
        """Convert a temperature in degrees Celsius to another unit."""
        return scenarios.convert_temperature(celsius, to)

    client = client_for(server, open_telemetry={"traces": {"content_mode": "content"}})
    runner = client.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=512,
        max_iterations=6,
        thread=False,
        system=SYSTEM,
        messages=[{"role": "user", "content": QUESTION}],
        tools=[get_weather, convert_temperature],
    )
    final = runner.until_done()
    events = traced.one()
    assert shape(events) == EXPECTED_SHAPE
    assert events[3]["content"] == scenarios.get_weather("Paris")
    assert events[-1] == {"role": "assistant", "content": final.content[0].text}


def test_agent_mixing_anthropic_and_openai(traced: Any, server: MockLLMServer) -> None:
    """One agent: Claude plans (tool calls), the tools run, GPT (Responses) and GPT (chat) write the answer."""
    claude = client_for(server)
    gpt = openai.OpenAI(api_key="sk-secret", base_url=server.base_url, max_retries=0)
    server.script(
        Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"}), ToolCallSpec("get_weather", {"city": "Tokyo"})]),
        Reply.text("Paris is sunny, Tokyo is cloudy."),
        Reply.text("Paris est ensoleillé, Tokyo est nuageux."),
    )
    with spanfold.agent("mixed"):
        history: list[Any] = [{"role": "user", "content": QUESTION}]
        message = claude.messages.create(model=MODEL, max_tokens=512, system=SYSTEM, messages=history, tools=TOOLS)
        history.append({"role": "assistant", "content": message.content})
        calls = [b for b in message.content if b.type == "tool_use"]
        results = [WEATHER.tool_functions[c.name](**c.input, tool_call_id=c.id) for c in calls]
        summary = "; ".join(results)
        response = gpt.responses.create(model="gpt-4.1-mini", input=f"Summarise: {summary}")
        chat = gpt.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"Translate: {response.output_text}"}]
        )
    events = traced.one()
    assert events[:3] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
        invariant_of(None, history[1:])[0],
    ]
    assert [e.get("tool_call_id") for e in events[3:5]] == [c.id for c in calls]
    assert [e["content"] for e in events[3:5]] == results
    assert events[5:] == [
        {"role": "user", "content": f"Summarise: {summary}"},
        {"role": "assistant", "content": response.output_text},
        {"role": "user", "content": f"Translate: {response.output_text}"},
        {"role": "assistant", "content": chat.choices[0].message.content},
    ]


def test_a_stream_iterated_without_a_name_records_every_chunk(traced: Any, server: MockLLMServer) -> None:
    """``for event in client.messages.create(..., stream=True)``: the loop holds only the iterator the proxy's
    ``__iter__`` returned; the span must not end (collected proxy) before the chunks are read."""
    server.script(Reply.text("Every word of this reaches the trace."))
    with spanfold.agent("bot"):
        for _ in client_for(server).messages.create(
            model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "Talk."}], stream=True
        ):
            pass
    assert traced.one()[-1] == {"role": "assistant", "content": "Every word of this reaches the trace."}

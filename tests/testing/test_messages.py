"""Anthropic Messages through the real anthropic SDK: JSON, the raw event stream, the stream helper, sync and async."""

from __future__ import annotations

import json
from typing import Any

import anthropic

from spanfold.testing import MockLLMServer, Reply, ToolCallSpec, count_tokens

HI: list[Any] = [{"role": "user", "content": "hi"}]  # prompt_of -> 12 tokens
SYSTEM_HI = {"system": "Be brief.", "messages": HI}  # '{"messages":[...],"system":"Be brief."}' (66 bytes) -> 17 tokens
PARIS_TOKYO = [ToolCallSpec("get_weather", {"city": "Paris"}), ToolCallSpec("get_weather", {"city": "Tokyo"})]


def test_text_message(server: MockLLMServer, ant: anthropic.Anthropic) -> None:
    server.script(Reply.text("Hello there, world!"))
    message = ant.messages.create(model="claude-mock-1", max_tokens=100, **SYSTEM_HI)  # type: ignore[arg-type]

    assert message.id == "msg_mock_1"
    assert (message.type, message.role, message.model) == ("message", "assistant", "claude-mock-1")
    assert [(b.type, getattr(b, "text", None)) for b in message.content] == [("text", "Hello there, world!")]
    assert message.stop_reason == "end_turn"
    assert message.stop_sequence is None
    assert (message.usage.input_tokens, message.usage.output_tokens) == (17, 5)
    request = server.last_request
    assert (request.api, request.path, request.stream) == ("messages", "/v1/messages", False)
    assert "anthropic-version" in request.headers
    assert "test-key" in (request.headers.get("x-api-key") or request.headers.get("authorization", ""))
    assert request.body["system"] == "Be brief."


def test_tool_use_blocks(server: MockLLMServer, ant: anthropic.Anthropic) -> None:
    server.script(Reply.tools(PARIS_TOKYO, text="Let me look."))
    message = ant.messages.create(model="claude", max_tokens=100, messages=HI)

    assert message.stop_reason == "tool_use"
    text, *calls = message.content
    assert text.type == "text" and text.text == "Let me look."
    assert [(c.type, c.id, c.name, c.input) for c in calls if c.type == "tool_use"] == [
        ("tool_use", "toolu_mock_1", "get_weather", {"city": "Paris"}),
        ("tool_use", "toolu_mock_2", "get_weather", {"city": "Tokyo"}),
    ]
    expected = count_tokens('Let me look.get_weather{"city":"Paris"}get_weather{"city":"Tokyo"}')
    assert (message.usage.input_tokens, message.usage.output_tokens) == (12, expected)


def test_raw_event_sequence(server: MockLLMServer, ant: anthropic.Anthropic) -> None:
    server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})], text="Let me look."))
    events = list(ant.messages.create(model="claude", max_tokens=100, messages=HI, stream=True))

    types = [e.type for e in events]  # the SDK drops `ping`
    assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"]
    assert types[1:-2] == [
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        *["content_block_delta"] * (1 + 3),  # an empty partial_json first, as the real API
        "content_block_stop",
    ]
    start = events[0]
    assert start.type == "message_start"
    assert start.message.id == "msg_mock_1" and start.message.content == [] and start.message.stop_reason is None
    assert start.message.usage.input_tokens == 12
    fragments = [
        e.delta.partial_json for e in events if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    ]
    assert fragments[0] == "" and len(fragments) > 2
    assert json.loads("".join(fragments)) == {"city": "Paris"}
    tool_start = next(e for e in events if e.type == "content_block_start" and e.index == 1)
    assert tool_start.content_block.type == "tool_use"
    assert (tool_start.content_block.id, tool_start.content_block.name) == ("toolu_mock_1", "get_weather")
    delta = events[-2]
    assert delta.type == "message_delta"
    assert delta.delta.stop_reason == "tool_use"
    assert delta.usage.output_tokens == count_tokens('Let me look.get_weather{"city":"Paris"}')


def test_raw_stream_carries_ping(server: MockLLMServer) -> None:
    """The wire itself (the SDK hides it): event names match the data types, a ping after the first block start."""
    import http.client

    server.script(Reply.text("Hi"))
    connection = http.client.HTTPConnection("127.0.0.1", server.port)
    body = json.dumps({"model": "claude", "max_tokens": 5, "messages": HI, "stream": True})
    connection.request("POST", "/v1/messages", body, {"content-type": "application/json"})
    response = connection.getresponse()
    assert response.status == 200
    assert response.getheader("content-type") == "text/event-stream; charset=utf-8"
    raw = response.read().decode()
    connection.close()
    names = [line.removeprefix("event: ") for line in raw.splitlines() if line.startswith("event: ")]
    assert names == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    datas = [json.loads(line.removeprefix("data: ")) for line in raw.splitlines() if line.startswith("data: ")]
    assert [d["type"] for d in datas] == names


def test_stream_helper_final_message(server: MockLLMServer, ant: anthropic.Anthropic) -> None:
    server.script(Reply.tools(PARIS_TOKYO, text="Checking."))
    with ant.messages.stream(model="claude", max_tokens=100, messages=HI) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()

    assert text == "Checking."
    assert final.stop_reason == "tool_use"
    assert [(b.id, b.input) for b in final.content if b.type == "tool_use"] == [
        ("toolu_mock_1", {"city": "Paris"}),
        ("toolu_mock_2", {"city": "Tokyo"}),
    ]
    expected = count_tokens('Checking.get_weather{"city":"Paris"}get_weather{"city":"Tokyo"}')
    assert (final.usage.input_tokens, final.usage.output_tokens) == (12, expected)


async def test_async_create_and_stream(server: MockLLMServer, aant: anthropic.AsyncAnthropic) -> None:
    server.script(Reply.text("Async hello"), Reply.tools(PARIS_TOKYO))
    message = await aant.messages.create(model="claude", max_tokens=100, messages=HI)
    assert message.content[0].type == "text" and message.content[0].text == "Async hello"

    stream = await aant.messages.create(model="claude", max_tokens=100, messages=HI, stream=True)
    buffers: dict[int, str] = {}
    async for event in stream:
        if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            buffers[event.index] = buffers.get(event.index, "") + event.delta.partial_json
    assert {i: json.loads(b) for i, b in buffers.items()} == {0: {"city": "Paris"}, 1: {"city": "Tokyo"}}


async def test_async_stream_helper(server: MockLLMServer, aant: anthropic.AsyncAnthropic) -> None:
    server.script(Reply.text("Streamed async"))
    async with aant.messages.stream(model="claude", max_tokens=100, messages=HI) as stream:
        final = await stream.get_final_message()
    assert final.content[0].type == "text" and final.content[0].text == "Streamed async"
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == count_tokens("Streamed async")

"""Chat Completions through the real openai SDK: JSON, raw streams, the stream helper, sync and async."""

from __future__ import annotations

import json
from typing import Any

import openai

from spanfold.testing import MockLLMServer, Reply, ToolCallSpec, Usage, count_tokens, prompt_of

HI: list[Any] = [{"role": "user", "content": "hi"}]  # prompt_of -> 45 bytes -> 12 tokens
PARIS_TOKYO = [ToolCallSpec("get_weather", {"city": "Paris"}), ToolCallSpec("get_weather", {"city": "Tokyo"})]


def test_text_completion(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.text("Hello there, world!"))
    completion = oai.chat.completions.create(model="gpt-4o-mini", messages=HI)

    assert completion.id == "chatcmpl-mock-1"
    assert completion.object == "chat.completion"
    assert completion.model == "gpt-4o-mini"
    choice = completion.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == "Hello there, world!"
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens, completion.usage.total_tokens) == (
        12,
        5,
        17,
    )
    request = server.last_request
    assert (request.api, request.path, request.stream, request.model) == (
        "chat",
        "/v1/chat/completions",
        False,
        "gpt-4o-mini",
    )
    assert request.body["messages"] == HI
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.input_tokens == count_tokens(prompt_of(request.body)) == 12


def test_parallel_tool_calls(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.tools(PARIS_TOKYO))
    completion = oai.chat.completions.create(model="gpt-4o", messages=HI)

    message = completion.choices[0].message
    assert completion.choices[0].finish_reason == "tool_calls"
    assert message.content is None
    assert message.tool_calls is not None
    assert [(c.id, c.type, c.function.name, c.function.arguments) for c in message.tool_calls] == [  # type: ignore[union-attr]
        ("call_mock_1", "function", "get_weather", '{"city":"Paris"}'),
        ("call_mock_2", "function", "get_weather", '{"city":"Tokyo"}'),
    ]
    assert completion.usage is not None
    assert completion.usage.completion_tokens == count_tokens('get_weather{"city":"Paris"}get_weather{"city":"Tokyo"}')


def test_ids_count_per_server_and_explicit_ids_and_usage(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(
        Reply.text("one"),
        Reply.tools([ToolCallSpec("f", {}, id="call_custom")], usage=Usage(100, 7)),
        Reply.tools([ToolCallSpec("g", {"x": 1})]),
    )
    first = oai.chat.completions.create(model="m", messages=HI)
    second = oai.chat.completions.create(model="m", messages=HI)
    third = oai.chat.completions.create(model="m", messages=HI)
    assert [first.id, second.id, third.id] == ["chatcmpl-mock-1", "chatcmpl-mock-2", "chatcmpl-mock-3"]
    assert second.choices[0].message.tool_calls[0].id == "call_custom"  # type: ignore[index]
    assert third.choices[0].message.tool_calls[0].id == "call_mock_1"  # type: ignore[index]
    assert second.usage is not None
    assert (second.usage.prompt_tokens, second.usage.completion_tokens, second.usage.total_tokens) == (100, 7, 107)
    assert server.pending == 0
    assert [r.index for r in server.requests] == [0, 1, 2]


def test_stream_text_with_usage_chunk(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.text("Hello there, world!"))
    chunks = list(
        oai.chat.completions.create(
            model="gpt-4o-mini", messages=HI, stream=True, stream_options={"include_usage": True}
        )
    )

    assert {c.id for c in chunks} == {"chatcmpl-mock-1"}
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello there, world!"
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) == 3
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (12, 5)
    assert all(c.usage is None for c in chunks[:-1])


def test_stream_without_usage_option_has_no_usage_chunk(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.text("Hi"))
    chunks = list(oai.chat.completions.create(model="m", messages=HI, stream=True))
    assert all(c.choices for c in chunks)
    assert all(c.usage is None for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_stream_parallel_tool_call_deltas(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.tools(PARIS_TOKYO))
    chunks = list(oai.chat.completions.create(model="m", messages=HI, stream=True))

    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[0].choices[0].delta.content is None
    deltas = [d for c in chunks for d in (c.choices[0].delta.tool_calls or [])]
    # as the real API: each call in turn, its id, type and name first with empty arguments, then argument fragments
    order = [d.index for d in deltas]
    assert order == sorted(order) and set(order) == {0, 1}
    for index, (call_id, city) in enumerate([("call_mock_1", "Paris"), ("call_mock_2", "Tokyo")]):
        mine = [d for d in deltas if d.index == index]
        assert mine[0].id == call_id and mine[0].type == "function"
        assert mine[0].function is not None and mine[0].function.name == "get_weather"
        assert mine[0].function.arguments == ""
        assert all(d.id is None for d in mine[1:])
        fragments = [d.function.arguments or "" for d in mine[1:] if d.function]
        assert len(fragments) > 1
        assert json.loads("".join(fragments)) == {"city": city}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_stream_helper_final_completion(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.tools(PARIS_TOKYO, text="Checking both."))
    with oai.chat.completions.stream(model="m", messages=HI, stream_options={"include_usage": True}) as stream:
        events = list(stream)
        final = stream.get_final_completion()

    done = [e for e in events if e.type == "tool_calls.function.arguments.done"]
    assert [(e.name, e.arguments) for e in done] == [
        ("get_weather", '{"city":"Paris"}'),
        ("get_weather", '{"city":"Tokyo"}'),
    ]
    assert [e.content for e in events if e.type == "content.done"] == ["Checking both."]
    message = final.choices[0].message
    assert message.content == "Checking both."
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []] == [
        ("call_mock_1", "get_weather", '{"city":"Paris"}'),
        ("call_mock_2", "get_weather", '{"city":"Tokyo"}'),
    ]
    assert final.choices[0].finish_reason == "tool_calls"
    assert final.usage is not None and final.usage.prompt_tokens == 12


async def test_async_create_and_stream(server: MockLLMServer, aoai: openai.AsyncOpenAI) -> None:
    server.script(Reply.text("Async hello"), Reply.tools(PARIS_TOKYO))
    completion = await aoai.chat.completions.create(model="m", messages=HI)
    assert completion.choices[0].message.content == "Async hello"

    stream = await aoai.chat.completions.create(
        model="m", messages=HI, stream=True, stream_options={"include_usage": True}
    )
    arguments: dict[int, str] = {}
    usage = None
    async for chunk in stream:
        usage = chunk.usage or usage
        for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            arguments[delta.index] = arguments.get(delta.index, "") + (delta.function.arguments or "")
    assert arguments == {0: '{"city":"Paris"}', 1: '{"city":"Tokyo"}'}
    assert usage is not None and usage.prompt_tokens == 12


async def test_async_stream_helper(server: MockLLMServer, aoai: openai.AsyncOpenAI) -> None:
    server.script(Reply.text("Streamed async"))
    async with aoai.chat.completions.stream(model="m", messages=HI) as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_completion()
    assert final.choices[0].message.content == "Streamed async"
    assert final.choices[0].finish_reason == "stop"

"""OpenAI Chat Completions spans, from real recorded API responses replayed to the real SDK."""

from __future__ import annotations

import gc
import json
from typing import Any

import httpx2
import openai
import pytest
import wrapt
from opentelemetry.trace import SpanKind, StatusCode

from spanfold.content.runtime import Runtime

SF_CALLS = {
    "type": "tool_call",
    "name": "get_current_weather",
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "Get the current weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"}
                },
                "required": ["location"],
            },
        },
    }
]


def test_non_streaming_tool_call(spans: Any, replay_client: Any) -> None:
    client, replay = replay_client("test_chat_tools.json")
    body = replay.interactions[0]["request"]["body"]
    result = client.chat.completions.create(model=body["model"], messages=body["messages"], tools=body["tools"])

    assert isinstance(result, openai.types.chat.ChatCompletion)  # the SDK's own object, untouched
    span = spans.one()
    assert span.name == "chat gpt-3.5-turbo"
    assert span.kind == SpanKind.CLIENT
    attrs = spans.attrs(span)
    recorded = json.loads(replay.interactions[0]["response"]["body"])
    call = recorded["choices"][0]["message"]["tool_calls"][0]
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.request.model"] == "gpt-3.5-turbo"
    assert attrs["gen_ai.response.model"] == recorded["model"]
    assert attrs["gen_ai.response.id"] == recorded["id"]
    assert attrs["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert attrs["gen_ai.usage.input_tokens"] == recorded["usage"]["prompt_tokens"]
    assert attrs["gen_ai.usage.output_tokens"] == recorded["usage"]["completion_tokens"]
    assert attrs["server.address"] == "recorded.test"
    assert attrs["gen_ai.input.messages"] == [
        {"role": "user", "parts": [{"type": "text", "content": body["messages"][0]["content"]}]}
    ]
    assert attrs["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": call["id"],
                    "name": "get_current_weather",
                    "arguments": json.loads(call["function"]["arguments"]),
                }
            ],
            "finish_reason": "tool_call",
        }
    ]
    assert attrs["gen_ai.tool.definitions"] == [
        {
            "type": "function",
            "name": "get_current_weather",
            "description": "Get the current weather",
            "parameters": TOOLS[0]["function"]["parameters"],
        }
    ]


def test_history_with_tool_results(spans: Any, replay_client: Any) -> None:
    client, replay = replay_client("test_chat_tool_calls.json")
    body = replay.interactions[0]["request"]["body"]
    client.chat.completions.create(model=body["model"], messages=body["messages"])
    attrs = spans.attrs()
    assert attrs["gen_ai.input.messages"] == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "1",
                    "name": "get_current_weather",
                    "arguments": {"location": "San Francisco"},
                }
            ],
        },
        {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": "1",
                    "response": "The weather in San Francisco is 70 degrees and sunny.",
                }
            ],
        },
    ]
    assert attrs["gen_ai.output.messages"][0]["parts"] == [
        {"type": "text", "content": "The weather in San Francisco is 70 degrees and sunny."}
    ]
    assert attrs["gen_ai.output.messages"][0]["finish_reason"] == "stop"


def _parallel_calls(replay: Any, index: int = 0) -> list[dict[str, Any]]:
    """The tool calls of a recorded stream, assembled independently of spanfold."""
    calls: dict[int, dict[str, Any]] = {}
    for line in replay.interactions[index]["response"]["body"].splitlines():
        if not line.startswith("data: {"):
            continue
        for choice in json.loads(line[6:])["choices"]:
            for tc in choice["delta"].get("tool_calls") or []:
                slot = calls.setdefault(tc["index"], {"id": None, "name": None, "args": ""})
                slot["id"] = tc.get("id") or slot["id"]
                slot["name"] = (tc.get("function") or {}).get("name") or slot["name"]
                slot["args"] += (tc.get("function") or {}).get("arguments") or ""
    return [calls[i] for i in sorted(calls)]


def test_streamed_parallel_tool_calls(spans: Any, replay_client: Any) -> None:
    client, replay = replay_client("test_open_ai_function_calls_tools_streaming_parallel.json")
    body = replay.interactions[0]["request"]["body"]
    stream = client.chat.completions.create(
        model=body["model"], messages=body["messages"], tools=body["tools"], stream=True
    )
    assert isinstance(stream, openai.Stream)
    assert spans.finished() == []  # the span stays open while the stream is read
    chunks = list(stream)
    assert all(isinstance(c, openai.types.chat.ChatCompletionChunk) for c in chunks)

    expected = _parallel_calls(replay)
    assert len(expected) == 2
    attrs = spans.attrs()
    assert attrs["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": c["id"], "name": c["name"], "arguments": json.loads(c["args"])}
                for c in expected
            ],
            "finish_reason": "tool_call",
        }
    ]
    assert attrs["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert attrs["gen_ai.response.id"].startswith("chatcmpl-")


def test_stream_chunks_are_the_sdks_own(spans: Any, replay_client: Any) -> None:
    """The proxy yields exactly what the unwrapped stream yields."""
    client, replay = replay_client("test_chat_tools_streaming.json")
    body = replay.interactions[0]["request"]["body"]
    traced = [c.model_dump() for c in client.chat.completions.create(**body)]
    from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor

    OpenAIInstrumentor().uninstrument()
    try:
        client2, _ = replay_client("test_chat_tools_streaming.json")
        plain = [c.model_dump() for c in client2.chat.completions.create(**body)]
    finally:
        OpenAIInstrumentor().instrument(tracer_provider=spans.provider, runtime=spans.settings)
    assert traced == plain


def test_stream_helper_ends_span_on_exit(spans: Any, replay_client: Any) -> None:
    client, replay = replay_client("test_chat_tools_streaming.json")
    body = replay.interactions[0]["request"]["body"]
    with client.chat.completions.stream(model=body["model"], messages=body["messages"], tools=TOOLS) as stream:
        next(iter(stream))  # read one event, then leave early
        assert spans.finished() == []
    assert len(spans.finished()) == 1  # closed by the helper's exit, not left to the garbage collector


def test_stream_helper_full(spans: Any, replay_client: Any) -> None:
    client, replay = replay_client("test_chat_tools_streaming.json")
    body = replay.interactions[0]["request"]["body"]
    with client.chat.completions.stream(model=body["model"], messages=body["messages"], tools=TOOLS) as stream:
        final = stream.get_final_completion()
    call = final.choices[0].message.tool_calls[0]
    attrs = spans.attrs()
    assert attrs["gen_ai.output.messages"][0]["parts"] == [
        {
            "type": "tool_call",
            "id": call.id,
            "name": "get_current_weather",
            "arguments": json.loads(call.function.arguments),
        }
    ]


def test_early_break_then_garbage_collected(spans: Any, replay_client: Any) -> None:
    client, replay = replay_client("test_chat_tools_streaming.json")
    body = replay.interactions[0]["request"]["body"]
    stream = client.chat.completions.create(**body)
    for _ in stream:
        break
    assert spans.finished() == []
    del stream
    gc.collect()
    span = spans.one()
    assert span.status.status_code == StatusCode.UNSET
    assert spans.attrs(span)["gen_ai.response.id"].startswith("chatcmpl-")


def test_close_ends_span_once(spans: Any, replay_client: Any) -> None:
    client, replay = replay_client("test_chat_tools_streaming.json")
    stream = client.chat.completions.create(**replay.interactions[0]["request"]["body"])
    next(stream)
    stream.close()
    stream.close()
    with stream:
        pass
    del stream
    gc.collect()
    assert len(spans.finished()) == 1


def test_with_raw_response(spans: Any, replay_client: Any) -> None:
    client, replay = replay_client("test_chat_tools.json")
    body = replay.interactions[0]["request"]["body"]
    raw = client.chat.completions.with_raw_response.create(**body)
    assert raw.headers["content-type"] == "application/json"
    completion = raw.parse()
    assert completion is raw.parse()  # the SDK's cached object
    assert spans.attrs()["gen_ai.response.finish_reasons"] == ("tool_calls",)


def test_with_raw_response_stream(spans: Any, replay_client: Any) -> None:
    client, replay = replay_client("test_chat_tools_streaming.json")
    raw = client.chat.completions.with_raw_response.create(**replay.interactions[0]["request"]["body"])
    assert spans.finished() == []
    list(raw.parse())
    assert spans.attrs()["gen_ai.response.finish_reasons"] == ("tool_calls",)


def test_parse(spans: Any, replay_client: Any) -> None:
    client, replay = replay_client("test_chat_tool_calls.json")
    body = replay.interactions[0]["request"]["body"]
    parsed = client.chat.completions.parse(model=body["model"], messages=body["messages"])
    assert parsed.choices[0].message.content == "The weather in San Francisco is 70 degrees and sunny."
    assert spans.attrs()["gen_ai.output.messages"][0]["parts"][0]["content"] == parsed.choices[0].message.content


async def test_async_create_and_stream(spans: Any, replay_client: Any) -> None:
    client, replay = replay_client("test_open_ai_function_calls_tools_streaming_parallel.json", async_=True)
    body = replay.interactions[0]["request"]["body"]
    stream = await client.chat.completions.create(**body)
    assert isinstance(stream, openai.AsyncStream)
    async for _ in stream:
        pass
    body2 = replay.interactions[1]["request"]["body"]
    async with await client.chat.completions.create(**body2) as stream2:
        async for _ in stream2:
            break
    finished = spans.finished()
    assert len(finished) == 2
    assert [len(spans.attrs(s)["gen_ai.output.messages"][0]["parts"]) for s in finished] == [2, 0]


async def test_async_stream_helper(spans: Any, replay_client: Any) -> None:
    client, replay = replay_client("test_chat_tools_streaming.json", async_=True)
    body = replay.interactions[0]["request"]["body"]
    async with client.chat.completions.stream(model=body["model"], messages=body["messages"], tools=TOOLS) as stream:
        final = await stream.get_final_completion()
    assert final.choices[0].finish_reason == "tool_calls"
    assert spans.attrs()["gen_ai.response.finish_reasons"] == ("tool_calls",)


def _failing_client(status: int, body: dict[str, Any]) -> openai.OpenAI:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(status, json=body)

    return openai.OpenAI(
        api_key="sk-test",
        base_url="http://mock.test/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )


def test_server_error_reaches_user_and_span(spans: Any) -> None:
    client = _failing_client(500, {"error": {"message": "boom", "type": "server_error", "param": None, "code": None}})
    with pytest.raises(openai.InternalServerError) as info:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert info.value.status_code == 500
    span = spans.one()
    assert span.status.status_code == StatusCode.ERROR
    assert spans.attrs(span)["error.type"] == "openai.InternalServerError"
    assert [e.name for e in span.events] == ["exception"]


def test_content_capture_off_keeps_structure(spans: Any, replay_client: Any) -> None:
    spans.use(Runtime(capture_content=False))
    client, replay = replay_client("test_chat_tool_calls.json")
    body = replay.interactions[0]["request"]["body"]
    client.chat.completions.create(model=body["model"], messages=body["messages"], tools=TOOLS)
    attrs = spans.attrs()
    assert attrs["gen_ai.input.messages"] == [
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "1", "name": "get_current_weather"}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "1"}]},
    ]
    assert attrs["gen_ai.output.messages"] == [
        {"role": "assistant", "parts": [{"type": "text"}], "finish_reason": "stop"}
    ]
    assert "gen_ai.tool.definitions" not in attrs
    dumped = json.dumps({k: str(v) for k, v in spans.one().attributes.items()})
    assert "San Francisco" not in dumped and "sunny" not in dumped


def test_sdk_objects_and_generators_in_history(spans: Any, replay_client: Any) -> None:
    """History may hold the SDK's own message objects; a generator of messages is not exhausted by us."""
    client, replay = replay_client("test_chat_tools.json")
    first = client.chat.completions.create(**replay.interactions[0]["request"]["body"])
    client2, replay2 = replay_client("test_chat_tool_calls.json")
    history = [
        {"role": "user", "content": "What's the weather like in San Francisco?"},
        first.choices[0].message,
        {"role": "tool", "tool_call_id": first.choices[0].message.tool_calls[0].id, "content": "70 and sunny"},
    ]
    client2.chat.completions.create(model="gpt-3.5-turbo", messages=(m for m in history))
    assert len(replay2.requests[0]["messages"]) == 3  # the SDK still sent all three
    inputs = spans.attrs(spans.finished()[1])["gen_ai.input.messages"]
    assert [m["role"] for m in inputs] == ["user", "assistant", "tool"]
    assert inputs[1]["parts"][0]["type"] == "tool_call"


def test_uninstrument_restores_sdk(spans: Any) -> None:
    from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor

    OpenAIInstrumentor().uninstrument()
    try:
        from openai.resources.chat.completions.completions import Completions

        assert not isinstance(Completions.__dict__["create"], wrapt.ObjectProxy)
    finally:
        OpenAIInstrumentor().instrument(tracer_provider=spans.provider, runtime=spans.settings)


def test_history_cache_sees_replaced_values(spans: Any, replay_client: Any) -> None:
    """Converted messages are cached by identity; a value replaced in a re-sent dict is seen."""
    client, replay = replay_client("test_chat_tool_calls.json")
    body = replay.interactions[0]["request"]["body"]
    history = [dict(msg) for msg in body["messages"]]
    client.chat.completions.create(model=body["model"], messages=history)
    history[1]["content"] = "replaced"
    client.chat.completions.create(model=body["model"], messages=history)
    first, second = (spans.attrs(s)["gen_ai.input.messages"] for s in spans.finished())
    assert first[1]["parts"][0]["response"] == "The weather in San Francisco is 70 degrees and sunny."
    assert second[1]["parts"][0]["response"] == "replaced"
    assert first[0] == second[0]


def test_server_follows_a_changed_base_url(spans: Any, replay_client: Any) -> None:
    """``server.*`` is cached per ``base_url`` object: a client pointed elsewhere is seen at once."""
    client, replay = replay_client("test_chat_tool_calls.json")
    body = replay.interactions[0]["request"]["body"]
    client.chat.completions.create(model=body["model"], messages=body["messages"])
    client.base_url = "http://other.test:8443/v1"
    client.chat.completions.create(model=body["model"], messages=body["messages"])
    first, second = (spans.attrs(s) for s in spans.finished())
    assert (first["server.address"], first["server.port"]) == ("recorded.test", 80)
    assert (second["server.address"], second["server.port"]) == ("other.test", 8443)


def test_results_of_every_kind_after_a_plain_response(spans: Any, replay_client: Any) -> None:
    """A complete response's type is remembered to skip the type checks; a stream or a raw response after it is
    still proxied and ends its own span."""
    client, replay = replay_client("test_chat_tools.json")
    body = replay.interactions[0]["request"]["body"]
    plain = client.chat.completions.create(model=body["model"], messages=body["messages"], tools=body["tools"])
    assert isinstance(plain, openai.types.chat.ChatCompletion)
    stream_client, stream_replay = replay_client("test_chat_tools_streaming.json")
    sbody = stream_replay.interactions[0]["request"]["body"]
    chunks = list(stream_client.chat.completions.create(**{**sbody, "stream": True}))
    assert chunks and all(isinstance(c, openai.types.chat.ChatCompletionChunk) for c in chunks)
    raw_client, _ = replay_client("test_chat_tools.json")
    raw = raw_client.chat.completions.with_raw_response.create(
        model=body["model"], messages=body["messages"], tools=body["tools"]
    )
    assert raw.parse().id == plain.id
    first, streamed, parsed = (spans.attrs(s) for s in spans.finished())
    assert streamed["gen_ai.output.messages"][0]["parts"][-1]["type"] == "tool_call"  # accumulated from the chunks
    assert first["gen_ai.response.id"] == parsed["gen_ai.response.id"] == plain.id

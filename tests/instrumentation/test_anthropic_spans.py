"""Anthropic Messages spans: the real ``anthropic`` SDK over real HTTP to the embedded mock server (and replayed real
recordings), attributes asserted exactly."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
import wrapt
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from spanfold.content.redaction import Redaction
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.anthropic.patches import AnthropicInstrumentor
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec, Usage, scenarios

from .conftest import Spans, spans_of

MODEL = "claude-mock-4"
TOOLS = scenarios.WEATHER_TOOLS_ANTHROPIC
WEATHER_DEFINITIONS = [
    {"type": "function", "name": t["name"], "description": t["description"], "parameters": t["input_schema"]}
    for t in TOOLS
]


@pytest.fixture
def aspans() -> Iterator[Spans]:
    with spans_of(AnthropicInstrumentor()) as spans:
        yield spans


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer() as srv:
        yield srv


def client(server: MockLLMServer, **options: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", base_url=server.anthropic_base_url, max_retries=0, **options)


def aclient(server: MockLLMServer, **options: Any) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=server.anthropic_base_url, max_retries=0, **options)


def base_attrs(server: MockLLMServer, model: str = MODEL, max_tokens: int = 256) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": model,
        "gen_ai.request.max_tokens": max_tokens,
        "server.address": "127.0.0.1",
        "server.port": server.port,
    }


def recorded(load_recording: Any, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    (interaction,) = load_recording(name)
    return interaction["request"]["body"], interaction["response"]


# --- replayed real recordings --------------------------------------------------------------------------


def test_recorded_tool_use(aspans: Spans, server: MockLLMServer, load_recording: Any) -> None:
    body, response = recorded(load_recording, "test_anthropic_tools_legacy.json")
    server.script(Reply.raw(response["status"], response["body"], response["content_type"]))
    message = client(server).messages.create(**body)

    assert isinstance(message, anthropic.types.Message)  # the SDK's own object, untouched
    span = aspans.one()
    assert span.name == "chat claude-3-5-sonnet-20240620"
    assert span.kind == SpanKind.CLIENT
    assert span.status.status_code == StatusCode.UNSET
    wire = json.loads(response["body"])
    weather, time_call = wire["content"][1], wire["content"][2]
    assert aspans.attrs(span) == {
        **base_attrs(server, model=body["model"], max_tokens=1024),
        "gen_ai.input.messages": [
            {"role": "user", "parts": [{"type": "text", "content": body["messages"][0]["content"]}]}
        ],
        "gen_ai.tool.definitions": [
            {"type": "function", "name": t["name"], "description": t["description"], "parameters": t["input_schema"]}
            for t in body["tools"]
        ],
        "gen_ai.response.id": "msg_01RBkXFe9TmDNNWThMz2HmGt",
        "gen_ai.response.model": "claude-3-5-sonnet-20240620",
        "gen_ai.response.finish_reasons": ("tool_use",),
        "gen_ai.output.messages": [
            {
                "role": "assistant",
                "parts": [
                    {"type": "text", "content": wire["content"][0]["text"]},
                    {"type": "tool_call", "id": weather["id"], "name": "get_weather", "arguments": weather["input"]},
                    {"type": "tool_call", "id": time_call["id"], "name": "get_time", "arguments": time_call["input"]},
                ],
                "finish_reason": "tool_call",
            }
        ],
        "gen_ai.usage.input_tokens": 514,
        "gen_ai.usage.output_tokens": 152,
        "anthropic.request.id": message._request_id,
    }


def _recorded_stream_calls(body: str) -> list[dict[str, Any]]:
    """The tool calls of a recorded SSE stream, assembled independently of spanfold."""
    calls: dict[int, dict[str, Any]] = {}
    for line in body.splitlines():
        if not line.startswith("data: {"):
            continue
        event = json.loads(line[6:])
        if event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use":
            calls[event["index"]] = {
                "id": event["content_block"]["id"],
                "name": event["content_block"]["name"],
                "a": "",
            }
        elif event["type"] == "content_block_delta" and event["delta"]["type"] == "input_json_delta":
            calls[event["index"]]["a"] += event["delta"]["partial_json"]
    return [calls[i] for i in sorted(calls)]


def test_recorded_stream_assembles_input_json_deltas(aspans: Spans, server: MockLLMServer, load_recording: Any) -> None:
    body, response = recorded(load_recording, "test_anthropic_tools_streaming_legacy.json")
    server.script(Reply.raw(response["status"], response["body"], response["content_type"]))
    stream = client(server).messages.create(**body)
    assert isinstance(stream, anthropic.Stream)
    assert aspans.finished() == []  # open while the stream is read
    events = list(stream)
    assert [e.type for e in events][:2] == ["message_start", "content_block_start"]  # the SDK's own events

    calls = _recorded_stream_calls(response["body"])
    assert len(calls) == 2
    text = "".join(
        json.loads(line[6:])["delta"]["text"]
        for line in response["body"].splitlines()
        if line.startswith("data: {") and '"text_delta"' in line
    )
    attrs = aspans.attrs()
    assert attrs["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": text}]
            + [{"type": "tool_call", "id": c["id"], "name": c["name"], "arguments": json.loads(c["a"])} for c in calls],
            "finish_reason": "tool_call",
        }
    ]
    assert attrs["gen_ai.response.id"] == "msg_0138UNF3YbNp49KkqZtUBWqz"
    assert attrs["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert attrs["gen_ai.usage.input_tokens"] == 506
    # a zero cache count is not recorded (the conventions: breakdown counts only when non-zero)
    assert "gen_ai.usage.cache_read.input_tokens" not in attrs
    assert "gen_ai.usage.cache_write.input_tokens" not in attrs
    assert attrs["gen_ai.usage.output_tokens"] == events[-2].usage.output_tokens  # message_delta's count


def test_stream_events_are_the_sdks_own(aspans: Spans, server: MockLLMServer, load_recording: Any) -> None:
    body, response = recorded(load_recording, "test_anthropic_tools_streaming_legacy.json")
    reply = Reply.raw(response["status"], response["body"], response["content_type"])
    server.script(reply, reply)
    traced = [e.model_dump() for e in client(server).messages.create(**body)]
    AnthropicInstrumentor().uninstrument()
    try:
        plain = [e.model_dump() for e in client(server).messages.create(**body)]
    finally:
        AnthropicInstrumentor().instrument(tracer_provider=aspans.provider, runtime=aspans.settings)
    assert traced == plain


# --- request mapping -----------------------------------------------------------------------------------

PNG = "iVBORw0KGgo="
HISTORY: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in these, and what is the weather in Paris?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "A memo."}},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "I should call the tool.", "signature": "sig"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Tokyo"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Paris: 18°C, sunny"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "Tokyo: 24°C"}]},
            {"type": "text", "text": "Thanks. And in Fahrenheit?"},
        ],
    },
]
HISTORY_MESSAGES = [
    {
        "role": "user",
        "parts": [
            {"type": "text", "content": "What is in these, and what is the weather in Paris?"},
            {"type": "blob", "modality": "image", "mime_type": "image/png", "content": PNG},
            {"type": "uri", "modality": "image", "uri": "https://example.com/cat.jpg"},
            {"type": "text", "content": "A memo."},
        ],
    },
    {
        "role": "assistant",
        "parts": [
            {"type": "reasoning", "content": "I should call the tool."},
            {"type": "reasoning"},
            {"type": "text", "content": "Let me check."},
            {"type": "tool_call", "id": "toolu_1", "name": "get_weather", "arguments": {"city": "Paris"}},
            {"type": "tool_call", "id": "toolu_2", "name": "get_weather", "arguments": {"city": "Tokyo"}},
        ],
    },
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "toolu_1", "response": "Paris: 18°C, sunny"}]},
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "toolu_2", "response": "Tokyo: 24°C"}]},
    {"role": "user", "parts": [{"type": "text", "content": "Thanks. And in Fahrenheit?"}]},
]


def test_request_mapping(aspans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.text("64.4°F.", usage=Usage(90, 4)))
    client(server).messages.create(
        model=MODEL,
        max_tokens=256,
        system=[{"type": "text", "text": "You are terse."}, {"type": "text", "text": "Use tools."}],
        messages=HISTORY,
        tools=TOOLS,
        stop_sequences=["END"],
    )
    attrs = aspans.attrs()
    assert attrs == {
        **base_attrs(server),
        "gen_ai.request.stop_sequences": ("END",),
        "gen_ai.system_instructions": [
            {"type": "text", "content": "You are terse."},
            {"type": "text", "content": "Use tools."},
        ],
        "gen_ai.input.messages": HISTORY_MESSAGES,
        "gen_ai.tool.definitions": WEATHER_DEFINITIONS,
        "gen_ai.response.id": "msg_mock_1",
        "gen_ai.response.model": MODEL,
        "gen_ai.response.finish_reasons": ("end_turn",),
        "gen_ai.output.messages": [
            {"role": "assistant", "parts": [{"type": "text", "content": "64.4°F."}], "finish_reason": "stop"}
        ],
        "gen_ai.usage.input_tokens": 90,
        "gen_ai.usage.output_tokens": 4,
        "anthropic.request.id": attrs["anthropic.request.id"],
    }


def test_string_system_and_sdk_objects_in_history(aspans: Spans, server: MockLLMServer) -> None:
    """History may hold the SDK's own content blocks (``message.content``); a generator is not exhausted by us."""
    server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})], text="Checking."), Reply.text("Sunny."))
    sdk = client(server)
    first = sdk.messages.create(model=MODEL, max_tokens=256, system="Be brief.", messages=HISTORY[:1], tools=TOOLS)
    history = [
        HISTORY[0],
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first.content[1].id, "content": "sunny"}]},
    ]
    sdk.messages.create(model=MODEL, max_tokens=256, system="Be brief.", messages=(m for m in history))
    assert len(server.last_request.body["messages"]) == 3  # the SDK still sent all three
    one, two = (aspans.attrs(s) for s in aspans.finished())
    assert one["gen_ai.system_instructions"] == [{"type": "text", "content": "Be brief."}]
    call = {"type": "tool_call", "id": first.content[1].id, "name": "get_weather", "arguments": {"city": "Paris"}}
    assert one["gen_ai.output.messages"] == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Checking."}, call], "finish_reason": "tool_call"}
    ]
    assert two["gen_ai.input.messages"] == [
        HISTORY_MESSAGES[0],
        {"role": "assistant", "parts": [{"type": "text", "content": "Checking."}, call]},  # = step one's output
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": call["id"], "response": "sunny"}]},
    ]


def test_cache_usage_counts_into_input_tokens(aspans: Spans, server: MockLLMServer) -> None:
    body = {
        "id": "msg_cache",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": "Cached."}],
        "stop_reason": "max_tokens",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 10,
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 200,
            "output_tokens": 3,
        },
    }
    server.script(Reply.raw(200, json.dumps(body)))
    client(server).messages.create(model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "hi"}])
    attrs = aspans.attrs()
    assert attrs["gen_ai.usage.input_tokens"] == 1210
    assert attrs["gen_ai.usage.cache_read.input_tokens"] == 1000
    assert attrs["gen_ai.usage.cache_write.input_tokens"] == 200
    assert "gen_ai.usage.cache_creation.input_tokens" not in attrs  # the name before the conventions renamed it
    assert attrs["gen_ai.usage.output_tokens"] == 3
    assert attrs["gen_ai.response.finish_reasons"] == ("max_tokens",)
    assert attrs["gen_ai.output.messages"][0]["finish_reason"] == "length"


# --- streams and the stream() helper -------------------------------------------------------------------


def test_stream_helper_text_stream_and_final_message(aspans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.text("Paris is sunny today."))
    sdk = client(server)
    with sdk.messages.stream(model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Weather?"}]) as stream:
        assert aspans.finished() == []  # the span starts when the helper sends the request, ends when it closes
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == final.content[0].text == "Paris is sunny today."
    attrs = aspans.attrs()
    assert attrs["gen_ai.output.messages"] == [
        {"role": "assistant", "parts": [{"type": "text", "content": text}], "finish_reason": "stop"}
    ]
    assert attrs["gen_ai.response.id"] == final.id
    assert attrs["gen_ai.usage.output_tokens"] == final.usage.output_tokens
    assert attrs["gen_ai.usage.input_tokens"] == final.usage.input_tokens


def test_stream_helper_tool_calls(aspans: Spans, server: MockLLMServer) -> None:
    server.script(
        Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"}), ToolCallSpec("get_weather", {"city": "Tokyo"})])
    )
    with client(server).messages.stream(
        model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Weather?"}], tools=TOOLS
    ) as stream:
        final = stream.get_final_message()
    assert aspans.attrs()["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": block.id, "name": block.name, "arguments": block.input}
                for block in final.content
            ],
            "finish_reason": "tool_call",
        }
    ]


def test_stream_helper_early_exit_ends_span_at_once(aspans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.text("A long answer " * 20))
    with client(server).messages.stream(model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Hi"}]) as s:
        next(iter(s))
        assert aspans.finished() == []
    span = aspans.one()  # closed by the helper's exit, not left to the garbage collector
    assert span.status.status_code == StatusCode.UNSET
    assert aspans.attrs(span)["gen_ai.response.id"] == "msg_mock_1"


def test_early_break_then_garbage_collected(aspans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.text("A long answer " * 20))
    stream = client(server).messages.create(
        model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Hi"}], stream=True
    )
    for _ in stream:
        break
    assert aspans.finished() == []
    del stream
    gc.collect()
    assert aspans.attrs()["gen_ai.output.messages"][0]["finish_reason"] == ""  # cut before message_delta


def test_broken_stream(aspans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.broken(after_events=4, reply=Reply.text("This reply is cut short by a dropped connection.")))
    stream = client(server).messages.create(
        model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Hi"}], stream=True
    )
    with pytest.raises(Exception) as info:
        for _ in stream:
            pass
    span = aspans.one()
    assert span.status.status_code == StatusCode.ERROR
    attrs = aspans.attrs(span)
    assert attrs["error.type"].endswith(type(info.value).__qualname__)
    assert attrs["gen_ai.response.id"] == "msg_mock_1"
    assert attrs["gen_ai.output.messages"][0]["role"] == "assistant"


def test_server_error_reaches_user_and_span(aspans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.error(500, "boom"))
    with pytest.raises(anthropic.InternalServerError) as info:
        client(server).messages.create(model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Hi"}])
    assert info.value.status_code == 500
    span = aspans.one()
    assert span.status.status_code == StatusCode.ERROR
    assert aspans.attrs(span)["error.type"] == "anthropic.InternalServerError"
    assert [e.name for e in span.events] == ["exception"]


def test_content_capture_off(aspans: Spans, server: MockLLMServer) -> None:
    aspans.use(Runtime(capture_content=False))
    server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})], text="Checking the weather."))
    client(server).messages.create(
        model=MODEL, max_tokens=256, system="Secret system prompt.", messages=HISTORY, tools=TOOLS
    )
    attrs = aspans.attrs()
    assert attrs["gen_ai.system_instructions"] == [{"type": "text"}]
    assert attrs["gen_ai.input.messages"] == [
        {
            "role": "user",
            "parts": [
                {"type": "text"},
                {"type": "blob", "modality": "image", "mime_type": "image/png"},
                {"type": "uri", "modality": "image"},
                {"type": "text"},
            ],
        },
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning"},
                {"type": "reasoning"},
                {"type": "text"},
                {"type": "tool_call", "id": "toolu_1", "name": "get_weather"},
                {"type": "tool_call", "id": "toolu_2", "name": "get_weather"},
            ],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "toolu_1"}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "toolu_2"}]},
        {"role": "user", "parts": [{"type": "text"}]},
    ]
    assert attrs["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [{"type": "text"}, {"type": "tool_call", "id": "toolu_mock_1", "name": "get_weather"}],
            "finish_reason": "tool_call",
        }
    ]
    assert "gen_ai.tool.definitions" not in attrs
    dumped = json.dumps({k: str(v) for k, v in aspans.one().attributes.items()})
    for secret in ("Secret", "Paris", "sunny", "Fahrenheit", PNG, "cat.jpg", "memo", "Checking", "I should"):
        assert secret not in dumped


# --- raw and streaming responses, beta, async ----------------------------------------------------------


def test_with_raw_response(aspans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.text("Raw."))
    raw = client(server).messages.with_raw_response.create(
        model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Hi"}]
    )
    assert raw.headers["content-type"].startswith("application/json")
    assert len(aspans.finished()) == 1  # a complete body: the span ends at once
    message = raw.parse()
    assert message is raw.parse()  # the SDK's cached object
    assert aspans.attrs()["gen_ai.output.messages"][0]["parts"] == [{"type": "text", "content": "Raw."}]


def test_with_raw_response_stream(aspans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.text("Raw stream."))
    raw = client(server).messages.with_raw_response.create(
        model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Hi"}], stream=True
    )
    assert aspans.finished() == []
    list(raw.parse())
    assert aspans.attrs()["gen_ai.output.messages"][0]["parts"] == [{"type": "text", "content": "Raw stream."}]


def test_with_streaming_response_is_left_alone(aspans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.text("Bytes."))
    with client(server).messages.with_streaming_response.create(
        model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Hi"}]
    ) as response:
        assert json.loads(response.read())["content"][0]["text"] == "Bytes."
    attrs = aspans.attrs()
    assert attrs["gen_ai.request.model"] == MODEL
    assert "gen_ai.output.messages" not in attrs  # the user reads the body; spanfold does not


def test_beta_messages_create_and_stream(aspans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.text("Beta."), Reply.text("Beta stream."))
    sdk = client(server)
    message = sdk.beta.messages.create(model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Hi"}])
    with sdk.beta.messages.stream(model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Hi"}]) as s:
        streamed = s.get_final_text()
    assert (message.content[0].text, streamed) == ("Beta.", "Beta stream.")
    texts = [aspans.attrs(s)["gen_ai.output.messages"][0]["parts"][0]["content"] for s in aspans.finished()]
    assert texts == ["Beta.", "Beta stream."]


def test_parse(aspans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.text('{"city": "Paris"}'))
    parsed = client(server).messages.parse(model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Hi"}])
    assert parsed.content[0].text == '{"city": "Paris"}'
    assert aspans.attrs()["gen_ai.output.messages"][0]["parts"] == [{"type": "text", "content": '{"city": "Paris"}'}]


async def test_async_create_stream_raw_and_helper(aspans: Spans, server: MockLLMServer) -> None:
    server.script(
        Reply.text("One."),
        Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]),
        Reply.text("Three."),
        Reply.text("Four."),
        Reply.text("Five."),
    )
    sdk = aclient(server)
    user = [{"role": "user", "content": "Hi"}]
    await sdk.messages.create(model=MODEL, max_tokens=256, messages=user)
    stream = await sdk.messages.create(model=MODEL, max_tokens=256, messages=user, tools=TOOLS, stream=True)
    assert isinstance(stream, anthropic.AsyncStream)
    async for _ in stream:
        pass
    raw = await sdk.messages.with_raw_response.create(model=MODEL, max_tokens=256, messages=user)
    assert (await raw.parse()).content[0].text == "Three."
    raw_stream = await sdk.messages.with_raw_response.create(model=MODEL, max_tokens=256, messages=user, stream=True)
    async for _ in await raw_stream.parse():
        pass
    async with sdk.messages.stream(model=MODEL, max_tokens=256, messages=user) as helper:
        chunks = [text async for text in helper.text_stream]
    assert chunks and "".join(chunks) == "Five."
    outputs = [aspans.attrs(s)["gen_ai.output.messages"][0]["parts"] for s in aspans.finished()]
    assert outputs == [
        [{"type": "text", "content": "One."}],
        [{"type": "tool_call", "id": "toolu_mock_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
        [{"type": "text", "content": "Three."}],
        [{"type": "text", "content": "Four."}],
        [{"type": "text", "content": "Five."}],
    ]


async def test_async_concurrent_calls_do_not_mix(aspans: Spans, server: MockLLMServer) -> None:
    server.respond_with(scenarios.echo)
    sdk = aclient(server)

    async def ask(text: str) -> None:
        async with sdk.messages.stream(model=MODEL, max_tokens=256, messages=[{"role": "user", "content": text}]) as s:
            await s.get_final_message()

    await asyncio.gather(*(ask(f"question {i}") for i in range(5)))
    pairs = {
        (a["gen_ai.input.messages"][0]["parts"][0]["content"], a["gen_ai.output.messages"][0]["parts"][0]["content"])
        for a in (aspans.attrs(s) for s in aspans.finished())
    }
    assert pairs == {(f"question {i}", f"You said: question {i}") for i in range(5)}


# --- the SDK's own spans -------------------------------------------------------------------------------


def test_one_model_span_per_call_with_native_tracing(aspans: Spans, server: MockLLMServer) -> None:
    """The SDK traces itself on the same provider: its call span is suppressed under ours, and the trace context
    it propagates names our span."""
    server.script(Reply.text("One."), Reply.text("Two."), Reply.text("Three."))
    sdk = client(server, open_telemetry={"tracer_provider": aspans.provider, "traces": {"content_mode": "content"}})
    user = [{"role": "user", "content": "Hi"}]
    sdk.messages.create(model=MODEL, max_tokens=256, messages=user)
    for _ in sdk.messages.create(model=MODEL, max_tokens=256, messages=user, stream=True):
        pass
    with sdk.messages.stream(model=MODEL, max_tokens=256, messages=user) as s:
        s.until_done()
    spans = aspans.finished()
    assert [(s.name, s.instrumentation_scope.name) for s in spans] == [
        (f"chat {MODEL}", "spanfold.instrumentation.anthropic")
    ] * 3
    parents = [r.headers["traceparent"].split("-")[2] for r in server.requests]
    assert parents == [format(s.context.span_id, "016x") for s in spans]


async def test_one_model_span_per_async_call_with_native_tracing(aspans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.text("One."), Reply.text("Two."), Reply.text("Three."))
    sdk = aclient(server, open_telemetry={"tracer_provider": aspans.provider})
    user = [{"role": "user", "content": "Hi"}]
    await sdk.messages.create(model=MODEL, max_tokens=256, messages=user)
    async for _ in await sdk.beta.messages.create(model=MODEL, max_tokens=256, messages=user, stream=True):
        pass
    async with sdk.messages.stream(model=MODEL, max_tokens=256, messages=user) as s:
        await s.until_done()
    spans = aspans.finished()
    assert [s.instrumentation_scope.name for s in spans] == ["spanfold.instrumentation.anthropic"] * 3
    parents = [r.headers["traceparent"].split("-")[2] for r in server.requests]
    assert parents == [format(s.context.span_id, "016x") for s in spans]


def test_native_spans_without_spanfold(server: MockLLMServer) -> None:
    """Uninstrumented, the SDK emits one ``anthropic.messages.create`` span per call (what the native dialect reads)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    server.script(Reply.text("Native."))
    sdk = client(server, open_telemetry={"tracer_provider": provider})
    sdk.messages.create(model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Hi"}])
    (span,) = exporter.get_finished_spans()
    assert span.name == "anthropic.messages.create"
    assert span.instrumentation_scope.name == "com.anthropic.sdk.python"
    assert "gen_ai.input.messages" not in span.attributes  # metadata_only by default


def test_tool_runner_spans(aspans: Spans, server: MockLLMServer) -> None:
    """The beta tool runner: its runner and tool spans stay (tool spans get arguments and result), its model calls
    are ours, one per API call."""
    server.respond_with(scenarios.weather_agent)

    @anthropic.beta_tool
    def get_weather(city: str) -> str:
        """Get the current weather in a city."""
        return scenarios.get_weather(city)

    @anthropic.beta_tool
    def convert_temperature(celsius: float, to: str) -> str:
        """Convert a temperature in degrees Celsius to another unit."""
        return scenarios.convert_temperature(celsius, to)

    sdk = client(server, open_telemetry={"tracer_provider": aspans.provider})
    runner = sdk.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=256,
        max_iterations=6,
        thread=False,
        messages=[{"role": "user", "content": "Weather in Paris and Tokyo, in Fahrenheit?"}],
        tools=[get_weather, convert_temperature],
    )
    final = runner.until_done()
    assert "64.4°F" in final.content[0].text
    spans = aspans.finished()
    names = [s.name for s in spans]
    assert names == [
        f"chat {MODEL}",
        "anthropic.custom_tool_use get_weather",
        "anthropic.custom_tool_use get_weather",
        f"chat {MODEL}",
        "anthropic.custom_tool_use convert_temperature",
        f"chat {MODEL}",
        "anthropic.messages.tool_runner",
    ]
    runner_span = spans[-1]
    assert all(s.parent is not None and s.parent.span_id == runner_span.context.span_id for s in spans[:-1])
    tool = dict(spans[1].attributes or {})
    assert tool["gen_ai.tool.call.arguments"] == '{"city":"Paris"}'
    assert tool["gen_ai.tool.call.result"] == "Paris: 18°C, sunny"
    assert tool["gen_ai.tool.call.id"] == "toolu_mock_1"
    last = aspans.attrs(spans[5])
    assert [m["role"] for m in last["gen_ai.input.messages"]] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
    ]


def _run_tool_runner(aspans: Spans, server: MockLLMServer) -> list[dict[str, Any]]:
    """The weather agent through the beta tool runner; the attributes of its tool spans."""
    server.respond_with(scenarios.weather_agent)

    @anthropic.beta_tool
    def get_weather(city: str) -> str:
        """Get the current weather in a city."""
        return scenarios.get_weather(city)

    @anthropic.beta_tool
    def convert_temperature(celsius: float, to: str) -> str:
        """Convert a temperature in degrees Celsius to another unit."""
        return scenarios.convert_temperature(celsius, to)

    sdk = client(server, open_telemetry={"tracer_provider": aspans.provider})
    sdk.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=256,
        max_iterations=6,
        thread=False,
        messages=[{"role": "user", "content": "Weather in Paris and Tokyo, in Fahrenheit?"}],
        tools=[get_weather, convert_temperature],
    ).until_done()
    return [dict(s.attributes or {}) for s in aspans.finished() if s.name.startswith("anthropic.custom_tool_use")]


def test_tool_runner_tool_spans_follow_content_capture(aspans: Spans, server: MockLLMServer) -> None:
    """spanfold's arguments and result on the tool runner's spans: none with capture off, redacted with redaction."""
    aspans.use(Runtime(capture_content=False))
    tools = _run_tool_runner(aspans, server)
    assert len(tools) == 3
    for attrs in tools:
        assert "gen_ai.tool.call.arguments" not in attrs and "gen_ai.tool.call.result" not in attrs
    aspans.exporter.clear()
    aspans.use(Runtime(redaction=Redaction(lambda text: text.replace("Paris", "[city]"), builtin=False)))
    first = _run_tool_runner(aspans, server)[0]
    assert first["gen_ai.tool.call.arguments"] == '{"city":"[city]"}'
    assert first["gen_ai.tool.call.result"] == "[city]: 18°C, sunny"


def test_threaded_turns_record_the_previous_message(aspans: Spans, server: MockLLMServer) -> None:
    """Message threads (beta) send only the new messages: the span records which message the turn continues."""
    server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]), Reply.text("Sunny."))
    sdk = client(server)
    thread = sdk.beta.messages.thread(model=MODEL, max_tokens=256, tools=TOOLS)
    first = thread.send({"role": "user", "content": "Weather?"})
    call = first.content[0]
    thread.send({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "sunny"}]})
    one, two = (aspans.attrs(s) for s in aspans.finished())
    assert "anthropic.request.previous_message_id" not in one
    assert two["anthropic.request.previous_message_id"] == first.id
    assert two["gen_ai.input.messages"] == [
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": call.id, "response": "sunny"}]}
    ]


def test_uninstrument_restores_sdk(aspans: Spans) -> None:
    AnthropicInstrumentor().uninstrument()
    try:
        from anthropic import _base_client
        from anthropic.resources.messages.messages import Messages

        assert not isinstance(Messages.__dict__["create"], wrapt.ObjectProxy)
        assert not isinstance(Messages.__dict__["stream"], wrapt.ObjectProxy)
        assert not isinstance(_base_client.start_api_call_span, wrapt.ObjectProxy)
    finally:
        AnthropicInstrumentor().instrument(tracer_provider=aspans.provider, runtime=aspans.settings)

"""OpenAI Responses API spans: the real ``openai`` SDK over real HTTP to the embedded mock server, attributes asserted
exactly."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from typing import Any

import openai
import pydantic
import pytest
from opentelemetry.trace import SpanKind, StatusCode

from spanfold.content.runtime import Runtime
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec, Usage, scenarios

from .conftest import Spans

MODEL = "gpt-4.1-mini"
TOOLS = scenarios.WEATHER_TOOLS_RESPONSES
DEFINITIONS = [
    {"type": "function", "name": t["name"], "description": t["description"], "parameters": t["parameters"]}
    for t in TOOLS
]
PARIS = ToolCallSpec("get_weather", {"city": "Paris"})
TOKYO = ToolCallSpec("get_weather", {"city": "Tokyo"})


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer() as srv:
        yield srv


def client(server: MockLLMServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)


def aclient(server: MockLLMServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)


def call_part(call_id: str, spec: ToolCallSpec) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": spec.name, "arguments": spec.arguments}


def response_json(output: list[dict[str, Any]], **extra: Any) -> str:
    """A complete Responses API body around ``output`` items (for shapes the mock does not render)."""
    body = {
        "id": "resp_raw_1",
        "object": "response",
        "created_at": 1735689600,
        "status": "completed",
        "model": MODEL,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 40,
            "input_tokens_details": {"cached_tokens": 32},
            "output_tokens": 12,
            "output_tokens_details": {"reasoning_tokens": 5},
            "total_tokens": 52,
        },
        **extra,
    }
    return json.dumps(body)


def test_create_with_parallel_function_calls(spans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.tools([PARIS, TOKYO], usage=Usage(31, 14)))
    response = client(server).responses.create(
        model=MODEL, instructions="Be brief.", input="Weather in Paris and Tokyo?", tools=TOOLS, temperature=0.5
    )
    assert isinstance(response, openai.types.responses.Response)  # the SDK's own object, untouched
    span = spans.one()
    assert span.name == f"chat {MODEL}"
    assert span.kind == SpanKind.CLIENT
    calls = [item.call_id for item in response.output]
    assert spans.attrs(span) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": MODEL,
        "gen_ai.request.temperature": 0.5,
        "server.address": "127.0.0.1",
        "server.port": server.port,
        "gen_ai.system_instructions": [{"type": "text", "content": "Be brief."}],
        "gen_ai.input.messages": [
            {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris and Tokyo?"}]}
        ],
        "gen_ai.tool.definitions": DEFINITIONS,
        "gen_ai.response.id": response.id,
        "gen_ai.response.model": MODEL,
        "gen_ai.response.finish_reasons": ("tool_call",),
        "gen_ai.output.messages": [
            {
                "role": "assistant",
                "parts": [call_part(calls[0], PARIS), call_part(calls[1], TOKYO)],
                "finish_reason": "tool_call",
            }
        ],
        "gen_ai.usage.input_tokens": 31,
        "gen_ai.usage.output_tokens": 14,
    }


def test_history_items_map_like_outputs(spans: Spans, server: MockLLMServer) -> None:
    """The output items re-sent as input give the very messages the output did (the fold recognises them), then
    each ``function_call_output`` is a tool message."""
    server.script(Reply.tools([PARIS, TOKYO]), Reply.text("Sunny and cloudy."))
    sdk = client(server)
    items: list[Any] = [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Weather here?"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
                {"type": "input_image", "image_url": "https://example.com/map.png", "detail": "low"},
                {"type": "input_image", "file_id": "file_123", "detail": "auto"},
            ],
        }
    ]
    first = sdk.responses.create(model=MODEL, input=items, tools=TOOLS)
    items += first.output
    for item in first.output:
        items.append({"type": "function_call_output", "call_id": item.call_id, "output": f"{item.call_id}: fine"})
    sdk.responses.create(model=MODEL, input=items, tools=TOOLS)
    one, two = (spans.attrs(s) for s in spans.finished())
    user = {
        "role": "user",
        "parts": [
            {"type": "text", "content": "Weather here?"},
            {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBORw0KGgo="},
            {"type": "uri", "modality": "image", "uri": "https://example.com/map.png"},
            {"type": "file", "modality": "image", "file_id": "file_123"},
        ],
    }
    assert one["gen_ai.input.messages"] == [user]
    output = one["gen_ai.output.messages"][0]
    assert two["gen_ai.input.messages"] == [
        user,
        {"role": "assistant", "parts": output["parts"]},
        *(
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": c.call_id, "response": f"{c.call_id}: fine"}],
            }
            for c in first.output
        ),
    ]
    assert two["gen_ai.output.messages"] == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Sunny and cloudy."}], "finish_reason": "stop"}
    ]


def test_reasoning_and_built_in_tools(spans: Spans, server: MockLLMServer) -> None:
    """Reasoning summaries are reasoning parts; server-side tools fold as a call followed by its result."""
    output = [
        {
            "id": "rs_1",
            "type": "reasoning",
            "summary": [
                {"type": "summary_text", "text": "Search first."},
                {"type": "summary_text", "text": "Then read."},
            ],
        },
        {
            "id": "ws_1",
            "type": "web_search_call",
            "status": "completed",
            "action": {
                "type": "search",
                "query": "paris weather",
                "sources": [{"type": "url", "url": "https://w.example"}],
            },
        },
        {
            "id": "fs_1",
            "type": "file_search_call",
            "status": "completed",
            "queries": ["forecast"],
            "results": [{"file_id": "file_1", "filename": "f.txt", "score": 0.9, "text": "Rain later."}],
        },
        {
            "id": "ci_1",
            "type": "code_interpreter_call",
            "status": "completed",
            "code": "print(18 * 9 / 5 + 32)",
            "container_id": "cntr_1",
            "outputs": [{"type": "logs", "logs": "64.4"}],
        },
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "18°C (64.4°F), rain later.", "annotations": []}],
        },
    ]
    server.script(Reply.raw(200, response_json(output)))
    client(server).responses.create(model=MODEL, input="Weather?", tools=[{"type": "web_search"}])
    attrs = spans.attrs()
    stop = {"finish_reason": "stop"}
    web_search = {"type": "search", "query": "paris weather", "sources": [{"type": "url", "url": "https://w.example"}]}
    assert attrs["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "Search first.\n\nThen read."},
                {"type": "tool_call", "id": "ws_1", "name": "web_search", "arguments": {"action": web_search}},
            ],
            **stop,
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "ws_1", "response": {"status": "completed"}}],
            **stop,
        },
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "fs_1", "name": "file_search", "arguments": {"queries": ["forecast"]}}
            ],
            **stop,
        },
        {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": "fs_1",
                    "response": {"results": output[2]["results"], "status": "completed"},
                }
            ],
            **stop,
        },
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "ci_1",
                    "name": "code_interpreter",
                    "arguments": {"code": "print(18 * 9 / 5 + 32)", "container_id": "cntr_1"},
                }
            ],
            **stop,
        },
        {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": "ci_1",
                    "response": {"outputs": [{"type": "logs", "logs": "64.4"}], "status": "completed"},
                }
            ],
            **stop,
        },
        {"role": "assistant", "parts": [{"type": "text", "content": "18°C (64.4°F), rain later."}], **stop},
    ]
    assert attrs["gen_ai.tool.definitions"] == [{"type": "web_search"}]
    assert attrs["gen_ai.usage.cache_read.input_tokens"] == 32


def test_previous_response_id_and_conversation(spans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.tools([PARIS]), Reply.text("Sunny."))
    sdk = client(server)
    first = sdk.responses.create(model=MODEL, input="Weather in Paris?", tools=TOOLS)
    call = first.output[0]
    sdk.responses.create(
        model=MODEL,
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "18°C"}],
        tools=TOOLS,
    )
    one, two = (spans.attrs(s) for s in spans.finished())
    assert "openai.request.previous_response_id" not in one
    assert two["openai.request.previous_response_id"] == first.id == one["gen_ai.response.id"]
    assert two["gen_ai.input.messages"] == [
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": call.call_id, "response": "18°C"}]}
    ]


def test_conversation_id(spans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.text("Hi."))
    client(server).responses.create(model=MODEL, input="Hi", conversation="conv_123")
    assert spans.attrs()["gen_ai.conversation.id"] == "conv_123"


def test_stream_prefers_the_completed_response(spans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.tools([PARIS, TOKYO], text="Checking both."))
    stream = client(server).responses.create(model=MODEL, input="Weather?", tools=TOOLS, stream=True)
    assert isinstance(stream, openai.Stream)
    assert spans.finished() == []
    events = list(stream)
    completed = events[-1].response
    assert events[-1].type == "response.completed"
    calls = [item for item in completed.output if item.type == "function_call"]
    attrs = spans.attrs()
    assert attrs["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "Checking both."},
                call_part(calls[0].call_id, PARIS),
                call_part(calls[1].call_id, TOKYO),
            ],
            "finish_reason": "tool_call",
        }
    ]
    assert attrs["gen_ai.response.id"] == completed.id
    assert attrs["gen_ai.usage.output_tokens"] == completed.usage.output_tokens


def test_broken_stream_is_rebuilt_from_item_events(spans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.broken(after_events=12, reply=Reply.tools([PARIS], text="Let me check the weather in Paris.")))
    stream = client(server).responses.create(model=MODEL, input="Weather?", tools=TOOLS, stream=True)
    seen: list[Any] = []
    with pytest.raises(Exception) as info:
        for event in stream:
            seen.append(event)
    assert all(e.type != "response.completed" for e in seen)
    span = spans.one()
    assert span.status.status_code == StatusCode.ERROR
    attrs = spans.attrs(span)
    assert attrs["error.type"].endswith(type(info.value).__qualname__)
    text = "".join(e.delta for e in seen if e.type == "response.output_text.delta")
    assert text
    assert attrs["gen_ai.output.messages"][0]["parts"][0] == {"type": "text", "content": text}
    assert attrs["gen_ai.output.messages"][0]["finish_reason"] == ""
    assert attrs["gen_ai.response.id"] == seen[0].response.id


def test_stream_helper(spans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.text("It is sunny in Paris."), Reply.text("A long answer " * 30))
    sdk = client(server)
    with sdk.responses.stream(model=MODEL, input="Weather?", tools=TOOLS) as stream:
        final = stream.get_final_response()
    assert final.output_text == "It is sunny in Paris."
    assert spans.attrs()["gen_ai.output.messages"] == [
        {"role": "assistant", "parts": [{"type": "text", "content": "It is sunny in Paris."}], "finish_reason": "stop"}
    ]
    with sdk.responses.stream(model=MODEL, input="More?") as stream:
        next(iter(stream))
        assert len(spans.finished()) == 1
    assert len(spans.finished()) == 2  # the helper's exit ends the span at once


def test_parse(spans: Spans, server: MockLLMServer) -> None:
    class City(pydantic.BaseModel):
        city: str

    server.script(Reply.text('{"city":"Paris"}'))
    parsed = client(server).responses.parse(model=MODEL, input="Which city?", text_format=City)
    assert parsed.output_parsed == City(city="Paris")
    attrs = spans.attrs()
    assert attrs["gen_ai.output.type"] == "json"
    assert attrs["gen_ai.output.messages"][0]["parts"] == [{"type": "text", "content": '{"city":"Paris"}'}]


def test_with_raw_response(spans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.text("Raw."))
    raw = client(server).responses.with_raw_response.create(model=MODEL, input="Hi")
    assert raw.parse().output_text == "Raw."
    assert spans.attrs()["gen_ai.output.messages"][0]["parts"] == [{"type": "text", "content": "Raw."}]


def test_early_break_then_garbage_collected(spans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.text("A long answer " * 30))
    stream = client(server).responses.create(model=MODEL, input="Hi", stream=True)
    for _ in stream:
        break
    assert spans.finished() == []
    del stream
    gc.collect()
    assert spans.one().status.status_code == StatusCode.UNSET


def test_server_error_reaches_user_and_span(spans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.error(500, "boom"))
    with pytest.raises(openai.InternalServerError) as info:
        client(server).responses.create(model=MODEL, input="Hi")
    assert info.value.status_code == 500
    span = spans.one()
    assert span.status.status_code == StatusCode.ERROR
    assert spans.attrs(span)["error.type"] == "openai.InternalServerError"


def test_content_capture_off(spans: Spans, server: MockLLMServer) -> None:
    spans.use(Runtime(capture_content=False))
    server.script(Reply.tools([PARIS], text="Checking Paris."))
    client(server).responses.create(
        model=MODEL,
        instructions="Secret instructions.",
        input=[
            {"role": "user", "content": "Weather in Paris?"},
            {"type": "function_call", "call_id": "call_0", "name": "get_weather", "arguments": '{"city":"Rome"}'},
            {"type": "function_call_output", "call_id": "call_0", "output": "Rome: 25°C"},
        ],
        tools=TOOLS,
    )
    attrs = spans.attrs()
    assert attrs["gen_ai.system_instructions"] == [{"type": "text"}]
    assert attrs["gen_ai.input.messages"] == [
        {"role": "user", "parts": [{"type": "text"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_0", "name": "get_weather"}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_0"}]},
    ]
    assert attrs["gen_ai.output.messages"][0]["parts"][0] == {"type": "text"}
    assert attrs["gen_ai.output.messages"][0]["parts"][1]["name"] == "get_weather"
    assert "gen_ai.tool.definitions" not in attrs
    dumped = json.dumps({k: str(v) for k, v in spans.one().attributes.items()})
    for secret in ("Secret", "Paris", "Rome", "25°C", "Checking"):
        assert secret not in dumped


async def test_async_create_stream_and_helper(spans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.text("One."), Reply.tools([PARIS]), Reply.text("Three."))
    sdk = aclient(server)
    await sdk.responses.create(model=MODEL, input="Hi")
    stream = await sdk.responses.create(model=MODEL, input="Hi", tools=TOOLS, stream=True)
    assert isinstance(stream, openai.AsyncStream)
    async for _ in stream:
        pass
    async with sdk.responses.stream(model=MODEL, input="Hi") as helper:
        final = await helper.get_final_response()
    assert final.output_text == "Three."
    outputs = [spans.attrs(s)["gen_ai.output.messages"][0]["parts"] for s in spans.finished()]
    assert outputs[0] == [{"type": "text", "content": "One."}]
    assert outputs[1][0]["name"] == "get_weather"
    assert outputs[2] == [{"type": "text", "content": "Three."}]

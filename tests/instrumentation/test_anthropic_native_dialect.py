"""The anthropic SDK's own spans (no spanfold instrumentation), read by ``exporter.dialect_anthropic_native`` into the
contract's attributes: content mode on and off, plain calls, streams and the tool runner."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanfold.exporter.dialects import anthropic_native as native
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec, Usage, scenarios

MODEL = "claude-mock-4"
HISTORY: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Weather in Paris? See the map."},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        ],
    },
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Paris: 18°C, sunny"},
            {"type": "text", "text": "In Fahrenheit?"},
        ],
    },
]


class Native:
    """An SDK client tracing itself to an in-memory exporter."""

    def __init__(self, server: MockLLMServer, content: bool) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        mode = "content" if content else "metadata_only"
        self.client = anthropic.Anthropic(
            api_key="sk-ant-test",
            base_url=server.anthropic_base_url,
            max_retries=0,
            open_telemetry={"tracer_provider": provider, "traces": {"content_mode": mode}},
        )

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def normalized(self, span: ReadableSpan) -> tuple[str, dict[str, Any]]:
        assert native.is_native(span.instrumentation_scope.name if span.instrumentation_scope else None, span.name)
        name, attrs = native.normalize(span.name, dict(span.attributes or {}))
        for key in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"):
            if key in attrs:
                attrs[key] = json.loads(attrs[key])
        return name, attrs


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer() as srv:
        yield srv


def test_content_mode_model_span(server: MockLLMServer) -> None:
    sdk = Native(server, content=True)
    server.script(
        Reply.tools([ToolCallSpec("convert_temperature", {"celsius": 18, "to": "fahrenheit"})], usage=Usage(50, 9))
    )
    sdk.client.messages.create(model=MODEL, max_tokens=256, system="Be brief.", messages=HISTORY)
    (span,) = sdk.spans()
    name, attrs = sdk.normalized(span)
    assert name == f"chat {MODEL}"
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.system_instructions"] == [{"type": "text", "content": "Be brief."}]
    assert attrs["gen_ai.input.messages"] == [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "Weather in Paris? See the map."},
                {"type": "blob", "modality": "image"},
            ],
        },
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "toolu_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "toolu_1", "response": "Paris: 18°C, sunny"}]},
        {"role": "user", "parts": [{"type": "text", "content": "In Fahrenheit?"}]},
    ]
    assert attrs["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "toolu_mock_1",
                    "name": "convert_temperature",
                    "arguments": {"celsius": 18, "to": "fahrenheit"},
                }
            ],
            "finish_reason": "tool_call",
        }
    ]
    assert attrs["gen_ai.response.finish_reasons"] == ["tool_use"]
    assert attrs["gen_ai.usage.input_tokens"] == 50
    assert attrs["gen_ai.usage.output_tokens"] == 9
    assert attrs["gen_ai.usage.cache_write.input_tokens"] == 0  # the SDK's name is the conventions' now
    assert "gen_ai.usage.cache_creation.input_tokens" not in attrs


def test_metadata_only_model_span(server: MockLLMServer) -> None:
    sdk = Native(server, content=False)
    server.script(Reply.text("Sunny."))
    sdk.client.messages.create(model=MODEL, max_tokens=256, messages=HISTORY)
    (span,) = sdk.spans()
    name, attrs = sdk.normalized(span)
    assert name == f"chat {MODEL}"
    assert not {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"} & set(attrs)
    assert attrs["gen_ai.response.finish_reasons"] == ["end_turn"]
    assert attrs["gen_ai.response.id"] == "msg_mock_1"
    assert attrs["gen_ai.request.model"] == MODEL


def test_stream_with_and_without_helper(server: MockLLMServer) -> None:
    """Content mode: the helper's stream has output content; a raw stream does not (the SDK records none)."""
    sdk = Native(server, content=True)
    server.script(Reply.text("Helper."), Reply.text("Raw."))
    user = [{"role": "user", "content": "Hi"}]
    with sdk.client.messages.stream(model=MODEL, max_tokens=256, messages=user) as stream:
        stream.until_done()
    for _ in sdk.client.messages.create(model=MODEL, max_tokens=256, messages=user, stream=True):
        pass
    helper, raw = (sdk.normalized(s)[1] for s in sdk.spans())
    assert helper["gen_ai.output.messages"] == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Helper."}], "finish_reason": "stop"}
    ]
    assert "gen_ai.output.messages" not in raw
    assert raw["gen_ai.input.messages"] == [{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]


def test_error_span(server: MockLLMServer) -> None:
    sdk = Native(server, content=False)
    server.script(Reply.error(529, "Overloaded", type="overloaded_error"))
    with pytest.raises(anthropic.APIStatusError):
        sdk.client.messages.create(model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Hi"}])
    (span,) = sdk.spans()
    _, attrs = sdk.normalized(span)
    assert span.status.is_ok is False
    assert attrs["error.type"] == "overloaded_error"


@pytest.mark.parametrize("content", [True, False])
def test_tool_runner_spans(server: MockLLMServer, content: bool) -> None:
    sdk = Native(server, content=content)
    server.respond_with(scenarios.weather_agent)

    @anthropic.beta_tool
    def get_weather(city: str) -> str:
        """Get the current weather in a city."""
        return scenarios.get_weather(city)

    @anthropic.beta_tool
    def convert_temperature(celsius: float, to: str) -> str:
        """Convert a temperature in degrees Celsius to another unit."""
        return scenarios.convert_temperature(celsius, to)

    runner = sdk.client.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=256,
        max_iterations=6,
        thread=False,
        messages=[{"role": "user", "content": "Weather in Paris and Tokyo, in Fahrenheit?"}],
        tools=[get_weather, convert_temperature],
    )
    runner.until_done()
    normalized = [sdk.normalized(s) for s in sdk.spans()]
    assert [name for name, _ in normalized] == [
        f"chat {MODEL}",
        "execute_tool get_weather",
        "execute_tool get_weather",
        f"chat {MODEL}",
        "execute_tool convert_temperature",
        f"chat {MODEL}",
        "anthropic.messages.tool_runner",
    ]
    _, tool = normalized[1]
    assert tool["gen_ai.operation.name"] == "execute_tool"
    assert tool["gen_ai.tool.call.id"] == "toolu_mock_1"
    assert normalized[-1][1]["gen_ai.operation.name"] == "invoke_agent"
    if content:
        assert tool["gen_ai.tool.call.result"] == "Paris: 18°C, sunny"
        assert json.loads(tool["gen_ai.tool.call.arguments"]) == {"city": "Paris"}
        assert "anthropic.tool_result.content" not in tool
        last = normalized[5][1]
        assert [m["role"] for m in last["gen_ai.input.messages"]] == [
            "user",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "tool",
        ]
    else:
        assert "gen_ai.tool.call.result" not in tool and "gen_ai.tool.call.arguments" not in tool

"""Bedrock Runtime spans, attribute by attribute: the real botocore / aiobotocore clients, over real HTTP to the mock
server or answered by botocore's own ``Stubber`` (for shapes the mock does not produce: reasoning, cache usage, other
model families). Also what must not change: other AWS clients, the user's bodies and exceptions."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.response import StreamingBody
from botocore.stub import Stubber
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from spanfold import counters
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.bedrock.patches import BedrockInstrumentor
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec, scenarios

MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"
JSON_ATTRS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.definitions",
    "gen_ai.system_instructions",
)


class Traced:
    def __init__(self, exporter: InMemorySpanExporter, provider: TracerProvider) -> None:
        self.exporter = exporter
        self.provider = provider

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def attrs(self) -> dict[str, Any]:
        (span,) = self.spans()
        raw = dict(span.attributes or {})
        for key in JSON_ATTRS:
            if key in raw:
                raw[key] = json.loads(str(raw[key]))
        return raw


def _instrument(capture: bool) -> Iterator[Traced]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = BedrockInstrumentor()
    instrumentor.instrument(
        tracer_provider=provider, runtime=Runtime(capture_content=capture, full_tool_definitions=True)
    )
    try:
        yield Traced(exporter, provider)
    finally:
        instrumentor.uninstrument()


@pytest.fixture
def traced() -> Iterator[Traced]:
    yield from _instrument(True)


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer(scenarios.weather_agent) as srv:
        yield srv


def client_for(url: str = "http://127.0.0.1:9", service: str = "bedrock-runtime") -> Any:
    return boto3.client(
        service,
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret",
        config=Config(retries={"total_max_attempts": 1}),
    )


# --- only model calls of Bedrock Runtime clients ----------------------------------------------------


def test_other_aws_clients_are_not_wrapped_and_get_no_span(traced: Traced) -> None:
    s3, bedrock = client_for(service="s3"), client_for()
    assert "_make_api_call" not in vars(type(s3))  # S3 runs botocore's own method: no wrapper at all
    assert "_make_api_call" in vars(type(bedrock))
    with Stubber(s3) as stub:
        stub.add_response("list_buckets", {"Buckets": []})
        assert s3.list_buckets()["Buckets"] == []
    with Stubber(bedrock) as stub:  # a Bedrock Runtime call that is not a model call
        stub.add_response("list_async_invokes", {"asyncInvokeSummaries": []})
        assert bedrock.list_async_invokes()["asyncInvokeSummaries"] == []
    assert traced.spans() == []


def test_uninstrument_restores_the_client_classes(traced: Traced) -> None:
    bedrock = client_for()
    BedrockInstrumentor().uninstrument()
    assert "_make_api_call" not in vars(type(bedrock))
    assert "_make_api_call" not in vars(type(client_for()))
    BedrockInstrumentor().instrument(
        tracer_provider=traced.provider, runtime=Runtime(capture_content=True, full_tool_definitions=True)
    )


# --- Converse shapes -----------------------------------------------------------------------------------


def test_converse_request_and_response_shapes(traced: Traced) -> None:
    client = client_for()
    response = {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"reasoningContent": {"reasoningText": {"text": "Think.", "signature": "sig"}}},
                    {"text": "Done."},
                ],
            }
        },
        "stopReason": "max_tokens",
        "usage": {
            "inputTokens": 10,
            "outputTokens": 5,
            "totalTokens": 45,
            "cacheReadInputTokens": 20,
            "cacheWriteInputTokens": 10,
        },
        "metrics": {"latencyMs": 1},
        "ResponseMetadata": {"RequestId": "req-1", "HTTPStatusCode": 200, "HTTPHeaders": {}},
    }
    messages = [
        {
            "role": "user",
            "content": [
                {"text": "Read this."},
                {"document": {"format": "pdf", "name": "doc", "source": {"bytes": b"%PDF"}}},
                {"image": {"format": "jpeg", "source": {"s3Location": {"uri": "s3://b/cat.jpg"}}}},
            ],
        },
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "lookup", "input": {"q": 1}}}]},
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "t1", "content": [{"json": {"a": 1}}], "status": "success"}},
                {"text": "And?"},
            ],
        },
    ]
    with Stubber(client) as stub:
        stub.add_response("converse", response)
        result = client.converse(
            modelId=MODEL,
            system=[{"text": "Be brief."}, {"cachePoint": {"type": "default"}}],
            messages=messages,
            inferenceConfig={"maxTokens": 100, "temperature": 0.5, "topP": 0.9, "stopSequences": ["END"]},
            toolConfig={"tools": scenarios.WEATHER_TOOLS_BEDROCK[:1]},
        )
    assert result["output"]["message"]["content"][1] == {"text": "Done."}
    attrs = traced.attrs()
    assert attrs["gen_ai.provider.name"] == "aws.bedrock"
    assert attrs["gen_ai.operation.name"] == "chat"
    assert traced.spans()[0].name == f"chat {MODEL}"
    assert attrs["gen_ai.request.model"] == MODEL
    assert (attrs["gen_ai.request.max_tokens"], attrs["gen_ai.request.temperature"]) == (100, 0.5)
    assert attrs["gen_ai.request.top_p"] == 0.9
    assert attrs["gen_ai.request.stop_sequences"] == ("END",)
    assert attrs["gen_ai.system_instructions"] == [{"type": "text", "content": "Be brief."}]
    assert attrs["gen_ai.input.messages"] == [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "Read this."},
                {"type": "blob", "modality": "document", "mime_type": "application/pdf", "content": "JVBERg=="},
                {"type": "uri", "modality": "image", "mime_type": "image/jpeg", "uri": "s3://b/cat.jpg"},
            ],
        },
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "t1", "name": "lookup", "arguments": {"q": 1}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "t1", "response": '{"a":1}'}]},
        {"role": "user", "parts": [{"type": "text", "content": "And?"}]},
    ]
    assert attrs["gen_ai.tool.definitions"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": scenarios.WEATHER_TOOLS_BEDROCK[0]["toolSpec"]["inputSchema"]["json"],
        }
    ]
    assert attrs["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [{"type": "reasoning", "content": "Think."}, {"type": "text", "content": "Done."}],
            "finish_reason": "length",
        }
    ]
    assert attrs["gen_ai.response.finish_reasons"] == ("max_tokens",)
    assert attrs["gen_ai.usage.input_tokens"] == 40  # input + cache read + cache write
    assert attrs["gen_ai.usage.cache_read.input_tokens"] == 20
    assert attrs["gen_ai.usage.cache_write.input_tokens"] == 10
    assert attrs["gen_ai.usage.output_tokens"] == 5
    assert attrs["aws.request_id"] == "req-1"


def test_converse_stream_events_accumulated(traced: Traced, server: MockLLMServer) -> None:
    server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})], text="Let me check."))
    response = client_for(server.url).converse_stream(
        modelId=MODEL, messages=[{"role": "user", "content": [{"text": "Weather?"}]}]
    )
    assert traced.spans() == []  # ends with the stream
    events = list(response["stream"])
    assert events[0] == {"messageStart": {"role": "assistant"}}
    attrs = traced.attrs()
    assert attrs["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "Let me check."},
                {"type": "tool_call", "id": "tooluse_mock_1", "name": "get_weather", "arguments": {"city": "Paris"}},
            ],
            "finish_reason": "tool_call",
        }
    ]
    assert attrs["gen_ai.usage.output_tokens"] > 0
    assert attrs["server.address"] == "127.0.0.1" and attrs["server.port"] == server.port


def test_errors_are_recorded_and_the_users_exception_untouched(traced: Traced, server: MockLLMServer) -> None:
    server.script(Reply.error(400, "The provided model identifier is invalid."))
    client = client_for(server.url)
    with pytest.raises(client.exceptions.ValidationException) as info:
        client.converse(modelId="nope", messages=[{"role": "user", "content": [{"text": "Hi"}]}])
    assert info.value.response["Error"]["Message"] == "The provided model identifier is invalid."
    (span,) = traced.spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "botocore.errorfactory.ValidationException"  # type: ignore[index]


def test_content_capture_off_keeps_the_structure_only() -> None:
    for traced in _instrument(False):
        client = client_for()
        with Stubber(client) as stub:
            stub.add_response(
                "converse",
                {
                    "output": {"message": {"role": "assistant", "content": [{"text": "secret answer"}]}},
                    "stopReason": "end_turn",
                    "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                    "metrics": {"latencyMs": 1},
                },
            )
            client.converse(
                modelId=MODEL,
                system=[{"text": "secret system"}],
                messages=[{"role": "user", "content": [{"text": "secret question"}]}],
            )
        text = json.dumps(dict(traced.spans()[0].attributes or {}))
        assert "secret" not in text
        assert traced.attrs()["gen_ai.input.messages"] == [{"role": "user", "parts": [{"type": "text"}]}]


# --- invoke_model: the body the user reads ------------------------------------------------------------


def claude_body(**extra: Any) -> dict[str, Any]:
    return {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "Hi"}],
        **extra,
    }


def test_invoke_body_read_in_pieces_is_the_same_body_and_the_span_sees_it(
    traced: Traced, server: MockLLMServer
) -> None:
    server.script(Reply.text("Hello from Claude."), Reply.text("Hello from Claude."))
    client = client_for(server.url)
    whole = client.invoke_model(modelId=MODEL, body=json.dumps(claude_body()))["body"].read()
    traced.exporter.clear()
    response = client.invoke_model(modelId=MODEL, body=json.dumps(claude_body()))
    body = response["body"]
    assert isinstance(body, StreamingBody)
    pieces = []
    while piece := body.read(7):
        pieces.append(piece)
    assert json.loads(b"".join(pieces))["content"] == json.loads(whole)["content"]
    attrs = traced.attrs()
    assert attrs["gen_ai.input.messages"] == [{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]
    assert attrs["gen_ai.output.messages"][0]["parts"] == [{"type": "text", "content": "Hello from Claude."}]
    assert attrs["gen_ai.response.id"] == "msg_mock_2"
    assert attrs["gen_ai.request.max_tokens"] == 64
    assert attrs["aws.request_id"] == "req_mock_2"


def test_invoke_body_iterated_by_lines(traced: Traced, server: MockLLMServer) -> None:
    server.script(Reply.text("Lines."))
    response = client_for(server.url).invoke_model(modelId=MODEL, body=json.dumps(claude_body()).encode())
    lines = list(response["body"].iter_lines())
    assert json.loads(b"".join(lines))["content"] == [{"type": "text", "text": "Lines."}]
    assert traced.attrs()["gen_ai.output.messages"][0]["parts"] == [{"type": "text", "content": "Lines."}]


def test_invoke_body_never_read_ends_the_span_on_close_with_header_usage(traced: Traced, server: MockLLMServer) -> None:
    server.script(Reply.text("Unread."))
    response = client_for(server.url).invoke_model(modelId=MODEL, body=json.dumps(claude_body()))
    assert traced.spans() == []
    response["body"].close()
    attrs = traced.attrs()
    assert "gen_ai.output.messages" not in attrs
    assert attrs["gen_ai.usage.input_tokens"] > 0 and attrs["gen_ai.usage.output_tokens"] > 0  # from the headers


def test_invoke_file_like_request_body_is_sent_unchanged(traced: Traced, server: MockLLMServer) -> None:
    raw = json.dumps(claude_body()).encode()
    stream = io.BytesIO(b"xx" + raw)
    stream.seek(2)
    server.script(Reply.text("Ok."))
    client_for(server.url).invoke_model(modelId=MODEL, body=stream)["body"].read()
    assert server.last_request.body == json.loads(raw)
    assert traced.attrs()["gen_ai.input.messages"][0]["parts"] == [{"type": "text", "content": "Hi"}]


def test_invoke_body_cut_off_records_the_error(traced: Traced, server: MockLLMServer) -> None:
    server.script(Reply.broken(reply=Reply.text("A long answer cut in half by a dropped connection.")))
    response = client_for(server.url).invoke_model(modelId=MODEL, body=json.dumps(claude_body()))
    with pytest.raises(Exception) as info:
        response["body"].read()
    (span,) = traced.spans()
    assert span.status.status_code is StatusCode.ERROR
    assert str(span.attributes["error.type"]).endswith(type(info.value).__qualname__)  # type: ignore[index]
    assert counters.snapshot().get("faults", 0) == 0


def test_invoke_other_family_gets_model_usage_and_no_content(traced: Traced) -> None:
    client = client_for()
    body = json.dumps({"prompt": "secret prompt", "max_gen_len": 20}).encode()
    answer = json.dumps({"generation": "secret", "prompt_token_count": 3, "generation_token_count": 2}).encode()
    headers = {"x-amzn-bedrock-input-token-count": "3", "x-amzn-bedrock-output-token-count": "2"}
    with Stubber(client) as stub:
        stub.add_response(
            "invoke_model",
            {
                "body": StreamingBody(io.BytesIO(answer), len(answer)),
                "contentType": "application/json",
                "ResponseMetadata": {"RequestId": "r9", "HTTPStatusCode": 200, "HTTPHeaders": headers},
            },
        )
        response = client.invoke_model(modelId="meta.llama3-8b-instruct-v1:0", body=body)
        assert response["body"].read() == answer
    attrs = traced.attrs()
    assert traced.spans()[0].name == "chat meta.llama3-8b-instruct-v1:0"
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (3, 2)
    assert "secret" not in json.dumps(attrs)


def test_invoke_body_usage_completed_from_the_headers(traced: Traced) -> None:
    """A body that reports part of its usage (a Nova body with its input tokens only): the headers give the rest and
    the request id; the body's own count wins."""
    client = client_for()
    body = json.dumps({"messages": [{"role": "user", "content": [{"text": "Hi"}]}]}).encode()
    answer = json.dumps(
        {
            "output": {"message": {"role": "assistant", "content": [{"text": "Hello."}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 5},
        }
    ).encode()
    headers = {"x-amzn-bedrock-input-token-count": "6", "x-amzn-bedrock-output-token-count": "4"}
    with Stubber(client) as stub:
        stub.add_response(
            "invoke_model",
            {
                "body": StreamingBody(io.BytesIO(answer), len(answer)),
                "contentType": "application/json",
                "ResponseMetadata": {"RequestId": "r7", "HTTPStatusCode": 200, "HTTPHeaders": headers},
            },
        )
        client.invoke_model(modelId="amazon.nova-lite-v1:0", body=body)["body"].read()
    attrs = traced.attrs()
    assert attrs["gen_ai.output.messages"] == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Hello."}], "finish_reason": "stop"}
    ]
    assert attrs["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (5, 4)
    assert attrs["aws.request_id"] == "r7"


def test_invoke_stream_other_family_usage_from_invocation_metrics(traced: Traced, server: MockLLMServer) -> None:
    server.script(Reply.text("Nova streamed."))
    body = json.dumps({"messages": [{"role": "user", "content": [{"text": "Hi"}]}]})
    response = client_for(server.url).invoke_model_with_response_stream(modelId="amazon.nova-lite-v1:0", body=body)
    chunks = [json.loads(event["chunk"]["bytes"]) for event in response["body"]]
    assert chunks[-1]["amazon-bedrock-invocationMetrics"]["outputTokenCount"] > 0
    attrs = traced.attrs()
    assert attrs["gen_ai.output.messages"][0]["parts"] == [{"type": "text", "content": "Nova streamed."}]
    assert attrs["gen_ai.usage.output_tokens"] == chunks[-1]["amazon-bedrock-invocationMetrics"]["outputTokenCount"]


async def test_aiobotocore_invoke_body_read(traced: Traced, server: MockLLMServer) -> None:
    from aiobotocore.session import get_session

    server.script(Reply.text("Async Claude."))
    async with get_session().create_client(
        "bedrock-runtime",
        endpoint_url=server.url,
        region_name="us-east-1",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret",
        config=Config(retries={"total_max_attempts": 1}),
    ) as client:
        response = await client.invoke_model(modelId=MODEL, body=json.dumps(claude_body()))
        async with response["body"] as body:
            data = await body.read()
    assert json.loads(data)["content"] == [{"type": "text", "text": "Async Claude."}]
    assert traced.attrs()["gen_ai.output.messages"][0]["parts"] == [{"type": "text", "content": "Async Claude."}]


def test_a_fault_in_spanfold_never_reaches_the_call(traced: Traced, server: MockLLMServer) -> None:
    server.script(Reply.text("Fine."))
    before = counters.snapshot().get("fault.bedrock.converse.request", 0)
    # messages that are not a list: spanfold cannot read them, botocore rejects them as it always would
    with pytest.raises(Exception) as info:
        client_for(server.url).converse(modelId=MODEL, messages=5)
    assert type(info.value).__name__ == "ParamValidationError"
    assert counters.snapshot().get("fault.bedrock.converse.request", 0) >= before
    assert server.pending == 1  # the request was never sent


def test_throttling_is_a_client_error(traced: Traced, server: MockLLMServer) -> None:
    server.script(Reply.error(429, "Rate exceeded"))
    with pytest.raises(ClientError) as info:
        client_for(server.url).converse_stream(modelId=MODEL, messages=[{"role": "user", "content": [{"text": "x"}]}])
    assert info.value.response["Error"]["Code"] == "ThrottlingException"
    assert traced.spans()[0].attributes["error.type"] == "botocore.errorfactory.ThrottlingException"  # type: ignore[index]

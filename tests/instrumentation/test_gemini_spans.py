"""Gemini (google-genai) span attributes: the real SDK over real HTTP to the mock server, an in-memory exporter; and the
stream accumulator fed the SDK's own chunk objects for shapes the mock does not send (thoughts, Vertex AI's streamed
function-call arguments, several candidates)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from google import genai
from google.genai import types

import spanfold
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.gemini.patches import GeminiInstrumentor
from spanfold.instrumentation.providers.gemini.stream import GeminiStreamAccumulator
from spanfold.instrumentation.toolkit import attributes
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec, Usage

from .conftest import Spans, spans_of

MODEL = "gemini-2.5-flash"


@pytest.fixture
def gspans() -> Iterator[Spans]:
    with spans_of(GeminiInstrumentor()) as spans:
        yield spans


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer() as srv:
        yield srv


@pytest.fixture
def client(server: MockLLMServer) -> genai.Client:
    return genai.Client(api_key="k", http_options={"base_url": server.gemini_base_url})


def test_request_and_response_attributes(gspans: Spans, server: MockLLMServer, client: genai.Client) -> None:
    server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})], usage=Usage(40, 7)))
    config = types.GenerateContentConfig(
        system_instruction="Be brief.",
        temperature=0.2,
        top_p=0.9,
        top_k=40,
        max_output_tokens=256,
        seed=7,
        candidate_count=1,
        stop_sequences=["END"],
        response_mime_type="application/json",
        tools=[
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name="get_weather",
                        description="Weather in a city.",
                        parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}},
                    )
                ]
            ),
            types.Tool(google_search=types.GoogleSearch()),
        ],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    response = client.models.generate_content(model=MODEL, contents="Weather in Paris?", config=config)
    assert isinstance(response, types.GenerateContentResponse)  # the SDK's own object
    span = gspans.one()
    assert span.name == f"chat {MODEL}"
    attrs = gspans.attrs(span)
    assert attrs == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "gcp.gemini",
        "gen_ai.request.model": MODEL,
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.top_p": 0.9,
        "gen_ai.request.top_k": 40,
        "gen_ai.request.max_tokens": 256,
        "gen_ai.request.seed": 7,
        "gen_ai.request.stop_sequences": ("END",),
        "gen_ai.output.type": "json",
        "server.address": "127.0.0.1",
        "server.port": server.port,
        "gen_ai.system_instructions": [{"type": "text", "content": "Be brief."}],
        "gen_ai.tool.definitions": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Weather in a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
            {"type": "google_search"},
        ],
        "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}],
        "gen_ai.response.id": "gemini_mock_1",
        "gen_ai.response.model": MODEL,
        "gen_ai.response.finish_reasons": ("STOP",),
        "gen_ai.output.messages": [
            {
                "role": "assistant",
                "parts": [{"type": "tool_call", "id": None, "name": "get_weather", "arguments": {"city": "Paris"}}],
                "finish_reason": "tool_call",
            }
        ],
        "gen_ai.usage.input_tokens": 40,
        "gen_ai.usage.output_tokens": 7,
        "gen_ai.usage.text.input_tokens": 40,  # the response's prompt_tokens_details (modality TEXT)
    }


def test_contents_shapes(gspans: Spans, server: MockLLMServer, client: genai.Client) -> None:
    """Dicts (snake_case and camelCase), parts, loose function calls and responses, nested lists, thoughts."""
    server.script(Reply.text("ok"))
    contents: list[Any] = [
        {"role": "user", "parts": [{"text": "Weather?"}]},
        {
            "role": "model",
            "parts": [{"thought": True, "text": "Look it up."}, {"functionCall": {"name": "w", "args": {}}}],
        },
        {
            "role": "user",
            "parts": [{"function_response": {"name": "w", "response": {"output": "sunny"}}}, {"text": "And?"}],
        },
        types.Part.from_function_call(name="w", args={"day": 2}),
        types.Part.from_function_response(name="w", response={"temp": 18}),
        ["More", types.Part.from_uri(file_uri="https://x.test/a.pdf", mime_type="application/pdf")],
    ]
    client.models.generate_content(model=MODEL, contents=contents)
    assert gspans.attrs()["gen_ai.input.messages"] == [
        {"role": "user", "parts": [{"type": "text", "content": "Weather?"}]},
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "Look it up."},
                {"type": "tool_call", "id": None, "name": "w", "arguments": {}},
            ],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": None, "response": "sunny"}]},
        {"role": "user", "parts": [{"type": "text", "content": "And?"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": None, "name": "w", "arguments": {"day": 2}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": None, "response": {"temp": 18}}]},
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "More"},
                {"type": "uri", "modality": "document", "mime_type": "application/pdf", "uri": "https://x.test/a.pdf"},
            ],
        },
    ]


def test_vertex_provider_and_content_off(gspans: Spans, server: MockLLMServer) -> None:
    gspans.use(Runtime(capture_content=False))
    server.script(Reply.text("secret answer"))
    client = genai.Client(vertexai=True, api_key="k", http_options={"base_url": server.gemini_base_url})
    client.models.generate_content(model=MODEL, contents="secret question", config={"system_instruction": "secret"})
    attrs = gspans.attrs()
    assert attrs["gen_ai.provider.name"] == "gcp.vertex_ai"
    assert attrs["gen_ai.input.messages"] == [{"role": "user", "parts": [{"type": "text"}]}]
    assert attrs["gen_ai.output.messages"] == [
        {"role": "assistant", "parts": [{"type": "text"}], "finish_reason": "stop"}
    ]
    assert "secret" not in json.dumps({k: str(v) for k, v in attrs.items()})


def test_stream_span_matches_the_json_span(gspans: Spans, server: MockLLMServer, client: genai.Client) -> None:
    reply = Reply.tools([ToolCallSpec("a", {"x": 1}), ToolCallSpec("b", {"y": "z"})], text="Calling two tools.")
    server.script(reply, reply)
    client.models.generate_content(model=MODEL, contents="Go.")
    chunks = list(client.models.generate_content_stream(model=MODEL, contents="Go."))
    assert len(chunks) == 5  # three words, then each call in a chunk of its own
    plain, streamed = (gspans.attrs(s) for s in gspans.finished())
    for key in ("gen_ai.output.messages", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
        assert streamed[key] == plain[key]
    assert streamed["gen_ai.output.messages"][0]["parts"][0] == {"type": "text", "content": "Calling two tools."}


def _chunk(*parts: types.Part, reason: str | None = None, index: int = 0, usage: Any = None) -> Any:
    candidate = types.Candidate(
        content=types.Content(role="model", parts=list(parts)), index=index, finish_reason=reason
    )
    return types.GenerateContentResponse(
        candidates=[candidate], usage_metadata=usage, response_id="r1", model_version="m"
    )


@pytest.mark.skipif(not hasattr(types, "PartialArg"), reason="streamed function-call arguments: google-genai >= 1.4x")
def test_accumulator_thoughts_partial_arguments_candidates_and_usage() -> None:
    acc = GeminiStreamAccumulator()
    call = types.FunctionCall
    acc.add(_chunk(types.Part(text="Let me ", thought=True), types.Part(text="think.", thought=True)))
    acc.add(_chunk(types.Part(function_call=call(name="get_weather", id="fc1", will_continue=True))))
    for piece in ("Par", "is"):
        arg = types.PartialArg(json_path="$.city", string_value=piece, will_continue=True)
        acc.add(_chunk(types.Part(function_call=call(partial_args=[arg], will_continue=True))))
    arg = types.PartialArg(json_path="$.unit.name", string_value="C")
    acc.add(_chunk(types.Part(function_call=call(partial_args=[arg], will_continue=True))))
    acc.add(_chunk(types.Part(function_call=call())))
    acc.add(_chunk(types.Part(text="Other choice."), index=1, reason="MAX_TOKENS"))
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=100, candidates_token_count=20, thoughts_token_count=30, cached_content_token_count=60
    )
    acc.add(_chunk(reason="STOP", usage=usage))
    attrs = attributes.response(acc.result(), "gcp.gemini", Runtime())
    assert json.loads(attrs["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "Let me think."},
                {
                    "type": "tool_call",
                    "id": "fc1",
                    "name": "get_weather",
                    "arguments": {"city": "Paris", "unit": {"name": "C"}},
                },
            ],
            "finish_reason": "tool_call",
        },
        {"role": "assistant", "parts": [{"type": "text", "content": "Other choice."}], "finish_reason": "length"},
    ]
    assert attrs["gen_ai.response.finish_reasons"] == ["STOP", "MAX_TOKENS"]
    assert attrs["gen_ai.usage.input_tokens"] == 100
    assert attrs["gen_ai.usage.output_tokens"] == 50
    assert attrs["gen_ai.usage.reasoning.output_tokens"] == 30
    assert attrs["gen_ai.usage.cache_read.input_tokens"] == 60


def test_tool_call_id_none_is_not_passed_to_the_function(global_spans: Any) -> None:
    """Regression: ``@spanfold.tool`` passed ``tool_call_id=None`` on to a function without that parameter (a TypeError
    for every Gemini call, whose calls have no id)."""

    @spanfold.tool
    def get_weather(city: str) -> str:
        return f"{city}: sunny"

    assert get_weather(city="Paris", tool_call_id=None) == "Paris: sunny"
    (span,) = global_spans.get_finished_spans()
    assert "gen_ai.tool.call.id" not in (span.attributes or {})


def test_a_fault_in_spanfold_leaves_the_call_alone(
    gspans: Spans, server: MockLLMServer, client: genai.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spanfold import counters
    from spanfold.instrumentation.providers.gemini import content as gemini_content

    def broken(*args: Any) -> Any:
        raise RuntimeError("spanfold bug")

    monkeypatch.setattr(gemini_content, "content_messages", broken)
    monkeypatch.setattr(gemini_content, "part_parts", broken)
    server.script(Reply.text("still fine"))
    response = client.models.generate_content(model=MODEL, contents=[{"role": "user", "parts": [{"text": "hi"}]}])
    assert response.text == "still fine"
    assert counters.snapshot().get("fault.gemini.generate_content.request") == 1

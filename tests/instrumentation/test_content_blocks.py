"""Every content block a provider's API reference lists, through the real SDKs over real HTTP to the mock server: a
block the model reads keeps its text (or becomes a part the conventions define: blob, uri, file), in the span and in
the folded trace; a block the stream sends in pieces gives the same parts as the JSON answer. Response shapes the
neutral ``Reply`` has no word for are sent as the API's own body (``Reply.shaped``), streamed as the provider
streams each kind."""

from __future__ import annotations

import base64
import json
from typing import Any

import anthropic
import boto3
import pytest
from botocore.config import Config
from google import genai
from google.genai import types
from mistralai.client import Mistral

import spanfold
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec

MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-image-").decode()
MP3 = base64.b64encode(b"ID3-audio").decode()


def bedrock(server: MockLLMServer) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=server.url,
        region_name="us-east-1",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret",
        config=Config(retries={"total_max_attempts": 1}),
    )


def model_spans(global_spans: Any) -> list[Any]:
    return [s for s in global_spans.get_finished_spans() if s.name.startswith("chat ")]


def attribute(span: Any, key: str) -> Any:
    return json.loads(str(span.attributes[key]))


def converse(client: Any, stream: bool, **request: Any) -> list[dict[str, Any]]:
    """The content the model answered (a stream read to its end)."""
    if not stream:
        return list(client.converse(modelId=MODEL, **request)["output"]["message"]["content"])
    events = list(client.converse_stream(modelId=MODEL, **request)["stream"])
    return [event for event in events if "contentBlockDelta" in event]


# --- Bedrock Converse ----------------------------------------------------------------------------------------


def test_bedrock_guard_content_is_the_user_turn_the_model_reads(
    traced: Any, server: MockLLMServer, global_spans: Any
) -> None:
    """``guardContent`` is what a guardrail checks and the model reads: the user turn (and a guarded system block)
    keep their text; a guarded image is a blob."""
    server.script(Reply.text("Sunny, 18°C."))
    messages = [
        {
            "role": "user",
            "content": [
                {"guardContent": {"text": {"text": "Paris: 18°C, sunny. ", "qualifiers": ["grounding_source"]}}},
                {"guardContent": {"text": {"text": "What is the weather in Paris?", "qualifiers": ["query"]}}},
                {"guardContent": {"image": {"format": "png", "source": {"bytes": base64.b64decode(PNG)}}}},
            ],
        }
    ]
    system = [{"text": "Answer from the sources. "}, {"guardContent": {"text": {"text": "Never give medical advice."}}}]
    bedrock(server).converse(modelId=MODEL, system=system, messages=messages)
    (span,) = model_spans(global_spans)
    assert attribute(span, "gen_ai.system_instructions") == [
        {"type": "text", "content": "Answer from the sources. "},
        {"type": "text", "content": "Never give medical advice."},
    ]
    assert attribute(span, "gen_ai.input.messages") == [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "Paris: 18°C, sunny. "},
                {"type": "text", "content": "What is the weather in Paris?"},
                {"type": "blob", "modality": "image", "mime_type": "image/png", "content": PNG},
            ],
        }
    ]
    assert traced.one() == [
        {"role": "system", "content": "Answer from the sources. Never give medical advice."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Paris: 18°C, sunny. "},
                {"type": "text", "text": "What is the weather in Paris?"},
                {"type": "image", "image_url": f"data:image/png;base64,{PNG}"},
            ],
        },
        {"role": "assistant", "content": "Sunny, 18°C."},
    ]


def test_bedrock_guard_content_text_only_user_turn(traced: Any, server: MockLLMServer) -> None:
    """The shape found in real recorded runs: a user turn made of one guarded text block, which was written as
    ``{"role": "user", "content": null}``."""
    server.script(Reply.text("Hello."))
    bedrock(server).converse(
        modelId=MODEL, messages=[{"role": "user", "content": [{"guardContent": {"text": {"text": "Hi there"}}}]}]
    )
    assert traced.one() == [{"role": "user", "content": "Hi there"}, {"role": "assistant", "content": "Hello."}]


def test_bedrock_history_blocks_keep_what_the_model_reads(
    traced: Any, server: MockLLMServer, global_spans: Any
) -> None:
    """Audio, cited text, search results, a tool result of JSON and an image: each the part the model reads."""
    server.script(Reply.text("Noted."))
    messages = [
        {
            "role": "user",
            "content": [
                {"audio": {"format": "mp3", "source": {"bytes": base64.b64decode(MP3)}}},
                {
                    "searchResult": {
                        "source": "https://w.example/paris",
                        "title": "Paris",
                        "content": [{"text": "18°C"}],
                    }
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"citationsContent": {"content": [{"text": "It is 18°C."}], "citations": []}},
                {"toolUse": {"toolUseId": "tu_1", "name": "chart", "input": {"city": "Paris"}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "tu_1",
                        "content": [
                            {"json": {"max": 21}},
                            {"image": {"format": "png", "source": {"bytes": base64.b64decode(PNG)}}},
                        ],
                    }
                }
            ],
        },
    ]
    bedrock(server).converse(modelId=MODEL, messages=messages)
    (span,) = model_spans(global_spans)
    assert attribute(span, "gen_ai.input.messages") == [
        {
            "role": "user",
            "parts": [
                {"type": "blob", "modality": "audio", "mime_type": "audio/mp3", "content": MP3},
                {"type": "text", "content": "18°C"},
            ],
        },
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "It is 18°C."},
                {"type": "tool_call", "id": "tu_1", "name": "chart", "arguments": {"city": "Paris"}},
            ],
        },
        {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": "tu_1",
                    "response": [
                        {"type": "text", "content": '{"max":21}'},
                        {"type": "blob", "modality": "image", "mime_type": "image/png", "content": PNG},
                    ],
                }
            ],
        },
    ]
    events = traced.one()
    assert events[0] == {
        "role": "user",
        "content": [{"type": "audio", "url": f"data:audio/mp3;base64,{MP3}"}, {"type": "text", "text": "18°C"}],
    }
    assert events[1]["content"] == "It is 18°C."
    assert json.loads(events[2]["content"]) == [
        {"type": "text", "content": '{"max":21}'},
        {"type": "blob", "modality": "image", "mime_type": "image/png", "content": PNG},
    ]


#: A Converse answer with every block kind a response holds: reasoning (text and signature), a server tool's call
#: and result, cited text, an image, plain text.
ANSWER_BLOCKS: list[dict[str, Any]] = [
    {"reasoningContent": {"reasoningText": {"text": "The user wants Paris.", "signature": "c2ln"}}},
    {"toolUse": {"toolUseId": "tu_web", "name": "web_grounding", "input": {"query": "Paris weather"}}},
    {"toolResult": {"toolUseId": "tu_web", "content": [{"text": "Paris: 18°C"}], "status": "success"}},
    {"citationsContent": {"content": [{"text": "It is 18°C in Paris."}], "citations": [{"title": "Paris"}]}},
    {"image": {"format": "png", "source": {"bytes": PNG}}},
    {"text": " Enjoy."},
]


def converse_answer(content: list[dict[str, Any]], stop: str = "end_turn") -> Reply:
    return Reply.shaped(
        {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop,
            "usage": {"inputTokens": 11, "outputTokens": 7, "totalTokens": 18},
            "metrics": {"latencyMs": 5},
        }
    )


@pytest.mark.parametrize("stream", [False, True], ids=["converse", "converse_stream"])
def test_bedrock_answer_blocks_json_and_stream(
    traced: Any, server: MockLLMServer, global_spans: Any, stream: bool
) -> None:
    server.script(converse_answer(ANSWER_BLOCKS))
    converse(bedrock(server), stream, messages=[{"role": "user", "content": [{"text": "Weather in Paris?"}]}])
    (span,) = model_spans(global_spans)
    assert attribute(span, "gen_ai.output.messages") == [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "The user wants Paris."},
                {"type": "tool_call", "id": "tu_web", "name": "web_grounding", "arguments": {"query": "Paris weather"}},
            ],
            "finish_reason": "stop",
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "tu_web", "response": "Paris: 18°C"}],
            "finish_reason": "stop",
        },
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "It is 18°C in Paris."},
                {"type": "blob", "modality": "image", "mime_type": "image/png", "content": PNG},
                {"type": "text", "content": " Enjoy."},
            ],
            "finish_reason": "stop",
        },
    ]
    assert (span.attributes["gen_ai.usage.input_tokens"], span.attributes["gen_ai.usage.output_tokens"]) == (11, 7)
    events = traced.one()
    assert events[1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "tu_web",
                    "type": "function",
                    "function": {"name": "web_grounding", "arguments": {"query": "Paris weather"}},
                }
            ],
        },
        {"role": "tool", "content": "Paris: 18°C", "tool_call_id": "tu_web"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "It is 18°C in Paris."},
                {"type": "image", "image_url": f"data:image/png;base64,{PNG}"},
                {"type": "text", "text": " Enjoy."},
            ],
        },
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["converse", "converse_stream"])
def test_bedrock_redacted_reasoning_keeps_its_type_only(
    traced: Any, server: MockLLMServer, global_spans: Any, stream: bool
) -> None:
    """Redacted (encrypted) reasoning has nothing readable: a reasoning part without content, never an empty
    reasoning text, streamed or not."""
    redacted = base64.b64encode(b"\x00encrypted").decode()
    server.script(converse_answer([{"reasoningContent": {"redactedContent": redacted}}, {"text": "Done."}]))
    converse(bedrock(server), stream, messages=[{"role": "user", "content": [{"text": "Think."}]}])
    (span,) = model_spans(global_spans)
    assert attribute(span, "gen_ai.output.messages")[0]["parts"] == [
        {"type": "reasoning"},
        {"type": "text", "content": "Done."},
    ]
    assert traced.one()[1] == {"role": "assistant", "content": "Done."}


# --- Bedrock invoke_model: usage of a family spanfold does not read ----------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["invoke_model", "invoke_model_with_response_stream"])
def test_bedrock_llama_usage_from_headers_and_invocation_metrics(
    server: MockLLMServer, global_spans: Any, traced: Any, stream: bool
) -> None:
    """A Llama body carries no usage object: the tokens come from the response headers (invoke_model) or the last
    chunk's ``amazon-bedrock-invocationMetrics`` (the stream), and only from there."""
    server.script(Reply.text("Bonjour from Llama."))
    client = bedrock(server)
    body = json.dumps({"prompt": "Say hello in French.", "max_gen_len": 32})
    if stream:
        response = client.invoke_model_with_response_stream(modelId="meta.llama3-8b-instruct-v1:0", body=body)
        chunks = [json.loads(event["chunk"]["bytes"]) for event in response["body"]]
        metrics = chunks[-1]["amazon-bedrock-invocationMetrics"]
        expected = (metrics["inputTokenCount"], metrics["outputTokenCount"])
        assert all("usage" not in chunk for chunk in chunks)
    else:
        response = client.invoke_model(modelId="meta.llama3-8b-instruct-v1:0", body=body)
        answer = json.loads(response["body"].read())
        expected = (answer["prompt_token_count"], answer["generation_token_count"])
    assert expected[0] > 0 and expected[1] > 1
    (span,) = model_spans(global_spans)
    assert span.name == "chat meta.llama3-8b-instruct-v1:0"
    assert (span.attributes["gen_ai.usage.input_tokens"], span.attributes["gen_ai.usage.output_tokens"]) == expected


# --- Anthropic Messages --------------------------------------------------------------------------------------------


def claude(server: MockLLMServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", base_url=server.anthropic_base_url, max_retries=0)


def test_anthropic_history_blocks_keep_what_the_model_reads(
    traced: Any, server: MockLLMServer, global_spans: Any
) -> None:
    server.script(Reply.text("Noted."))
    search = {
        "type": "search_result",
        "source": "https://w.example/paris",
        "title": "Paris",
        "content": [{"type": "text", "text": "Paris: 18°C"}],
    }
    claude(server).beta.messages.create(
        model="claude-x",
        max_tokens=64,
        messages=[
            {"role": "user", "content": [search, {"type": "container_upload", "file_id": "file_1"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "compaction", "content": "Earlier: the user asked about Paris."},
                    {"type": "mcp_tool_use", "id": "mcptu_1", "name": "forecast", "server_name": "w", "input": {}},
                    {
                        "type": "mcp_tool_result",
                        "tool_use_id": "mcptu_1",
                        "is_error": False,
                        "content": [{"type": "text", "text": "Rain tomorrow."}],
                    },
                ],
            },
            {
                "role": "user",
                "content": [{"type": "text", "text": "And the search result says?"}],
            },
        ],
    )
    (span,) = model_spans(global_spans)
    assert attribute(span, "gen_ai.input.messages") == [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "Paris: 18°C"},
                {"type": "file", "modality": "document", "file_id": "file_1"},
            ],
        },
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "Earlier: the user asked about Paris."},
                {"type": "tool_call", "id": "mcptu_1", "name": "forecast", "arguments": {}},
            ],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "mcptu_1", "response": "Rain tomorrow."}]},
        {"role": "user", "parts": [{"type": "text", "content": "And the search result says?"}]},
    ]
    events = traced.one()
    assert events[0]["content"] == [{"type": "text", "text": "Paris: 18°C"}, {"type": "file", "file_id": "file_1"}]
    assert events[1]["content"] == "Earlier: the user asked about Paris."
    assert events[2] == {"role": "tool", "content": "Rain tomorrow.", "tool_call_id": "mcptu_1"}


CLAUDE_ANSWER: list[dict[str, Any]] = [
    {"type": "thinking", "thinking": "Look it up.", "signature": "c2ln"},
    {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "Paris"}},
    {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [{"type": "web_search_result", "url": "https://w.example", "title": "P", "encrypted_content": "x"}],
    },
    {"type": "text", "text": "It is 18°C."},
]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_anthropic_answer_blocks_json_and_stream(
    traced: Any, server: MockLLMServer, global_spans: Any, stream: bool
) -> None:
    """Thinking, redacted thinking (its type only), a server tool's call and result, text: the same parts whether
    the answer came whole or streamed."""
    server.script(
        Reply.shaped(
            {
                "id": "msg_blocks",
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": CLAUDE_ANSWER,
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 9,
                    "output_tokens": 4,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                },
            }
        )
    )
    request = {"model": "claude-x", "max_tokens": 64, "messages": [{"role": "user", "content": "Weather?"}]}
    if stream:
        with claude(server).messages.stream(**request) as answer:  # type: ignore[arg-type]
            answer.get_final_message()
    else:
        claude(server).messages.create(**request)  # type: ignore[arg-type]
    (span,) = model_spans(global_spans)
    result = [{"type": "web_search_result", "url": "https://w.example", "title": "P", "encrypted_content": "x"}]
    assert attribute(span, "gen_ai.output.messages") == [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "Look it up."},
                {"type": "reasoning"},
                {"type": "tool_call", "id": "srvtoolu_1", "name": "web_search", "arguments": {"query": "Paris"}},
            ],
            "finish_reason": "stop",
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "srvtoolu_1", "response": result}],
            "finish_reason": "stop",
        },
        {"role": "assistant", "parts": [{"type": "text", "content": "It is 18°C."}], "finish_reason": "stop"},
    ]
    events = traced.one()
    assert events[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "srvtoolu_1",
                "type": "function",
                "function": {"name": "web_search", "arguments": {"query": "Paris"}},
            }
        ],
    }
    assert json.loads(events[2].pop("content")) == result
    assert events[2] == {"role": "tool", "tool_call_id": "srvtoolu_1"}
    assert events[3] == {"role": "assistant", "content": "It is 18°C."}


# --- Gemini --------------------------------------------------------------------------------------------------------


def gemini(server: MockLLMServer) -> genai.Client:
    return genai.Client(api_key="gemini-test", http_options={"base_url": server.gemini_base_url})


_GEMINI_CLIENTS: list[genai.Client] = []  # a client closes its HTTP client when collected


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_gemini_function_call_and_response_ids_are_kept(
    traced: Any, server: MockLLMServer, global_spans: Any, stream: bool
) -> None:
    """Where the API gives function calls ids (Vertex AI, newer models), the call, the response sent back and the
    folded trace carry them: the output is paired by id."""
    server.script(
        Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"}, id="fc_paris")]), Reply.text("Sunny, 18°C.")
    )
    client = gemini(server)
    _GEMINI_CLIENTS.append(client)
    config = types.GenerateContentConfig(automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text="Weather in Paris?")])]
    with spanfold.agent("gemini-ids"):
        if stream:
            chunks = list(client.models.generate_content_stream(model="gemini-x", contents=contents, config=config))
            call = next(p.function_call for c in chunks for p in c.candidates[0].content.parts if p.function_call)
        else:
            answer = client.models.generate_content(model="gemini-x", contents=contents, config=config)
            call = answer.candidates[0].content.parts[0].function_call
        assert call.id == "fc_paris"
        contents += [
            types.Content(role="model", parts=[types.Part(function_call=call)]),
            types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            id=call.id, name=call.name, response={"result": "Paris: 18°C, sunny"}
                        )
                    )
                ],
            ),
        ]
        client.models.generate_content(model="gemini-x", contents=contents, config=config)
    first, second = model_spans(global_spans)
    assert attribute(first, "gen_ai.output.messages")[0]["parts"] == [
        {"type": "tool_call", "id": "fc_paris", "name": "get_weather", "arguments": {"city": "Paris"}}
    ]
    assert attribute(second, "gen_ai.input.messages")[1:] == [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "fc_paris", "name": "get_weather", "arguments": {"city": "Paris"}}],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "fc_paris", "response": "Paris: 18°C, sunny"}]},
    ]
    assert traced.one() == [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "fc_paris",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                }
            ],
        },
        {"role": "tool", "content": "Paris: 18°C, sunny", "tool_call_id": "fc_paris"},
        {"role": "assistant", "content": "Sunny, 18°C."},
    ]


GEMINI_ANSWER: list[dict[str, Any]] = [
    {"text": "Let me compute.", "thought": True},
    {"executableCode": {"id": "code_1", "language": "PYTHON", "code": "print(18 * 9 / 5 + 32)"}},
    {"codeExecutionResult": {"id": "code_1", "outcome": "OUTCOME_OK", "output": "64.4\n"}},
    {"toolCall": {"id": "srv_1", "toolType": "GOOGLE_SEARCH_WEB", "args": {"query": "Paris weather"}}},
    {"toolResponse": {"id": "srv_1", "toolType": "GOOGLE_SEARCH_WEB", "response": {"results": ["18°C"]}}},
    {"text": "18°C is 64.4°F."},
]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_gemini_server_tools_are_calls_with_their_results(
    traced: Any, server: MockLLMServer, global_spans: Any, stream: bool
) -> None:
    """Code execution and the server's own tools (search, ...) are what the model read: each a call followed by its
    result, as the other providers' built-in tools fold."""
    server.script(
        Reply.shaped(
            {
                "candidates": [{"content": {"role": "model", "parts": GEMINI_ANSWER}, "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 9, "totalTokenCount": 14},
                "modelVersion": "gemini-x",
                "responseId": "r_tools",
            }
        )
    )
    client = gemini(server)
    _GEMINI_CLIENTS.append(client)
    if stream:
        list(client.models.generate_content_stream(model="gemini-x", contents="18°C in °F?"))
    else:
        client.models.generate_content(model="gemini-x", contents="18°C in °F?")
    (span,) = model_spans(global_spans)
    code = {"code": "print(18 * 9 / 5 + 32)", "language": "PYTHON"}
    search = {"query": "Paris weather"}
    assert attribute(span, "gen_ai.output.messages") == [  # one candidate, one message; its answered calls: "stop"
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "Let me compute."},
                {"type": "tool_call", "id": "code_1", "name": "code_execution", "arguments": code},
                {"type": "tool_call_response", "id": "code_1", "response": "64.4\n"},
                {"type": "tool_call", "id": "srv_1", "name": "google_search_web", "arguments": search},
                {"type": "tool_call_response", "id": "srv_1", "response": {"results": ["18°C"]}},
                {"type": "text", "content": "18°C is 64.4°F."},
            ],
            "finish_reason": "stop",
        }
    ]
    events = traced.one()
    assert [(e["role"], e.get("tool_call_id"), e["content"]) for e in events[1:]] == [
        ("assistant", None, None),
        ("tool", "code_1", "64.4\n"),
        ("assistant", None, None),
        ("tool", "srv_1", '{"results":["18°C"]}'),
        ("assistant", None, "18°C is 64.4°F."),
    ]


def test_gemini_function_response_media_parts(traced: Any, server: MockLLMServer, global_spans: Any) -> None:
    """A function response may return media beside its JSON (multimodal function responses): both are its
    response."""
    server.script(Reply.text("A chart of Paris."))
    client = gemini(server)
    _GEMINI_CLIENTS.append(client)
    response = types.FunctionResponse(
        id="fc_chart",
        name="chart",
        response={"result": "chart attached"},
        parts=[types.FunctionResponsePart(inline_data=types.FunctionResponseBlob(mime_type="image/png", data=b"PNG"))],
    )
    contents = [
        types.Content(role="user", parts=[types.Part(text="Chart?")]),
        types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(id="fc_chart", name="chart"))]),
        types.Content(role="user", parts=[types.Part(function_response=response)]),
    ]
    client.models.generate_content(model="gemini-x", contents=contents)
    (span,) = model_spans(global_spans)
    png = base64.b64encode(b"PNG").decode()
    assert attribute(span, "gen_ai.input.messages")[2] == {
        "role": "tool",
        "parts": [
            {
                "type": "tool_call_response",
                "id": "fc_chart",
                "response": [
                    {"type": "text", "content": "chart attached"},
                    {"type": "blob", "modality": "image", "mime_type": "image/png", "content": png},
                ],
            }
        ],
    }


# --- Mistral ------------------------------------------------------------------------------------------------------


def test_mistral_chunk_kinds(traced: Any, server: MockLLMServer, global_spans: Any) -> None:
    """Mistral's own chunk kinds: documents and resources by URL, uploaded files, audio, a resource's text."""
    server.script(Reply.text("Read them."))
    Mistral(api_key="mistral-test", server_url=server.mistral_server_url).chat.complete(
        model="mistral-small-latest",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Summarise:"},
                    {"type": "document_url", "document_url": "https://d.example/report.pdf"},
                    {"type": "file", "file_id": "file-abc"},
                    {"type": "input_audio", "input_audio": MP3},
                    {"type": "resource", "uri": "mem://n", "content": {"type": "text", "text": "A note."}},
                    {"type": "resource_link", "uri": "https://d.example/link"},
                ],
            }
        ],
    )
    (span,) = model_spans(global_spans)
    assert attribute(span, "gen_ai.input.messages") == [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "Summarise:"},
                {"type": "uri", "modality": "document", "uri": "https://d.example/report.pdf"},
                {"type": "file", "modality": "document", "file_id": "file-abc"},
                {"type": "blob", "modality": "audio", "mime_type": None, "content": MP3},
                {"type": "text", "content": "A note."},
                {"type": "uri", "modality": "document", "uri": "https://d.example/link"},
            ],
        }
    ]
    assert traced.one()[0]["content"][4] == {"type": "text", "text": "A note."}

"""Agent runs on every provider with planted content, for the redaction suite: the demo's agent loop of each
provider (:data:`spanfold.testing.agents.PROVIDERS`: OpenAI chat and Responses, Anthropic, Gemini, Bedrock Converse,
groq, mistralai, ollama, cohere, litellm), streamed and not, plus Bedrock ``invoke_model`` with Claude and Nova
bodies; each run's system prompt, user prompt, tool-call arguments, tool result and answer are the planted
:class:`~.conftest.Texts`, and a failing call echoes the prompt in its error message (as a provider's 400 does)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

import spanfold
from spanfold.testing import WEATHER, MockLLMServer, MockRequest, Reply, ToolCallSpec, scenarios
from spanfold.testing.agents import PROVIDERS

from .conftest import Texts

BEDROCK_INVOKE = ("bedrock-invoke-claude", "bedrock-invoke-nova")
#: Every provider run :func:`run_provider` knows.
PROVIDER_RUNS = (*PROVIDERS, *BEDROCK_INVOKE)


def planted_agent(texts: Texts) -> Callable[[MockRequest], Reply]:
    """The model of the planted run: a ``get_weather`` call with the planted arguments, then the planted answer once
    a tool result is in."""
    call = Reply.tools([ToolCallSpec("get_weather", {"city": texts.arguments})])
    final = Reply.text(texts.answer)
    return lambda request: final if request.tool_results() else call


def run_provider(name: str, server: MockLLMServer, texts: Texts) -> None:
    """The planted agent run of provider ``name``, streamed and not, each in its agent span; then a failing call."""

    @spanfold.tool(name="get_weather")
    def get_weather(city: str) -> str:
        return texts.result

    planted = dataclasses.replace(WEATHER, system=texts.system, replies=planted_agent(texts))
    tools = {"get_weather": get_weather}
    server.respond_with(planted.replies)
    if name in BEDROCK_INVOKE:
        client = PROVIDERS["bedrock"].client(server)
        with spanfold.agent(f"{name}-bot"):
            _invoke_run(client, name.endswith("claude"), texts, get_weather)
        server.script(Reply.error(400, f"Malformed input request: {texts.prompt}"))
        with pytest.raises(Exception, match="Malformed input"):
            _invoke(client, name.endswith("claude"), [{"role": "user", "content": [{"text": texts.prompt}]}], texts)
        return
    provider = PROVIDERS[name]
    for stream in (False, True):
        with spanfold.agent(f"{name}-bot"):
            answer = provider.run(provider.client(server), texts.prompt, scenario=planted, stream=stream, tools=tools)
        assert answer == texts.answer, (name, stream, answer)
    server.script(Reply.error(400, f"Invalid request: {texts.prompt}", should_retry=False))
    with pytest.raises(Exception):  # noqa: B017 - each SDK has its own exception type
        provider.run(provider.client(server), texts.prompt, scenario=planted, tools=tools)


def _body(claude: bool, messages: list[Any], texts: Texts) -> dict[str, Any]:
    if claude:
        return {
            "anthropic_version": "bedrock-2023-05-31",
            "max_tokens": 256,
            "system": texts.system,
            "messages": messages,
            "tools": scenarios.WEATHER_TOOLS_ANTHROPIC,
        }
    return {"schemaVersion": "messages-v1", "system": [{"text": texts.system}], "messages": messages}


def _invoke(client: Any, claude: bool, messages: list[Any], texts: Texts, stream: bool = False) -> Any:
    model = "anthropic.claude-3-5-sonnet-20240620-v1:0" if claude else "amazon.nova-lite-v1:0"
    body = json.dumps(_body(claude, messages, texts))
    if stream:
        events = client.invoke_model_with_response_stream(modelId=model, body=body)["body"]
        return [json.loads(event["chunk"]["bytes"]) for event in events]
    return json.loads(client.invoke_model(modelId=model, body=body)["body"].read())


def _invoke_run(client: Any, claude: bool, texts: Texts, tool: Callable[..., str]) -> None:
    """The tool call asked in an ``invoke_model`` body, the answer streamed with the whole history re-sent."""
    if claude:
        messages: list[Any] = [{"role": "user", "content": texts.prompt}]
        content = _invoke(client, claude, messages, texts)["content"]
        use = next(block for block in content if block["type"] == "tool_use")
        result = tool(use["input"]["city"], tool_call_id=use["id"])
        messages += [
            {"role": "assistant", "content": content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": result}]},
        ]
    else:
        messages = [{"role": "user", "content": [{"text": texts.prompt}]}]
        message = _invoke(client, claude, messages, texts)["output"]["message"]
        use = next(block["toolUse"] for block in message["content"] if "toolUse" in block)
        result = tool(use["input"]["city"], tool_call_id=use["toolUseId"])
        messages += [
            message,
            {
                "role": "user",
                "content": [{"toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": result}]}}],
            },
        ]
    events = _invoke(client, claude, messages, texts, stream=True)
    assert events, "the streamed answer"

"""A scenario's agent played on any provider API against the mock server: the one loop (:func:`run_agent`) and, per
provider, its client library, model, a client pointed at a :class:`MockLLMServer` and its API's shape
(:data:`PROVIDERS`, what ``spanfold demo --provider`` offers). The client libraries are imported when a client is made
or a call sent, never with this module.

    with MockLLMServer(WEATHER.replies) as server:
        openai = PROVIDERS["openai"]
        answer = openai.run(openai.client(server))  # or run_agent("openai", your_client, "Weather in Paris?")
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from spanfold.testing.scenarios import WEATHER, Scenario
from spanfold.testing.server import MockLLMServer
from spanfold.testing.shapes import (
    ChatCompletions,
    Converse,
    Gemini,
    Messages,
    Responses,
    Shape,
    cohere_chat,
    groq_chat,
    litellm_chat,
    mistral_chat,
    named_tool_message,
    ollama_chat,
    ollama_tool_message,
    openai_chat,
)

#: The key the mock server's clients are made with (no real provider accepts it).
MOCK_KEY = "demo-key"


@dataclass(frozen=True)
class Provider:
    """One provider API an agent speaks: the module of its client library, the spanfold extra that installs it, the
    model asked for, a client for a mock server, and how the agent's side of its API goes (``shape``)."""

    name: str
    library: str
    extra: str
    model: str
    client: Callable[[MockLLMServer], Any]
    shape: Shape

    def installed(self) -> bool:
        """Whether the client library is installed here (found without importing it)."""
        try:
            return importlib.util.find_spec(self.library) is not None
        except (ImportError, ValueError):
            return False

    def run(
        self,
        client: Any,
        question: str | None = None,
        *,
        scenario: Scenario = WEATHER,
        stream: bool = False,
        max_steps: int = 8,
        tools: Mapping[str, Callable[..., str]] | None = None,
    ) -> str:
        """:func:`run_agent` on this API."""
        return run_agent(self, client, question, scenario=scenario, stream=stream, max_steps=max_steps, tools=tools)


def run_agent(
    provider: str | Provider,
    client: Any,
    question: str | None = None,
    *,
    scenario: Scenario = WEATHER,
    stream: bool = False,
    max_steps: int = 8,
    tools: Mapping[str, Callable[..., str]] | None = None,
) -> str:
    """The usual tool loop of ``scenario``'s agent on ``provider``'s API (a key of :data:`PROVIDERS`) with ``client``:
    call the model with the scenario's prompt, ``question`` (default the scenario's) and tools; run the tools it asks
    for (``tools``, by default the scenario's as ``@spanfold.tool`` functions; a failing one answers with its error);
    send their results back; repeat. Returns the model's answer, or "" when it still asks for tools after
    ``max_steps`` calls."""
    api = PROVIDERS[provider] if isinstance(provider, str) else provider
    request = api.shape.start(api.model, scenario, scenario.question if question is None else question)
    reply = _turn(api, client, request, scenario, stream, max_steps, tools)
    return api.shape.text(reply) if reply is not None else ""


def run_conversation(
    provider: str | Provider,
    client: Any,
    questions: Sequence[str],
    *,
    scenario: Scenario = WEATHER,
    stream: bool = False,
    max_steps: int = 8,
    tools: Mapping[str, Callable[..., str]] | None = None,
    each_turn: Callable[[int], AbstractContextManager[Any]] | None = None,
) -> list[str]:
    """A support bot's conversation: each of ``questions`` a turn of :func:`run_agent`'s loop, each turn re-sending
    the conversation so far (the earlier questions, tool calls, results and answers) with the next question;
    ``each_turn(n)``: a context each turn runs in (``lambda n: spanfold.agent("support")``: a run per turn). Returns
    each turn's answer."""
    api = PROVIDERS[provider] if isinstance(provider, str) else provider
    request = api.shape.start(api.model, scenario, questions[0])
    answers: list[str] = []
    reply: Any = None
    for n, question in enumerate(questions):
        if n:
            api.shape.follow_up(request, reply, question)
        with each_turn(n) if each_turn is not None else nullcontext():
            reply = _turn(api, client, request, scenario, stream, max_steps, tools)
        if reply is None:
            break
        answers.append(api.shape.text(reply))
    return answers


def _turn(
    api: Provider,
    client: Any,
    request: Any,
    scenario: Scenario,
    stream: bool,
    max_steps: int,
    tools: Mapping[str, Callable[..., str]] | None,
) -> Any:
    """The loop until the model answers: its reply (None when it still asks for tools after ``max_steps`` calls)."""
    shape = api.shape
    for _ in range(max_steps):
        reply = shape.send(client, request, stream)
        calls = shape.calls(reply)
        if not calls:
            return reply
        results = [(call, scenario.run_tool(call.name, call.arguments, call.id, tools=tools)) for call in calls]
        shape.send_back(request, reply, results)
    return None


# -- clients of the mock server -------------------------------------------------------------------------------------


def _openai_client(server: MockLLMServer) -> Any:
    import openai

    return openai.OpenAI(api_key=MOCK_KEY, base_url=server.base_url, max_retries=0)


def _anthropic_client(server: MockLLMServer) -> Any:
    import anthropic

    return anthropic.Anthropic(api_key=MOCK_KEY, base_url=server.anthropic_base_url, max_retries=0)


def _gemini_client(server: MockLLMServer) -> Any:
    from google import genai

    return genai.Client(api_key=MOCK_KEY, http_options={"base_url": server.gemini_base_url})


def _bedrock_client(server: MockLLMServer) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "bedrock-runtime",
        endpoint_url=server.url,
        region_name="us-east-1",
        aws_access_key_id="demo-key-id",
        aws_secret_access_key="demo-secret",
        config=Config(retries={"total_max_attempts": 1}),
    )


def _groq_client(server: MockLLMServer) -> Any:
    import groq

    return groq.Groq(api_key=MOCK_KEY, base_url=server.groq_base_url, max_retries=0)


def _mistral_client(server: MockLLMServer) -> Any:
    from mistralai.client import Mistral

    return Mistral(api_key=MOCK_KEY, server_url=server.mistral_server_url)


def _ollama_client(server: MockLLMServer) -> Any:
    import ollama

    return ollama.Client(host=server.ollama_host)


def _cohere_client(server: MockLLMServer) -> Any:
    import cohere

    return cohere.ClientV2(api_key=MOCK_KEY, base_url=server.cohere_base_url, max_retries=0)


def _litellm_client(server: MockLLMServer) -> Any:
    """litellm has no client object: its routing keywords."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of the remote price list
    return {"api_base": server.base_url, "api_key": MOCK_KEY, "max_retries": 0}


PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider("openai", "openai", "openai", "gpt-4o-mini", _openai_client, ChatCompletions(openai_chat)),
        Provider("anthropic", "anthropic", "anthropic", "claude-sonnet-5", _anthropic_client, Messages()),
        Provider("openai-responses", "openai", "openai", "gpt-4o-mini", _openai_client, Responses()),
        Provider("gemini", "google.genai", "gemini", "gemini-2.5-flash", _gemini_client, Gemini()),
        Provider(
            "bedrock", "boto3", "bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", _bedrock_client, Converse()
        ),
        Provider(
            "groq",
            "groq",
            "groq",
            "llama-3.3-70b-versatile",
            _groq_client,
            ChatCompletions(groq_chat, named_tool_message),
        ),
        Provider(
            "mistral",
            "mistralai",
            "mistral",
            "mistral-small-latest",
            _mistral_client,
            ChatCompletions(mistral_chat, named_tool_message),
        ),
        Provider(
            "ollama", "ollama", "ollama", "llama3.2", _ollama_client, ChatCompletions(ollama_chat, ollama_tool_message)
        ),
        Provider("cohere", "cohere", "cohere", "command-a-03-2025", _cohere_client, ChatCompletions(cohere_chat)),
        Provider(
            "litellm",
            "litellm",
            "litellm",
            "openai/gpt-4o-mini",
            _litellm_client,
            ChatCompletions(litellm_chat, named_tool_message),
        ),
    )
}
"""Every provider API the agent speaks, by name, in the order ``spanfold demo --help`` lists them."""

"""An embedded mock LLM server: real OpenAI and Anthropic SDK clients over real HTTP, no API key, no network.

    from spanfold.testing import MockLLMServer, Reply, ToolCallSpec

    with MockLLMServer() as server:
        server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]), Reply.text("Sunny."))
        client = openai.OpenAI(api_key="test-key", base_url=server.base_url, max_retries=0)
        ...  # anthropic.Anthropic(api_key="test-key", base_url=server.anthropic_base_url, max_retries=0)

It serves ``POST /v1/chat/completions``, ``/v1/messages`` and ``/v1/responses``, JSON or SSE (``"stream": true``), in
the providers' exact shapes. A ``Reply`` is provider-neutral: the same one renders for each API. Ids are deterministic
per server (``chatcmpl-mock-1``, ``call_mock_1``, ``toolu_mock_1``, ``msg_mock_1``, ``resp_mock_1``, ``fc_mock_1``) and
so is usage: input tokens ``count_tokens(prompt_of(body))``, output tokens ``count_tokens`` of the reply's text and
calls (one token per started 4 bytes), unless the reply gives ``usage=Usage(...)``.

The SDKs retry 408/409/429/5xx twice by default: build test clients with ``max_retries=0`` (or give
``Reply.error(..., should_retry=False)``).

A ``Scenario`` describes an agent's run once, as data: its prompt and question, its tools with their implementations
and the server's scripted replies (``WEATHER``: the demo's weather agent). ``run_agent`` plays the agent's side of it
on any provider API (``spanfold.testing.agents.PROVIDERS``: OpenAI chat and Responses, Anthropic, Gemini, Bedrock
Converse, groq, mistralai, ollama, Cohere, litellm), the client library imported only then::

    with MockLLMServer(WEATHER.replies) as server:
        client = openai.OpenAI(api_key="test-key", base_url=server.base_url, max_retries=0)
        answer = run_agent("openai", client, "Weather in Paris and Tokyo?")
"""

from spanfold.testing.agents import Provider, run_agent
from spanfold.testing.conversation import Api, Turn, prompt_of
from spanfold.testing.replay import RecordingReplay
from spanfold.testing.replies import RawResponse, Reply, ToolCallSpec, Usage, count_tokens
from spanfold.testing.request import MockRequest
from spanfold.testing.scenarios import (
    WEATHER,
    WEATHER_TOOLS_ANTHROPIC,
    WEATHER_TOOLS_GEMINI,
    WEATHER_TOOLS_OPENAI,
    WEATHER_TOOLS_RESPONSES,
    Scenario,
    Tool,
    convert_temperature,
    echo,
    get_weather,
    run_weather_tool,
    weather_agent,
)
from spanfold.testing.server import MockLLMServer, Responder

__all__ = [
    "WEATHER",
    "WEATHER_TOOLS_ANTHROPIC",
    "WEATHER_TOOLS_GEMINI",
    "WEATHER_TOOLS_OPENAI",
    "WEATHER_TOOLS_RESPONSES",
    "Api",
    "MockLLMServer",
    "MockRequest",
    "Provider",
    "RawResponse",
    "RecordingReplay",
    "Reply",
    "Responder",
    "Scenario",
    "Tool",
    "ToolCallSpec",
    "Turn",
    "Usage",
    "convert_temperature",
    "count_tokens",
    "echo",
    "get_weather",
    "prompt_of",
    "run_agent",
    "run_weather_tool",
    "weather_agent",
]

"""The agents the ui tests record: the real openai SDK over real HTTP to :class:`MockLLMServer`, with
``@spanfold.tool`` tools, under ``spanfold.agent``; the replies each run gets are scripted here, so a test knows every
step it will see (the weather run: two parallel ``get_weather`` calls, a ``convert_temperature`` call, an answer)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import spanfold
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec

MODEL = "gpt-4o-mini"
SYSTEM = "You are a weather assistant. Use the tools, then answer in one sentence."
QUESTION = "What's the weather in Paris and Tokyo? And Paris's temperature in fahrenheit, please."
ANSWER = "Paris: 18°C, sunny; Tokyo: 24°C, cloudy. 18°C is 64.4°F."
WEATHER_REPLIES = (
    Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"}), ToolCallSpec("get_weather", {"city": "Tokyo"})]),
    Reply.tools([ToolCallSpec("convert_temperature", {"celsius": 18})]),
    Reply.text(ANSWER),
)


@spanfold.tool
def get_weather(city: str) -> str:
    """Current weather in a city."""
    return {"Paris": "Paris: 18°C, sunny", "Tokyo": "Tokyo: 24°C, cloudy"}.get(city, f"{city}: unknown")


@spanfold.tool
def convert_temperature(celsius: float, to: str = "fahrenheit") -> str:
    """Convert a temperature from celsius."""
    return f"{celsius}°C is {celsius * 9 / 5 + 32:.1f}°F"


@spanfold.tool
def slow_weather(city: str) -> str:
    """A tool that takes long enough to draw a wide bar."""
    time.sleep(0.12)
    return f"{city}: 18°C"


TOOLS: dict[str, Callable[..., str]] = {
    "get_weather": get_weather,
    "convert_temperature": convert_temperature,
    "slow_weather": slow_weather,
}


def client(server: MockLLMServer) -> Any:
    import openai

    return openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)


def run(client: Any, question: str = QUESTION, *, system: str | None = SYSTEM, max_steps: int = 8) -> str:
    """The tool loop: call the model, run the tools it asks for, send their results back, until it answers."""
    messages: list[Any] = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": question}
    ]
    for _ in range(max_steps):
        message = client.chat.completions.create(model=MODEL, messages=messages).choices[0].message
        if not message.tool_calls:
            return str(message.content or "")
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            result = TOOLS[call.function.name](**json.loads(call.function.arguments), tool_call_id=call.id)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return ""


def weather(server: MockLLMServer, name: str = "weather-bot") -> str:
    """The weather run under an agent span named ``name``."""
    server.script(*WEATHER_REPLIES)
    with spanfold.agent(name):
        return run(client(server))

"""The code under test: a small tool-using agent (OpenAI Chat Completions, two tools).

Nothing here knows about the tests: spanfold traces the OpenAI client and the ``@spanfold.tool`` functions,
and the tests check the folded trace.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import spanfold
from spanfold.testing import scenarios

MODEL = "gpt-4o-mini"
SYSTEM = "You are a weather assistant. Use the tools, then answer in one sentence."
TOOLS = scenarios.WEATHER_TOOLS_OPENAI  # JSON schemas for get_weather(city) and convert_temperature(celsius, to)


@spanfold.tool
def get_weather(city: str) -> str:
    """Current weather in a city."""
    return scenarios.get_weather(city)


@spanfold.tool
def convert_temperature(celsius: float, to: str = "fahrenheit") -> str:
    """Convert a temperature from celsius."""
    return scenarios.convert_temperature(celsius, to)


FUNCTIONS: dict[str, Callable[..., str]] = {"get_weather": get_weather, "convert_temperature": convert_temperature}


def run_tool(name: str, arguments: str, call_id: str) -> str:
    """Run one tool the model asked for; a bad call becomes an error message for the model."""
    try:
        return FUNCTIONS[name](**json.loads(arguments or "{}"), tool_call_id=call_id)
    except Exception as exc:
        return f"error: {type(exc).__name__}: {exc}"


def ask(client: Any, question: str, *, max_steps: int = 6) -> str:
    """Answer ``question``: call the model, run the tools it asks for, send the results back, repeat."""
    messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    with spanfold.agent("weather-bot"):  # one trace per question
        for _ in range(max_steps):
            message = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS).choices[0].message
            messages.append(message)
            if not message.tool_calls:
                return str(message.content or "")
            for call in message.tool_calls:
                result = run_tool(call.function.name, call.function.arguments, call.id)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise RuntimeError(f"no answer after {max_steps} steps")

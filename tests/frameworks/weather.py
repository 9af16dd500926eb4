"""The weather agent every framework test runs: its tools as plain functions (a framework wraps them its own way), and
the flat trace the mock server's weather replies fold to, event by event."""

from __future__ import annotations

from typing import Any

from spanfold.testing import WEATHER, scenarios


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    if city == "Atlantis":
        raise ValueError(f"no forecast for {city}")
    return scenarios.get_weather(city)


def convert_temperature(celsius: float, to: str = "fahrenheit") -> str:
    """Convert a temperature in degrees Celsius to another unit."""
    return scenarios.convert_temperature(celsius, to)


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool call as the Invariant event holds it."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


ANSWER = "Here is the weather: Paris: 18°C, sunny; Tokyo: 24°C, cloudy. In Fahrenheit: 18°C is 64.4°F."
SYSTEM = {"role": "system", "content": WEATHER.system}
QUESTION = {"role": "user", "content": WEATHER.question}
#: The first model step's calls and their outputs.
FIRST_STEP = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            call("call_mock_1", "get_weather", {"city": "Paris"}),
            call("call_mock_2", "get_weather", {"city": "Tokyo"}),
        ],
    },
    {"role": "tool", "content": "Paris: 18°C, sunny", "tool_call_id": "call_mock_1"},
    {"role": "tool", "content": "Tokyo: 24°C, cloudy", "tool_call_id": "call_mock_2"},
]
#: What the run did after its system prompt and question: three model steps, three tool runs, the answer.
WEATHER_STEPS = [
    *FIRST_STEP,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_mock_3", "convert_temperature", {"celsius": 18, "to": "fahrenheit"})],
    },
    {"role": "tool", "content": "18°C is 64.4°F", "tool_call_id": "call_mock_3"},
    {"role": "assistant", "content": ANSWER},
]
#: The whole weather run.
WEATHER_RUN = [SYSTEM, QUESTION, *WEATHER_STEPS]

"""Built-in deterministic responders: ``echo`` and the multi-step tool-using ``weather_agent``, with its tools."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping
from typing import Any

from spanfold.testing.conversation import Turn
from spanfold.testing.replies import Reply, ToolCallSpec
from spanfold.testing.request import MockRequest

CITIES = ("Paris", "Tokyo")
DEFAULT_CELSIUS = 20

_FORECASTS: dict[str, tuple[int, str]] = {
    "paris": (18, "sunny"),
    "tokyo": (24, "cloudy"),
    "london": (12, "rainy"),
    "new york": (21, "clear"),
    "san francisco": (16, "foggy"),
}
_SKIES = ("sunny", "cloudy", "rainy", "windy")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def echo(request: MockRequest) -> Reply:
    """The default responder: ``"You said: <last user text>"``."""
    text = request.last_user_text()
    return Reply.text(f"You said: {text}" if text else "Hello from the mock LLM.")


# -- the weather tools: pure, deterministic -------------------------------------------------------------------------


def get_weather(city: str) -> str:
    """``"Paris: 18°C, sunny"``; a city not in the table gets a forecast derived from its name's bytes."""
    known = _FORECASTS.get(city.strip().lower())
    if known is None:
        seed = sum(city.encode("utf-8"))
        known = (seed % 35 - 5, _SKIES[seed % len(_SKIES)])
    celsius, sky = known
    return f"{city}: {celsius}°C, {sky}"


def _number(value: float) -> str:
    rounded = round(value, 2)
    return str(int(rounded)) if rounded == int(rounded) else str(rounded)


def convert_temperature(celsius: float, to: str = "fahrenheit") -> str:
    """``"18°C is 64.4°F"``; ``to`` is ``fahrenheit``, ``kelvin`` or ``celsius``."""
    unit = to.strip().lower()
    if unit in ("fahrenheit", "f"):
        return f"{_number(celsius)}°C is {_number(celsius * 9 / 5 + 32)}°F"
    if unit in ("kelvin", "k"):
        return f"{_number(celsius)}°C is {_number(celsius + 273.15)} K"
    if unit in ("celsius", "c"):
        return f"{_number(celsius)}°C is {_number(celsius)}°C"
    raise ValueError(f"unknown temperature unit {to!r}")


def run_weather_tool(name: str, arguments: Mapping[str, Any]) -> str:
    """Run ``get_weather`` or ``convert_temperature`` with a tool call's arguments."""
    if name == "get_weather":
        return get_weather(str(arguments["city"]))
    if name == "convert_temperature":
        return convert_temperature(float(arguments["celsius"]), str(arguments.get("to", "fahrenheit")))
    raise KeyError(f"unknown weather tool {name!r}")


_TOOLS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "get_weather",
        "Get the current weather in a city.",
        {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city name, e.g. Paris"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    ),
    (
        "convert_temperature",
        "Convert a temperature in degrees Celsius to another unit.",
        {
            "type": "object",
            "properties": {
                "celsius": {"type": "number", "description": "The temperature in degrees Celsius"},
                "to": {"type": "string", "enum": ["fahrenheit", "kelvin"], "description": "The target unit"},
            },
            "required": ["celsius", "to"],
            "additionalProperties": False,
        },
    ),
]

WEATHER_TOOLS_OPENAI: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}
    for name, description, schema in _TOOLS
]
"""Chat Completions ``tools``."""

WEATHER_TOOLS_ANTHROPIC: list[dict[str, Any]] = [
    {"name": name, "description": description, "input_schema": schema} for name, description, schema in _TOOLS
]
"""Anthropic Messages ``tools``."""

WEATHER_TOOLS_RESPONSES: list[dict[str, Any]] = [
    {"type": "function", "name": name, "description": description, "parameters": schema}
    for name, description, schema in _TOOLS
]
"""Responses API ``tools``."""

WEATHER_TOOLS_GEMINI: list[dict[str, Any]] = [
    {
        "function_declarations": [
            {"name": name, "description": description, "parameters_json_schema": schema}
            for name, description, schema in _TOOLS
        ]
    }
]
"""Gemini (google-genai) ``config.tools``: one tool of function declarations."""


# -- the agent ------------------------------------------------------------------------------------------------------


def _current_task(turns: list[Turn]) -> list[Turn]:
    """The turns after the last user message: the agent loop now running."""
    for index in range(len(turns) - 1, -1, -1):
        if turns[index].role == "user":
            return turns[index + 1 :]
    return turns


def _celsius(text: str) -> float | int:
    match = _NUMBER.search(text)
    if match is None:
        return DEFAULT_CELSIUS
    value = float(match.group())
    return int(value) if value == int(value) and "." not in match.group() else value


def weather_agent(request: MockRequest) -> Reply:
    """A three-step tool-using agent, decided from the conversation it is sent (any of the three APIs).

    1. no tool results yet: two parallel ``get_weather`` calls, Paris and Tokyo (only the cities still missing when
       some results are there);
    2. both weather results in: one ``convert_temperature`` call, ``celsius`` the first number in Paris's result
       (else 20), ``to="fahrenheit"``;
    3. its result in: the final answer, quoting the three tool results.

    A tool result is matched to its call by id (chat ``role: tool``, Anthropic ``tool_result``, Responses
    ``function_call_output``, including calls known only from ``previous_response_id``); results with an unknown
    id count as the weather results first, then the conversion.
    """
    task = _current_task(request.turns())
    calls = {call.id: call for turn in task for call in turn.tool_calls if call.id}
    weather: list[tuple[str, str]] = []
    conversions: list[str] = []
    for turn in task:
        if turn.role != "tool":
            continue
        call = calls.get(turn.tool_call_id or "")
        if call is not None and call.name == "get_weather":
            weather.append((str(call.arguments.get("city", "")), turn.text))
        elif call is None and len(weather) < len(CITIES):
            weather.append((CITIES[len(weather)], turn.text))
        elif call is None or call.name == "convert_temperature":
            conversions.append(turn.text)

    if conversions:
        reports = "; ".join(text for _, text in weather)
        return Reply.text(f"Here is the weather: {reports}. In Fahrenheit: {conversions[-1]}.")
    seen = {city.lower() for city, _ in weather}
    missing = [city for city in CITIES if city.lower() not in seen]
    if missing:
        return Reply.tools([ToolCallSpec("get_weather", {"city": city}) for city in missing])
    first = next((text for city, text in weather if city.lower() == CITIES[0].lower()), weather[0][1])
    return Reply.tools([ToolCallSpec("convert_temperature", {"celsius": _celsius(first), "to": "fahrenheit"})])


WEATHER_TOOLS_BEDROCK: list[dict[str, Any]] = [
    {"toolSpec": {"name": name, "description": description, "inputSchema": {"json": schema}}}
    for name, description, schema in _TOOLS
]
"""Bedrock Converse ``toolConfig["tools"]``."""


def failing_call(
    number: int, error: Reply, otherwise: Callable[[MockRequest], Reply] | None = None
) -> Callable[[MockRequest], Reply]:
    """A responder that answers call ``number`` (1-based) with ``error`` and every other call as ``otherwise`` (the
    weather agent by default): a server error in the middle of a run."""
    calls = itertools.count(1)
    fallback = otherwise or weather_agent

    def respond(request: MockRequest) -> Reply:
        return error if next(calls) == number else fallback(request)

    return respond

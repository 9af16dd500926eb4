"""Scenarios as data: an agent's task, its tools with their implementations, and the mock server's scripted replies
(:data:`WEATHER`); the built-in deterministic responders ``echo`` and the multi-step tool-using ``weather_agent``."""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import spanfold
from spanfold.testing.conversation import Turn
from spanfold.testing.replies import Reply, ToolCallSpec
from spanfold.testing.request import MockRequest

#: The tool-definition shapes of the provider APIs (named as the mock server names the APIs): OpenAI's Chat
#: Completions ``tools`` (also groq, mistralai, ollama, Cohere v2, litellm), Anthropic Messages, Responses, Gemini's
#: ``config.tools``, Bedrock Converse's ``toolConfig["tools"]``.
ToolFormat = Literal["chat", "messages", "responses", "gemini", "converse"]

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


@dataclass(frozen=True)
class Tool:
    """A tool the agent may call: what the model is told (name, description, JSON Schema of the arguments) and the
    function that runs it (called with the arguments as keywords, returns the text the model is sent back)."""

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., str]

    def definition(self, shape: ToolFormat) -> dict[str, Any]:
        """The tool as the API of ``shape`` declares it (one function declaration for Gemini)."""
        if shape == "chat":
            return {"type": "function", "function": self._described("parameters")}
        if shape == "messages":
            return self._described("input_schema")
        if shape == "responses":
            return {"type": "function", **self._described("parameters")}
        if shape == "gemini":
            return self._described("parameters_json_schema")
        return {
            "toolSpec": {"name": self.name, "description": self.description, "inputSchema": {"json": self.parameters}}
        }

    def _described(self, schema_key: str) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, schema_key: self.parameters}


def tool_definitions(tools: Iterable[Tool], shape: ToolFormat) -> list[dict[str, Any]]:
    """The ``tools`` a request of the API of ``shape`` carries (Gemini: one tool of function declarations)."""
    if shape == "gemini":
        return [{"function_declarations": [tool.definition(shape) for tool in tools]}]
    return [tool.definition(shape) for tool in tools]


WEATHER_TOOLS: tuple[Tool, ...] = (
    Tool(
        "get_weather",
        "Get the current weather in a city.",
        {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city name, e.g. Paris"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        get_weather,
    ),
    Tool(
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
        convert_temperature,
    ),
)
"""The weather agent's tools."""

WEATHER_TOOLS_OPENAI = tool_definitions(WEATHER_TOOLS, "chat")
"""Chat Completions ``tools``."""
WEATHER_TOOLS_ANTHROPIC = tool_definitions(WEATHER_TOOLS, "messages")
"""Anthropic Messages ``tools``."""
WEATHER_TOOLS_RESPONSES = tool_definitions(WEATHER_TOOLS, "responses")
"""Responses API ``tools``."""
WEATHER_TOOLS_GEMINI = tool_definitions(WEATHER_TOOLS, "gemini")
"""Gemini (google-genai) ``config.tools``: one tool of function declarations."""
WEATHER_TOOLS_BEDROCK = tool_definitions(WEATHER_TOOLS, "converse")
"""Bedrock Converse ``toolConfig["tools"]``."""


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


@dataclass(frozen=True)
class Scenario:
    """An agent's run described once, as data, for the demo, spanfold's tests and your own: the agent's ``name``, its
    task (the ``system`` prompt and the user's ``question``), the ``tools`` it may call, and the mock server's
    scripted ``replies`` (``MockLLMServer(scenario.replies)``). :func:`spanfold.testing.run_agent` plays the agent's
    side on any provider API."""

    name: str
    system: str
    question: str
    tools: tuple[Tool, ...]
    replies: Callable[[MockRequest], Reply]

    def definitions(self, shape: ToolFormat) -> list[dict[str, Any]]:
        """The scenario's tools as a request of the API of ``shape`` declares them."""
        return tool_definitions(self.tools, shape)

    @functools.cached_property
    def tool_functions(self) -> dict[str, Callable[..., str]]:
        """The tools as ``@spanfold.tool`` functions (an ``execute_tool`` span per call, with the tool's name and
        description; ``tool_call_id=`` records the model's call id), by name."""
        return {
            tool.name: spanfold.tool(name=tool.name, description=tool.description)(tool.function) for tool in self.tools
        }

    def run_tool(
        self,
        name: str,
        arguments: str,
        call_id: str | None = None,
        *,
        tools: Mapping[str, Callable[..., str]] | None = None,
    ) -> str:
        """Run one tool call the model asked for (``arguments``: its JSON text) with ``tools`` (by default
        :attr:`tool_functions`; each called with the arguments and ``tool_call_id=``). A call that fails becomes an
        error message for the model, as agents do."""
        functions = self.tool_functions if tools is None else tools
        try:
            return functions[name](**json.loads(arguments or "{}"), tool_call_id=call_id)
        except Exception as exc:  # the model sees the error
            return f"error: {type(exc).__name__}: {exc}"


WEATHER = Scenario(
    name="weather-bot",
    system="You are a weather assistant. Use the tools, then answer in one sentence.",
    question="What's the weather in Paris and Tokyo? And Paris's temperature in fahrenheit, please.",
    tools=WEATHER_TOOLS,
    replies=weather_agent,
)
"""The demo's run: two parallel ``get_weather`` calls (Paris, Tokyo), a ``convert_temperature`` call, an answer in one
sentence (:func:`weather_agent`)."""


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

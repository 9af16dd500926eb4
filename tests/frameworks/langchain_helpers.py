"""The weather agent written with LangChain tools and LangGraph's prebuilt ReAct agent, on the embedded mock server.

``create_react_agent`` is langgraph's prebuilt agent (``langchain.agents.create_agent`` is its successor, in the
``langchain`` package, not a dependency here); it warns that it moved, hence the filter.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException, tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import ToolNode, create_react_agent

from spanfold.testing import WEATHER, MockLLMServer, run_agent, scenarios
from spanfold.testing.agents import PROVIDERS

AGENT_NAME = "weather-bot"


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return scenarios.get_weather(city)


@tool
def convert_temperature(celsius: float, to: str = "fahrenheit") -> str:
    """Convert a temperature in degrees Celsius to another unit."""
    return scenarios.convert_temperature(celsius, to)


@tool("get_weather")
async def aget_weather(city: str) -> str:
    """Get the current weather in a city."""
    return scenarios.get_weather(city)


WEATHER_TOOLS: list[BaseTool] = [get_weather, convert_temperature]

#: What the flaky tools raised, so a test can check the very object reaches the caller.
RAISED: list[BaseException] = []


@tool("get_weather")
def failing_weather(city: str) -> str:
    """Get the current weather in a city."""
    if city == "Tokyo":
        exc = ValueError(f"no forecast for {city}")
        RAISED.append(exc)
        raise exc
    return scenarios.get_weather(city)


def _unknown_city_weather(city: str) -> str:
    """Get the current weather in a city."""
    if city == "Tokyo":
        raise ToolException(f"unknown city {city}")
    return scenarios.get_weather(city)


unknown_city_weather = StructuredTool.from_function(_unknown_city_weather, name="get_weather", handle_tool_error=True)


def chat_model(server: MockLLMServer, **options: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model=PROVIDERS["openai"].model, base_url=server.base_url, api_key="sk-test", max_retries=0, **options
    )  # type: ignore[arg-type]


def weather_agent(
    server: MockLLMServer, tools: Sequence[Any] | ToolNode = (), *, name: str = AGENT_NAME, **options: Any
) -> Any:
    """The prebuilt ReAct agent with the demo's system prompt (the conversation of ``run_agent("openai", ...)``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(
            chat_model(server, **options), tools or WEATHER_TOOLS, prompt=WEATHER.system, name=name
        )


def question(text: str = WEATHER.question) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def run_plain_openai_agent(*, stream: bool = False) -> None:
    """The plain-openai weather agent (``spanfold.testing``'s loop, in ``spanfold.agent``) on a fresh mock server: the
    flat trace a LangChain run must equal."""
    import openai

    import spanfold

    with MockLLMServer(scenarios.weather_agent) as server:
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        with spanfold.agent(AGENT_NAME):
            run_agent("openai", client, stream=stream)

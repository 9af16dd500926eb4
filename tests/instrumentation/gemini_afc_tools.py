"""Python functions google-genai's automatic function calling runs in the tests. No ``from __future__ import
annotations`` here: google-genai before 3.x reads the annotations as types (string annotations fail its argument
conversion, with or without spanfold)."""

import asyncio

from spanfold.testing import scenarios


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return scenarios.get_weather(city)


def convert_temperature(celsius: float, to: str) -> str:
    """Convert a temperature in degrees Celsius to another unit."""
    return scenarios.convert_temperature(celsius, to)


async def aget_weather(city: str) -> str:
    """Get the current weather in a city."""
    await asyncio.sleep(0)
    return scenarios.get_weather(city)


def failing_get_weather(city: str) -> str:
    """Get the current weather in a city."""
    raise RuntimeError(f"no station in {city}")


failing_get_weather.__name__ = "get_weather"

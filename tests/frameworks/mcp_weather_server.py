"""A stdio MCP server (the ``mcp`` SDK's MCPServer, formerly FastMCP) with the weather agent's tools, for tests that
start it as a subprocess through the SDK's ``stdio_client``."""

from __future__ import annotations

import time

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x: the same server, named FastMCP
    from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[no-redef]
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]

from spanfold.testing import scenarios

server = MCPServer("weather")


@server.tool()
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    if city == "Atlantis":
        raise ToolError(f"no forecast for {city}")  # its text reaches the client in an isError result
    return scenarios.get_weather(city)


@server.tool()
def convert_temperature(celsius: float, to: str = "fahrenheit") -> str:
    """Convert a temperature in degrees Celsius to another unit."""
    return scenarios.convert_temperature(celsius, to)


@server.tool()
def slow(seconds: float) -> str:
    """Sleep, then answer (a client timeout raises in ``call_tool``)."""
    time.sleep(seconds)
    return "done"


if __name__ == "__main__":
    server.run("stdio")

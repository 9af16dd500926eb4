"""A stdio MCP server whose one tool answers with the W3C ``traceparent`` its request carried in ``params._meta`` (the
trace context the client propagated), for tests that start it as a subprocess through the SDK's ``stdio_client``."""

from __future__ import annotations

from typing import Any

try:
    from mcp.server.mcpserver import Context, MCPServer
except ImportError:  # mcp 1.x: the same server, named FastMCP
    from mcp.server.fastmcp import Context  # type: ignore[no-redef]
    from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[no-redef]

server = MCPServer("trace")


def _meta_value(meta: Any, key: str) -> Any:
    if isinstance(meta, dict):
        return meta.get(key)
    value = getattr(meta, key, None)
    extra = getattr(meta, "model_extra", None)
    return value if value is not None else (extra or {}).get(key)


@server.tool()
def traceparent(ctx: Context) -> str:  # type: ignore[type-arg]
    """The traceparent this request carried, or an empty text."""
    return str(_meta_value(ctx.request_context.meta, "traceparent") or "")


if __name__ == "__main__":
    server.run("stdio")

"""What every renderer gets (the request, the server's id counters) and the interface it implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from spanfold.testing.replies import Reply, ToolCallSpec, Usage
from spanfold.testing.request import MockRequest
from spanfold.testing.state import Ids, ResponseStore

CREATED = 1_735_689_600
"""Every ``created`` / ``created_at`` timestamp the mock writes (2025-01-01T00:00:00Z): traces stay reproducible."""


@dataclass
class RenderContext:
    request: MockRequest
    ids: Ids = field(default_factory=Ids)
    store: ResponseStore = field(default_factory=ResponseStore)
    created: int = CREATED

    def usage(self, reply: Reply) -> Usage:
        """The reply's own usage, else ``request.input_tokens`` and ``reply.output_tokens()``."""
        if reply.usage is not None:
            return reply.usage
        return Usage(self.request.input_tokens, reply.output_tokens())

    def calls(self, reply: Reply, prefix: str) -> list[tuple[str, ToolCallSpec]]:
        """The reply's tool calls with their ids, a fresh ``{prefix}N`` where the call names none."""
        return [(call.id or self.ids.next(prefix), call) for call in reply.tool_calls]


class Frame(Protocol):
    """One message of a stream as bytes on the wire: an :class:`SSEEvent`, or an AWS event-stream message."""

    def encode(self) -> bytes: ...


class Renderer(Protocol):
    """Renders a message ``Reply`` as one API's JSON body, that body as its stream (SSE events, or the frames of
    ``stream_content_type`` when the renderer names one), and errors."""

    def body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]: ...

    def events(self, body: dict[str, Any], ctx: RenderContext) -> Sequence[Frame]: ...

    def error_body(self, reply: Reply, ctx: RenderContext) -> dict[str, Any]: ...

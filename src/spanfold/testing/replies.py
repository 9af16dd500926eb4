"""The provider-neutral reply model: what the mock server should answer, before any API shape is applied."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

ReplyKind = Literal["message", "error", "broken", "raw", "shaped"]

DEFAULT_BROKEN_TEXT = "This reply is cut short by a dropped connection."


def compact_json(value: Any) -> str:
    """JSON as the providers write tool arguments: no spaces, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def count_tokens(text: str) -> int:
    """The mock's token count: one token per started 4 bytes of UTF-8, at least 1."""
    return max(1, (len(text.encode("utf-8")) + 3) // 4)


@dataclass(frozen=True)
class ToolCallSpec:
    """One tool call the model makes. ``id`` is assigned by the server (``call_mock_N``, ``toolu_mock_N``) if None."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None

    @property
    def arguments_json(self) -> str:
        return compact_json(self.arguments)


@dataclass(frozen=True)
class Usage:
    """Token counts to report instead of the derived ones."""

    input_tokens: int
    output_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class RawResponse:
    """A response sent byte for byte (recordings): status, content type and body text."""

    status: int
    content_type: str
    body: str


@dataclass(frozen=True)
class Reply:
    """What to answer one request with; rendered into the shape of whichever API was called.

    Build it with the class methods: ``Reply.text``, ``Reply.tools``, ``Reply.error``, ``Reply.broken``, ``Reply.raw``,
    ``Reply.shaped``.
    """

    kind: ReplyKind = "message"
    content: str | None = None
    tool_calls: tuple[ToolCallSpec, ...] = ()
    usage: Usage | None = None
    status: int = 200
    message: str = ""
    error_type: str | None = None
    error_code: str | None = None
    should_retry: bool | None = None
    after_events: int = 0
    raw_response: RawResponse | None = None
    shaped_body: dict[str, Any] | None = field(default=None, hash=False, compare=False)

    @classmethod
    def text(cls, text: str, *, usage: Usage | None = None) -> Reply:
        """An assistant message with this text (finish reason ``stop`` / ``end_turn``)."""
        return cls(content=text, usage=usage)

    @classmethod
    def tools(cls, calls: Iterable[ToolCallSpec], text: str | None = None, *, usage: Usage | None = None) -> Reply:
        """One or more (parallel) tool calls, optionally after some text (finish reason ``tool_calls``/``tool_use``)."""
        return cls(content=text, tool_calls=tuple(calls), usage=usage)

    @classmethod
    def error(
        cls,
        status: int,
        message: str,
        *,
        type: str | None = None,
        code: str | None = None,
        should_retry: bool | None = None,
    ) -> Reply:
        """An HTTP error in the provider's error shape. ``type``/``code`` default from the status.

        ``should_retry`` sets the ``x-should-retry`` header both SDKs obey; without it they retry 408/409/429/5xx
        (``max_retries=2`` by default), so build test clients with ``max_retries=0``.
        """
        return cls(
            kind="error", status=status, message=message, error_type=type, error_code=code, should_retry=should_retry
        )

    @classmethod
    def broken(cls, after_events: int = 3, reply: Reply | None = None) -> Reply:
        """Send the first ``after_events`` stream events of ``reply`` then drop the connection.

        The final event (``[DONE]``, ``message_stop``, ``response.completed``) is never sent, however large the count.

        On a non-streaming request, half of the JSON body is sent before the drop.
        """
        base = reply if reply is not None else cls.text(DEFAULT_BROKEN_TEXT)
        if base.kind != "message":
            raise ValueError("Reply.broken() wraps a message reply (text or tools)")
        return dataclasses.replace(base, kind="broken", after_events=max(0, after_events))

    @classmethod
    def raw(cls, status: int, body: str, content_type: str = "application/json") -> Reply:
        """Exactly this body (JSON text or a raw SSE stream), as recorded."""
        return cls(kind="raw", status=status, raw_response=RawResponse(status, content_type, body))

    @classmethod
    def shaped(cls, body: dict[str, Any]) -> Reply:
        """Exactly this body of the API called (its own JSON: content blocks or parts the neutral reply has no word
        for), sent as JSON, or as that API's stream when the request streams (each block or part as the provider
        streams its kind)."""
        return cls(kind="shaped", shaped_body=body)

    def output_tokens(self) -> int:
        """Output tokens reported when ``usage`` is not given: ``count_tokens`` of the text and the calls."""
        if self.usage is not None:
            return self.usage.output_tokens
        parts = [self.content or ""]
        parts.extend(call.name + call.arguments_json for call in self.tool_calls)
        return count_tokens("".join(parts))

"""Anthropic Messages shapes -> the typed invocation (request, response, stream events).

Mapping (latest experimental GenAI conventions, Anthropic refinements): content blocks and usage as
:mod:`~spanfold.instrumentation.toolkit.reading.anthropic_blocks` reads them (each ``tool_result`` block of a user
message, and each server tool's result block of an assistant message, a ``tool`` message of its own, so a built-in
tool call folds as a call followed by its result), and:

* top-level ``system=`` (a string or text blocks) -> the system instructions (a list of parts);
* ``stop_reason`` -> the finish reasons, raw; a thread's ``previous_message_id`` -> the previous response; the SDK's
  ``_request_id`` (the ``request-id`` header) -> the request id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from spanfold.instrumentation.toolkit.invocation import Param, Request, Response
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading import params
from spanfold.instrumentation.toolkit.reading.anthropic_blocks import (
    TOOL_CALL_BLOCKS,
    block_parts,
    content_messages,
    usage,
)
from spanfold.instrumentation.toolkit.reading.blocks import Block, IndexedBlocks
from spanfold.instrumentation.toolkit.reading.history import History
from spanfold.semconv import parts as p

REQUEST_PARAMS: Final[dict[str, Param]] = {
    "max_tokens": "max_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
}


def input_messages(msg: Any) -> list[p.Message]:
    return content_messages(m.get(msg, "role"), m.field(msg, "content"))


def tool_definition(tool: Any) -> dict[str, Any]:
    kind = m.get(tool, "type")
    schema = m.get(tool, "input_schema")
    if schema is None and kind not in (None, "custom"):  # a server tool (web_search_20250305, bash_..., ...)
        return {"type": kind, "name": m.get(tool, "name")}
    return {
        "type": "function",
        "name": m.get(tool, "name"),
        "description": m.get(tool, "description"),
        "parameters": schema,
    }


_HISTORY = History(input_messages)
_TOOLS = History(tool_definition, messages=False, limit=1024)

# --- request -------------------------------------------------------------------------------------------


def system_parts(system: Any) -> list[p.Part]:
    if isinstance(system, str):
        return [p.text(system)]
    return [part for block in m.as_list(system) for part in block_parts(block)]


def _output_type(kwargs: Mapping[str, Any]) -> str | None:
    fmt = m.get(kwargs.get("output_config"), "format") if params.given(kwargs.get("output_config")) else None
    if params.given(kwargs.get("output_format")) or m.get(fmt, "type") == "json_schema":
        return "json"
    return None


def request(kwargs: dict[str, Any]) -> Request:
    """The request of ``create`` / ``parse`` / ``stream`` (and of a Claude body sent through Bedrock)."""
    m.materialize(kwargs, "messages", "system", "tools", "stop_sequences")
    req = Request(
        model=params.model_name(kwargs.get("model")),
        params=params.numbers(kwargs, REQUEST_PARAMS),
        output_type=_output_type(kwargs),
    )
    stops = kwargs.get("stop_sequences")
    if params.given(stops):
        req.stop_sequences = m.as_list(stops)
    thread = kwargs.get("thread")
    if params.given(thread) and m.get(thread, "type") == "continue":
        req.previous_response_id = m.get(thread, "previous_message_id")
    system = kwargs.get("system")
    if params.given(system):
        req.system = system_parts(system)
    messages = kwargs.get("messages")
    if params.given(messages):
        req.messages = _HISTORY.of(m.as_list(messages))
    tools = kwargs.get("tools")
    if params.given(tools):
        req.tools = _TOOLS.of(m.as_list(tools))
    return req


# --- output --------------------------------------------------------------------------------------------


def _response(message_id: Any, model: Any, content: list[Any], stop_reason: Any, used: Any) -> Response:
    return Response(
        id=message_id,
        model=model,
        finish_reasons=[stop_reason] if stop_reason else None,
        messages=content_messages("assistant", content),
        usage=usage(used),
    )


def response(result: Any) -> Response:
    """A complete ``Message`` / ``BetaMessage`` / ``ParsedMessage`` (or a Claude body from Bedrock, a dict)."""
    out = _response(
        m.get(result, "id"),
        m.get(result, "model"),
        m.as_list(m.get(result, "content")),
        m.get(result, "stop_reason"),
        m.get(result, "usage"),
    )
    request_id = getattr(result, "_request_id", None)  # set by the SDK from the response headers
    if isinstance(request_id, str):
        out.request_id = request_id
    return out


def _streamed_block(block: Block) -> Any:
    """A content block as the stream built it: its start block completed by the deltas that followed."""
    start = block.start
    if not block.fragments:
        return start
    kind = m.get(start, "type")
    joined = block.text()
    if kind == "text":
        return {"type": "text", "text": (m.get(start, "text") or "") + joined}
    if kind == "thinking":
        return {"type": "thinking", "thinking": (m.get(start, "thinking") or "") + joined}
    if kind == "compaction":
        return {"type": "compaction", "content": (m.get(start, "content") or "") + joined}
    if kind in TOOL_CALL_BLOCKS:  # the start block's ``input`` is ``{}``; the fragments make the real one
        arguments = joined if joined.strip() else m.get(start, "input")
        return {"type": kind, "id": m.get(start, "id"), "name": m.get(start, "name"), "input": arguments}
    return start


_USAGE_KEYS: Final = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


class MessageStreamAccumulator:
    """Accumulates raw Messages stream events: per-index blocks (text, ``input_json_delta`` fragments assembled
    into the arguments, thinking, a compaction's summary; citation and signature deltas carry no text),
    ``message_start`` (id, model, input usage) and ``message_delta`` (stop reason, output usage)."""

    __slots__ = ("blocks", "id", "model", "stop_reason", "usage")

    def __init__(self) -> None:
        self.id: Any = None
        self.model: Any = None
        self.stop_reason: Any = None
        self.usage: dict[str, Any] = {}
        self.blocks = IndexedBlocks()

    def _usage(self, usage: Any) -> None:
        if usage is None:
            return
        for key in _USAGE_KEYS:
            value = m.get(usage, key)
            if value is not None:
                self.usage[key] = value

    def add(self, event: Any) -> None:
        kind = event.type
        if kind == "content_block_delta":
            delta = event.delta
            delta_type = delta.type
            if delta_type == "text_delta":
                self.blocks.add(event.index, delta.text)
            elif delta_type == "input_json_delta":
                self.blocks.add(event.index, delta.partial_json)
            elif delta_type == "thinking_delta":
                self.blocks.add(event.index, delta.thinking)
            elif delta_type == "compaction_delta":
                self.blocks.add(event.index, m.get(delta, "content") or "")
        elif kind == "content_block_start":
            self.blocks.start(event.index, event.content_block)
        elif kind == "message_start":
            message = event.message
            self.id = message.id
            self.model = message.model
            self._usage(message.usage)
            for index, block in enumerate(message.content or ()):
                self.blocks.start(index, block)
        elif kind == "message_delta":
            reason = m.get(event.delta, "stop_reason")
            if reason:
                self.stop_reason = reason
            self._usage(m.get(event, "usage"))

    def result(self) -> Response:
        content = [_streamed_block(block) for block in self.blocks.ordered()]
        return _response(self.id, self.model, content, self.stop_reason, self.usage or None)

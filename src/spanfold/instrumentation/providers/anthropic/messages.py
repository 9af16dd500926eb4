"""Anthropic Messages shapes -> the typed invocation (request, response, stream events).

Mapping (latest experimental GenAI conventions, Anthropic refinements):

* top-level ``system=`` (a string or text blocks) -> the system instructions (a list of parts);
* ``tool_use`` / ``server_tool_use`` / ``mcp_tool_use`` blocks -> ``tool_call`` parts;
* each ``tool_result`` block of a user message -> its own ``{"role": "tool", "parts": [tool_call_response]}``
  message, in block order; the user message's other blocks stay a ``user`` message. The result blocks of server
  tools (``web_search_tool_result``, ``mcp_tool_result``, ...) in assistant content split the assistant message the
  same way, so a built-in tool call folds as a call followed by its result;
* ``thinking`` / ``redacted_thinking`` -> ``reasoning`` parts; images -> ``blob`` (base64), ``uri`` (url) or ``file``
  (file id) parts; documents likewise, a plain-text document as a ``text`` part; ``search_result`` blocks (results
  the model reads) and ``compaction`` blocks (the summary that stands for the turns before it) -> ``text``;
  ``container_upload`` -> ``file``; blocks without content the model reads (``fallback``, tool listings and tool
  set changes) keep their type only;
* input tokens = input + cache read + cache creation tokens, with the two cache counts beside them;
* ``stop_reason`` -> the finish reasons, raw; a thread's ``previous_message_id`` -> the previous response; the SDK's
  ``_request_id`` (the ``request-id`` header) -> the request id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from spanfold import semconv
from spanfold.instrumentation.toolkit.invocation import Param, Request, Response, Usage, usage_with_cache
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading import params
from spanfold.instrumentation.toolkit.reading.blocks import Block, IndexedBlocks
from spanfold.instrumentation.toolkit.reading.history import History
from spanfold.semconv import parts as p
from spanfold.semconv import shapes

REQUEST_PARAMS: Final[dict[str, Param]] = {
    "max_tokens": "max_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
}

_TOOL_CALL_BLOCKS: Final = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
#: Tool results whose content is a string or content blocks (the other server tools' results are their own JSON).
_TOOL_RESULT_BLOCKS: Final = frozenset({"tool_result", "mcp_tool_result"})
#: Blocks whose ``content`` is text the model reads: a string, or text blocks.
_TEXT_CONTENT_BLOCKS: Final = frozenset({"search_result", "compaction"})
#: Modality of a content block's source, by block type.
_MODALITY: Final = {"image": "image", "document": "document"}

# --- content blocks ------------------------------------------------------------------------------------


def _source_part(block: Any) -> p.Part:
    """An ``image`` / ``document`` block by its ``source``: base64 -> blob, url -> uri, file -> file, text -> text."""
    kind = m.get(block, "type")
    modality = _MODALITY.get(kind, str(kind))
    source = m.get(block, "source")
    source_type = m.get(source, "type")
    if source_type == "base64":
        return p.blob(m.get(source, "data"), m.get(source, "media_type"), modality)
    if source_type == "url":
        return p.uri(m.get(source, "url"), modality)
    if source_type == "file":
        return p.file(m.get(source, "file_id"), modality)
    if source_type == "text":
        return p.text(m.get(source, "data"))
    if source_type == "content":  # a document made of content blocks: its text
        return p.text(_texts(m.field(source, "content")))
    return p.other(kind)


def _texts(blocks: Any) -> str:
    """The text of the ``text`` blocks among ``blocks``, joined."""
    return "".join(str(m.get(b, "text") or "") for b in m.as_list(blocks) if m.get(b, "type") == "text")


def tool_result_response(content: Any) -> Any:
    """A ``tool_result``'s content as a ``tool_call_response`` response: its text, or parts when it has media."""
    if content is None or isinstance(content, str):
        return content
    blocks = m.as_list(content)
    if all(m.get(b, "type") == "text" for b in blocks):
        return _texts(blocks)
    return [part for b in blocks for part in block_parts(b)]


def _server_result_response(block: Any) -> Any:
    """A server tool's result block (``web_search_tool_result``, ...): its ``content`` as it comes (JSON)."""
    content = m.get(block, "content")
    dump = getattr(content, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    if isinstance(content, list):
        return [c.model_dump(mode="json", exclude_none=True) if hasattr(c, "model_dump") else c for c in content]
    return content


def block_parts(block: Any) -> list[p.Part]:
    """The parts of one content block (none for blocks without content, such as an empty text)."""
    if isinstance(block, str):
        return [p.text(block)]
    kind = m.get(block, "type")
    if kind == "text":
        return [p.text(m.get(block, "text"))]
    if kind in _TOOL_CALL_BLOCKS:
        return [p.tool_call(m.get(block, "id"), m.get(block, "name"), m.get(block, "input"))]
    if kind == "thinking":
        return [p.reasoning(m.get(block, "thinking"))]
    if kind == "redacted_thinking":  # encrypted: nothing readable to keep
        return [p.other(semconv.PART_REASONING)]
    if kind in _MODALITY:
        return [_source_part(block)]
    if kind in _TEXT_CONTENT_BLOCKS:  # a search result's text blocks, or a compaction's summary (None: it failed)
        content = m.field(block, "content")
        if content is None:
            return []
        return [p.text(content if isinstance(content, str) else _texts(content))]
    if kind == "container_upload":
        return [p.file(m.get(block, "file_id"), "document")]
    if kind in _TOOL_RESULT_BLOCKS:
        return [p.tool_response(m.get(block, "tool_use_id"), tool_result_response(m.field(block, "content")))]
    if isinstance(kind, str) and kind.endswith("_tool_result"):
        return [p.tool_response(m.get(block, "tool_use_id"), _server_result_response(block))]
    return [p.other(kind)]


def content_messages(role: Any, content: Any) -> list[p.Message]:
    """One Anthropic message's content as semconv messages: each tool result in a ``tool`` message of its own, the
    other blocks in ``role`` messages around them, in block order."""
    if content is None or isinstance(content, str):
        return [p.message(role, [p.text(content)] if content is not None else [])]
    parts = [part for block in m.as_list(content) for part in block_parts(block)]
    return shapes.split_tool_responses(role, parts, p.message)


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


def usage(value: Any) -> Usage | None:
    """Usage per the Anthropic refinement: input tokens include the cache reads and writes."""
    if value is None:
        return None
    return usage_with_cache(
        m.get(value, "input_tokens"),
        m.get(value, "output_tokens"),
        m.get(value, "cache_read_input_tokens"),
        m.get(value, "cache_creation_input_tokens"),
    )


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
    if kind in _TOOL_CALL_BLOCKS:  # the start block's ``input`` is ``{}``; the fragments make the real one
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

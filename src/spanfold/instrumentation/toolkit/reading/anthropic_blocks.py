"""Anthropic's content blocks -> typed parts and messages, and its usage: the shape the Anthropic Messages API, Claude
bodies sent through Amazon Bedrock and the Claude Agent SDK's messages share. A block is a dict or an SDK object with
a ``type``; a caller whose blocks have none (the Claude Agent SDK's dataclasses) names the type.

* ``tool_use`` / ``server_tool_use`` / ``mcp_tool_use`` -> ``tool_call`` parts; ``tool_result`` / ``mcp_tool_result``
  -> ``tool_call_response`` (its text, or parts when it has media), the other ``*_tool_result`` blocks their content as
  JSON; :func:`content_messages` puts each in a ``tool`` message of its own;
* ``thinking`` / ``redacted_thinking`` -> ``reasoning`` parts; images -> ``blob`` (base64), ``uri`` (url) or ``file``
  (file id) parts; documents likewise, a plain-text document as a ``text`` part; ``search_result`` blocks (results
  the model reads) and ``compaction`` blocks (the summary that stands for the turns before it) -> ``text``;
  ``container_upload`` -> ``file``; blocks without content the model reads (``fallback``, tool listings and tool
  set changes) keep their type only;
* input tokens = input + cache read + cache creation tokens, with the two cache counts beside them.
"""

from __future__ import annotations

from typing import Any, Final

from spanfold import semconv
from spanfold.instrumentation.toolkit.invocation import Usage, usage_with_cache
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.semconv import parts as p
from spanfold.semconv import shapes

#: Blocks that call a tool (the stream fills their input).
TOOL_CALL_BLOCKS: Final = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
#: Tool results whose content is a string or content blocks (the other server tools' results are their own JSON).
_TOOL_RESULT_BLOCKS: Final = frozenset({"tool_result", "mcp_tool_result"})
#: Blocks whose ``content`` is text the model reads: a string, or text blocks.
_TEXT_CONTENT_BLOCKS: Final = frozenset({"search_result", "compaction"})
#: Modality of a content block's source, by block type.
_MODALITY: Final = {"image": "image", "document": "document"}


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


def block_parts(block: Any, kind: Any = None) -> list[p.Part]:
    """The parts of one content block (``kind``: its type, when the block does not say it)."""
    if isinstance(block, str):
        return [p.text(block)]
    kind = kind or m.get(block, "type")
    if kind == "text":
        return [p.text(m.get(block, "text"))]
    if kind in TOOL_CALL_BLOCKS:
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

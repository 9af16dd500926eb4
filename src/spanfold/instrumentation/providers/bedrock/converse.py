"""Bedrock Converse shapes -> a typed invocation (request, response, ConverseStream events).

The Amazon Nova model bodies of ``invoke_model`` are the same shapes (``system``, ``messages[].content[]``,
``toolConfig``, ``output.message``, ``stopReason``, ``usage``; their stream chunks are ConverseStream events), so
:mod:`spanfold.instrumentation.providers.bedrock.invoke` maps them through this module too.

Mapping:

* ``system`` blocks -> the system instructions; ``inferenceConfig`` -> the request parameters and stop sequences;
* content blocks (one key each; the ``ContentBlock`` union of the Converse API reference): ``text``; ``image`` /
  ``document`` / ``video`` / ``audio`` by ``source``: ``bytes`` -> ``blob`` (base64, as the wire carries it),
  ``s3Location`` -> ``uri``, a document's ``text`` / ``content`` -> ``text``; ``guardContent`` (text or an image a
  guardrail checks, which the model reads too) -> ``text`` / ``blob``; ``citationsContent`` (the model's cited text)
  and ``searchResult`` (search results the model reads) -> ``text``; ``toolUse`` -> ``tool_call``; ``toolResult`` ->
  its own ``tool`` message (``shapes.split_tool_responses``); ``reasoningContent`` -> ``reasoning`` (redacted
  reasoning keeps its type only); ``cachePoint`` -> nothing; others (``toolAddition``, ``toolRemoval``) keep their
  type;
* ``toolConfig.tools[].toolSpec`` -> the tool definitions;
* ``stopReason`` -> the finish reason, raw;
* input tokens = input + cache read + cache write tokens, the two cache counts beside them.
"""

from __future__ import annotations

import base64
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

#: ``inferenceConfig`` keys (Converse camelCase; the Nova body's snake_case aliases).
REQUEST_PARAMS: Final[dict[str, Param]] = {
    "maxTokens": "max_tokens",
    "max_new_tokens": "max_tokens",
    "temperature": "temperature",
    "topP": "top_p",
    "top_p": "top_p",
    "topK": "top_k",
    "top_k": "top_k",
}
#: The content blocks that carry media by ``source``.
_MEDIA: Final = ("image", "document", "video", "audio")
_MIME_PREFIX: Final = {"image": "image/", "video": "video/", "audio": "audio/"}
_DOCUMENT_MIME: Final = {
    "pdf": "application/pdf",
    "csv": "text/csv",
    "html": "text/html",
    "txt": "text/plain",
    "md": "text/markdown",
    "doc": "application/msword",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xls": "application/vnd.ms-excel",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}

# --- content blocks ------------------------------------------------------------------------------------


def _mime(kind: str, fmt: Any) -> Any:
    if not isinstance(fmt, str):
        return None
    return _DOCUMENT_MIME.get(fmt) if kind == "document" else _MIME_PREFIX.get(kind, "") + fmt


def _media_part(kind: str, media: Any) -> p.Part:
    """An ``image`` / ``document`` / ``video`` / ``audio`` block by its ``source``."""
    source = m.get(media, "source")
    data = m.get(source, "bytes")
    if data is not None:  # boto3 takes raw bytes (and base64-encodes them); a Nova body carries base64 text
        if isinstance(data, (bytes, bytearray)):
            data = base64.b64encode(data).decode("ascii")
        return p.blob(data, _mime(kind, m.get(media, "format")), kind)
    location = m.get(source, "s3Location")
    if location is not None:
        return p.uri(m.get(location, "uri"), kind, mime_type=_mime(kind, m.get(media, "format")))
    if m.get(source, "text") is not None:
        return p.text(m.get(source, "text"))
    if m.get(source, "content") is not None:
        return p.text(_joined(m.get(source, "content")))
    return p.other(kind)


def _joined(blocks: Any) -> str:
    """The texts of ``{"text": ...}`` blocks (a document's, a search result's, cited content), joined."""
    texts = [m.get(block, "text") for block in m.as_list(blocks)]
    return "".join(str(t) for t in texts if t is not None)


def _guarded(guard: Any) -> list[p.Part]:
    """A ``guardContent`` block: its ``text`` (with qualifiers, which only tell the guardrail what it is) or image."""
    text = m.get(guard, "text")
    if text is not None:
        return [p.text(m.get(text, "text"))]
    image = m.get(guard, "image")
    return [_media_part("image", image)] if image is not None else [p.other("guardContent")]


def _tool_result(content: Any) -> Any:
    """A ``toolResult``'s content: its text (a JSON item as the text the model reads), or parts when it has media."""
    blocks = m.as_list(content)
    if all(m.get(b, "text") is not None or m.get(b, "json") is not None for b in blocks):
        texts = [m.get(b, "text") if m.get(b, "text") is not None else m.dumps(m.get(b, "json")) for b in blocks]
        return "".join(str(t) for t in texts)
    return [part for b in blocks for part in block_parts(b)]


def block_parts(block: Any) -> list[p.Part]:
    """The parts of one content block (a dict with one key naming its kind)."""
    if not isinstance(block, Mapping):
        return []
    if "text" in block:
        return [p.text(block["text"])]
    if "json" in block:  # an item of a tool result's content, as the text the model reads
        return [p.text(m.dumps(block["json"]))]
    if "toolUse" in block:
        use = block["toolUse"]
        return [p.tool_call(m.get(use, "toolUseId"), m.get(use, "name"), m.get(use, "input"))]
    if "toolResult" in block:
        result = block["toolResult"]
        return [p.tool_response(m.get(result, "toolUseId"), _tool_result(m.get(result, "content")))]
    for kind in _MEDIA:
        if kind in block:
            return [_media_part(kind, block[kind])]
    if "guardContent" in block:
        return _guarded(block["guardContent"])
    if "reasoningContent" in block:
        text = m.get(m.get(block["reasoningContent"], "reasoningText"), "text")
        return [p.reasoning(text) if text is not None else p.other(semconv.PART_REASONING)]
    for kind in ("citationsContent", "searchResult"):
        if kind in block:
            return [p.text(_joined(m.get(block[kind], "content")))]
    if "cachePoint" in block:
        return []
    return [p.other(next(iter(block), "unknown"))]


def content_messages(role: Any, content: Any) -> list[p.Message]:
    """One Bedrock message as semconv messages: tool results become ``tool`` messages of their own."""
    parts = [part for block in m.as_list(content) for part in block_parts(block)]
    return shapes.split_tool_responses(role, parts, p.message)


def input_messages(msg: Any) -> list[p.Message]:
    return content_messages(m.get(msg, "role"), m.get(msg, "content"))


def tool_definition(tool: Any) -> list[dict[str, Any]]:
    """A ``toolConfig.tools`` item's definition (none for a cachePoint or a system tool)."""
    spec = m.get(tool, "toolSpec")
    if spec is None:
        return []
    return [
        {
            "type": "function",
            "name": m.get(spec, "name"),
            "description": m.get(spec, "description"),
            "parameters": m.get(m.get(spec, "inputSchema"), "json"),
        }
    ]


_HISTORY: Final = History(input_messages)
_TOOLS: Final = History(tool_definition, messages=False, limit=1024)


def request(body: Mapping[str, Any]) -> Request:
    """A Converse request (or a Nova body)."""
    config = body.get("inferenceConfig")
    req = Request(
        model=params.model_name(body.get("modelId")),
        params=params.numbers(config, REQUEST_PARAMS),
        stop_sequences=params.string_list(m.get(config, "stopSequences")) or None,
    )
    system = body.get("system")
    if system:
        req.system = [part for block in m.as_list(system) for part in block_parts(block)]
    messages = body.get("messages")
    if messages is not None:
        req.messages = _HISTORY.of(m.as_list(messages))
    tools = m.get(body.get("toolConfig"), "tools")
    if tools:
        req.tools = _TOOLS.of(m.as_list(tools))
    return req


# --- output --------------------------------------------------------------------------------------------

#: (Converse key, Nova body key) of the two cache counts.
_CACHE_READ: Final = ("cacheReadInputTokens", "cacheReadInputTokenCount")
_CACHE_WRITE: Final = ("cacheWriteInputTokens", "cacheWriteInputTokenCount")


def _first(usage: Any, keys: tuple[str, ...]) -> Any:
    return next((value for value in (m.get(usage, key) for key in keys) if value is not None), None)


def usage(value: Any) -> Usage | None:
    if value is None:
        return None
    cache_read, cache_write = _first(value, _CACHE_READ), _first(value, _CACHE_WRITE)
    return usage_with_cache(m.get(value, "inputTokens"), m.get(value, "outputTokens"), cache_read, cache_write)


def result(content: Any, stop_reason: Any, tokens: Any) -> Response:
    """The answer of a call: its content blocks, stop reason and usage."""
    return Response(
        finish_reasons=[stop_reason] if stop_reason else None,
        messages=content_messages("assistant", content),
        usage=usage(tokens),
    )


def response(answer: Any) -> Response:
    """A Converse response dict (or a Nova body)."""
    message = m.get(m.get(answer, "output"), "message")
    out = result(m.get(message, "content"), m.get(answer, "stopReason"), m.get(answer, "usage"))
    out.request_id = m.get(m.get(answer, "ResponseMetadata"), "RequestId")
    return out


def _streamed_block(block: Block) -> dict[str, Any]:
    """A content block as the stream built it: the start (a tool use, a server tool's result, an image) or the
    deltas' kind, with its text."""
    kind = block.fields.get("kind", "text")
    if kind == "toolUse":
        use = m.get(block.start, "toolUse")
        return {"toolUse": {"toolUseId": m.get(use, "toolUseId"), "name": m.get(use, "name"), "input": block.text()}}
    if kind == "toolResult":
        started = m.get(block.start, "toolResult")
        return {"toolResult": {"toolUseId": m.get(started, "toolUseId"), "content": block.fields.get("items", [])}}
    if kind == "image":
        return {"image": {"format": m.get(m.get(block.start, "image"), "format"), "source": block.fields.get("source")}}
    if kind == "reasoningContent":
        if block.fields.get("redacted"):
            return {"reasoningContent": {"redactedContent": b""}}
        return {"reasoningContent": {"reasoningText": {"text": block.text()}}}
    return {"text": block.text()}


#: The blocks a ``contentBlockStart`` opens (a text or reasoning block starts with its first delta).
_STARTED_KINDS: Final = frozenset({"toolUse", "toolResult", "image"})


class ConverseStreamAccumulator:
    """Accumulates ConverseStream events (dicts with one key): ``contentBlockStart`` (a tool use, a server tool's
    result, an image), per-index ``contentBlockDelta`` fragments (text, tool input JSON, reasoning, a tool result's
    items, an image's source; a citation's metadata is not content: its text comes as text), ``messageStop`` (the
    stop reason), ``metadata`` (usage)."""

    __slots__ = ("blocks", "stop_reason", "usage")

    def __init__(self) -> None:
        self.blocks = IndexedBlocks()
        self.stop_reason: Any = None
        self.usage: Any = None

    def add(self, event: Any) -> None:
        delta = event.get("contentBlockDelta")
        if delta is not None:
            block = self.blocks.open(delta.get("contentBlockIndex", 0))
            body = delta.get("delta") or {}
            if "text" in body:
                block.fragments.append(body["text"])
            elif "toolUse" in body:
                block.fields.setdefault("kind", "toolUse")
                block.fragments.append(body["toolUse"].get("input") or "")
            elif "reasoningContent" in body:
                block.fields["kind"] = "reasoningContent"
                reasoning = body["reasoningContent"]
                if "text" in reasoning:
                    block.fragments.append(reasoning["text"])
                elif "redactedContent" in reasoning:
                    block.fields["redacted"] = True
            elif "toolResult" in body:
                block.fields.setdefault("items", []).extend(body["toolResult"] or ())
            elif "image" in body:
                block.fields["source"] = body["image"].get("source")
        elif "contentBlockStart" in event:
            start = event["contentBlockStart"]
            block = self.blocks.start(start.get("contentBlockIndex", 0), start.get("start"))
            kind = next(iter(start.get("start") or ()), None)
            if kind in _STARTED_KINDS:
                block.fields["kind"] = kind
        elif "messageStop" in event:
            self.stop_reason = event["messageStop"].get("stopReason")
        elif "metadata" in event:
            self.usage = event["metadata"].get("usage")

    def result(self) -> Response:
        return result([_streamed_block(block) for block in self.blocks.ordered()], self.stop_reason, self.usage)

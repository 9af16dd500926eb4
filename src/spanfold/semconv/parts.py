"""Typed message parts and the only builders that make them.

Every piece of content a span records enters through a builder here, which applies the
:class:`~spanfold.content.runtime.
Runtime` it is given: with content capture off a part keeps its structure (type, tool-call id and name, modality)
and loses every piece of content; with redaction on, text, reasoning, tool-call arguments, tool results and URIs are
redacted. Base64 blob data is recorded as it comes (it is not text to redact) and only with capture on.

Message JSON (``gen_ai.input.messages`` / ``gen_ai.output.messages``)::

    [{"role": "user", "parts": [{"type": "text", "content": "hi"}]},
     {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "f", "arguments": {"x": 1}}]},
     {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "42"}]}]

A part of a kind the conventions name no type for is a generic part (``{"type": "generic", "generic_type":
"guardContent"}``). Output messages carry no ``finish_reason``: the conventions keep finish reasons in the span's
``gen_ai.response.finish_reasons``. ``gen_ai.system_instructions`` is a list of parts.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from spanfold.codecs import jsonio
from spanfold.content.runtime import Runtime
from spanfold.semconv import names


class TextPart(TypedDict, total=False):
    type: Literal["text"]
    content: Any


class ReasoningPart(TypedDict, total=False):
    type: Literal["reasoning"]
    content: Any


class ToolCallPart(TypedDict, total=False):
    type: Literal["tool_call"]
    id: Any
    name: Any
    arguments: Any


class ToolCallResponsePart(TypedDict, total=False):
    type: Literal["tool_call_response"]
    id: Any
    response: Any


class BlobPart(TypedDict, total=False):
    type: Literal["blob"]
    modality: str
    mime_type: Any
    content: Any


class UriPart(TypedDict, total=False):
    type: Literal["uri"]
    modality: str
    mime_type: Any
    uri: Any


class FilePart(TypedDict, total=False):
    type: Literal["file"]
    modality: str
    file_id: Any


class OtherPart(TypedDict, total=False):
    """A part of a named type with nothing recorded but its type (a reasoning block whose text is withheld), or a
    generic part: a kind the conventions name no type for, in ``generic_type``."""

    type: str
    generic_type: str


Part = TextPart | ReasoningPart | ToolCallPart | ToolCallResponsePart | BlobPart | UriPart | FilePart | OtherPart


class Message(TypedDict, total=False):
    role: Any
    parts: list[Part]
    finish_reason: str
    name: Any


def parse_json_arguments(raw: Any) -> Any:
    """Tool-call arguments as an object when they are JSON text; unparseable text is kept as it is."""
    if isinstance(raw, str):
        try:
            return jsonio.loads(raw)
        except ValueError:
            return raw
    return raw


def text(value: Any, rt: Runtime) -> TextPart:
    if rt.capture_content:
        return {"type": "text", "content": rt.content(value)}
    return {"type": "text"}


def reasoning(value: Any, rt: Runtime) -> ReasoningPart:
    if rt.capture_content:
        return {"type": "reasoning", "content": rt.content(value)}
    return {"type": "reasoning"}


def tool_call(call_id: Any, name: Any, arguments: Any, rt: Runtime) -> ToolCallPart:
    part: ToolCallPart = {"type": "tool_call", "id": call_id, "name": name}
    if rt.capture_content:
        part["arguments"] = rt.content(parse_json_arguments(arguments))
    return part


def tool_response(call_id: Any, response: Any, rt: Runtime) -> ToolCallResponsePart:
    part: ToolCallResponsePart = {"type": "tool_call_response", "id": call_id}
    if rt.capture_content:
        part["response"] = rt.content(response)
    return part


def blob(data: Any, mime_type: Any, modality: str, rt: Runtime) -> BlobPart:
    part: BlobPart = {"type": "blob", "modality": modality, "mime_type": mime_type}
    if rt.capture_content:
        part["content"] = data
    return part


def uri(url: Any, modality: str, rt: Runtime, mime_type: Any = None) -> UriPart:
    part: UriPart = {"type": "uri", "modality": modality}
    if mime_type is not None:
        part["mime_type"] = mime_type
    if rt.capture_content:
        part["uri"] = rt.content(url)
    return part


def media(url: str, modality: str, rt: Runtime) -> BlobPart | UriPart:
    """A ``data:`` URL becomes a blob part, any other URL a uri part."""
    if url.startswith("data:") and ";base64," in url:
        header, _, data = url.partition(";base64,")
        return blob(data, header[5:] or None, modality, rt)
    return uri(url, modality, rt)


def file(file_id: Any, modality: str) -> FilePart:
    return {"type": "file", "modality": modality, "file_id": file_id}


def other(kind: Any) -> OtherPart:
    """A part of ``kind`` with no content recorded: its type, when the conventions name it, else a generic part."""
    name = str(kind)
    if name in names.PART_TYPES:
        return {"type": name}
    return {"type": names.PART_GENERIC, "generic_type": name}


def message(role: Any, parts: list[Part], **extra: Any) -> Message:
    """A message; ``extra`` keys (``name``) are set when not None. A ``finish_reason`` is not: the conventions keep
    finish reasons in the span's ``gen_ai.response.finish_reasons``."""
    out: dict[str, Any] = {"role": role, "parts": parts}
    for key, value in extra.items():
        if value is not None and key != "finish_reason":
            out[key] = value
    return out  # type: ignore[return-value]

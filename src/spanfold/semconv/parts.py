"""Typed message parts, the only builders that make them, and the one place a Runtime is applied to them.

A provider builds parts as the SDK gives them (``text(value)``, ``tool_call(id, name, arguments)``: content kept);
:func:`applied_message` / :func:`applied_parts` apply the :class:`~spanfold.content.runtime.Runtime` when a span is
written: with content capture off a part keeps its structure (type, tool-call id and name, modality) and loses every
piece of content; with redaction on, text, reasoning, tool-call arguments, tool results and URIs are redacted. Base64
blob data is recorded as it comes (it is not text to redact) and only with capture on; with the Runtime's ``media``
store, a blob of at least its ``min_bytes`` is stored there and recorded as a ``uri`` part (the conventions' UriPart:
type, modality, mime_type, uri), here and in a tool result made of parts alike. A message's ``name`` is content
too (a participant's name), kept with capture off only on a ``tool`` message (the tool's name). The builders that take
a Runtime apply it at once (the frameworks' own model steps).

Message JSON (``gen_ai.input.messages`` / ``gen_ai.output.messages``)::

    [{"role": "user", "parts": [{"type": "text", "content": "hi"}]},
     {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "f", "arguments": {"x": 1}}]},
     {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "42"}]}]

A part of a kind the conventions name no type for is a generic part (``{"type": "generic", "generic_type":
"guardContent"}``). Output messages carry ``finish_reason`` (the semconv value, "" when the provider gave none):
the conventions keep finish reasons in the span's ``gen_ai.response.finish_reasons`` and the per-message field as a
deprecated, optional one, which consumers in use still require (Arize Phoenix drops an output list without it); the
toolkit writes it (:func:`spanfold.semconv.shapes.output_finish_reason`). ``gen_ai.system_instructions`` is a list
of parts.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypedDict

from spanfold.codecs import jsonio
from spanfold.content.media import MediaStore
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


def text(value: Any, rt: Runtime | None = None) -> TextPart:
    if rt is None:
        return {"type": "text", "content": value}
    if rt.capture_content:
        return {"type": "text", "content": rt.content(value)}
    return {"type": "text"}


def reasoning(value: Any, rt: Runtime | None = None) -> ReasoningPart:
    if rt is None:
        return {"type": "reasoning", "content": value}
    if rt.capture_content:
        return {"type": "reasoning", "content": rt.content(value)}
    return {"type": "reasoning"}


def tool_call(call_id: Any, name: Any, arguments: Any, rt: Runtime | None = None) -> ToolCallPart:
    part: ToolCallPart = {"type": "tool_call", "id": call_id, "name": name}
    if rt is None:
        part["arguments"] = parse_json_arguments(arguments)
    elif rt.capture_content:
        part["arguments"] = rt.content(parse_json_arguments(arguments))
    return part


def tool_response(call_id: Any, response: Any, rt: Runtime | None = None) -> ToolCallResponsePart:
    part: ToolCallResponsePart = {"type": "tool_call_response", "id": call_id}
    if rt is None:
        part["response"] = response
    elif rt.capture_content:
        part["response"] = rt.content(response)
    return part


def blob(data: Any, mime_type: Any, modality: str, rt: Runtime | None = None) -> BlobPart | UriPart:
    part: BlobPart = {"type": "blob", "modality": modality, "mime_type": mime_type}
    if rt is None or rt.capture_content:
        part["content"] = data
        if rt is not None and rt.media is not None:
            return _stored(part, rt.media)  # type: ignore[return-value]
    return part


def uri(url: Any, modality: str, rt: Runtime | None = None, mime_type: Any = None) -> UriPart:
    part: UriPart = {"type": "uri", "modality": modality}
    if mime_type is not None:
        part["mime_type"] = mime_type
    if rt is None:
        part["uri"] = url
    elif rt.capture_content:
        part["uri"] = rt.content(url)
    return part


def media(url: str, modality: str, rt: Runtime | None = None) -> BlobPart | UriPart:
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
    """A message; ``extra`` keys (``name``, an output's ``finish_reason``) are set when not None."""
    out: dict[str, Any] = {"role": role, "parts": parts}
    for key, value in extra.items():
        if value is not None:
            out[key] = value
    return out  # type: ignore[return-value]


def calls_tools(message: Message) -> bool:
    """Whether ``message`` calls a tool it holds no result of (a server tool answered in the same message, Gemini's
    code execution, is not a call the caller runs)."""
    parts = message.get("parts") or ()
    answered = {part.get("id") for part in parts if part.get("type") == names.PART_TOOL_CALL_RESPONSE}
    return any(part.get("type") == names.PART_TOOL_CALL and part.get("id") not in answered for part in parts)


def finished(message: Message, reason: str) -> Message:
    """``message`` with its ``finish_reason`` (a new message: the one given is left as it is); one that has its own
    keeps it."""
    if "finish_reason" in message:
        return message
    return {**message, "finish_reason": reason}


#: The key of each part type that holds content.
_CONTENT_KEYS: Final = {
    "text": "content",
    "reasoning": "content",
    "tool_call": "arguments",
    "tool_call_response": "response",
    "blob": "content",
    "uri": "uri",
}


def _applied_part(part: Part, rt: Runtime) -> Part:
    key = _CONTENT_KEYS.get(part.get("type", ""))
    if key is None or key not in part:
        return part
    if not rt.capture_content:
        return {k: v for k, v in part.items() if k != key}  # type: ignore[return-value]
    if part.get("type") == "blob":  # base64 data: not text to redact; stored when the Runtime says where
        return part if rt.media is None else _stored(part, rt.media)
    applied: dict[str, Any] = dict(part)
    value = applied[key]
    if _are_parts(value):  # a tool result made of parts (text and images): each part as parts are
        applied[key] = [_applied_part(inner, rt) for inner in value]
    else:
        applied[key] = rt.content(value)
    return applied  # type: ignore[return-value]


def _stored(part: Part, media: MediaStore) -> Part:
    """A blob part as the media store records it: a uri part once stored, else the very part."""
    return media.part(part)  # type: ignore[return-value]


def _are_parts(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, dict) and item.get("type") in names.PART_TYPES for item in value)
    )


#: The fields every tool definition keeps (the conventions' required ones).
DEFINITION_FIELDS: Final = ("type", "name")


def applied_definition(definition: Any, rt: Runtime) -> Any:
    """A tool definition as ``rt`` lets a span record it: whole, or its type and name only."""
    if rt.full_tool_definitions or not isinstance(definition, dict):
        return definition
    return {key: definition[key] for key in DEFINITION_FIELDS if key in definition}


def records_as_built(rt: Runtime) -> bool:
    """Whether ``rt`` records parts exactly as built (capture on, no redaction, no media store): nothing to apply."""
    return rt.capture_content and rt.redaction is None and rt.media is None


def applied_parts(parts: list[Part], rt: Runtime) -> list[Part]:
    """``parts`` as ``rt`` lets a span record them (the very list when it records them as built)."""
    if records_as_built(rt):
        return parts
    return [_applied_part(part, rt) for part in parts]


def applied_message(message: Message, rt: Runtime) -> Message:
    """``message`` as ``rt`` lets a span record it (the very message when it records it as built)."""
    if records_as_built(rt):
        return message
    keep_name = rt.capture_content or message.get("role") == "tool"
    out: dict[str, Any] = {}
    for key, value in message.items():
        if key == "parts":
            out[key] = applied_parts(value, rt)  # type: ignore[arg-type]
        elif key != "name" or keep_name:
            out[key] = value
    return out  # type: ignore[return-value]

"""The OpenAI-compatible chat message shape, which many SDKs and frameworks speak (openai, groq, litellm, mistral,
ollama, cohere's compatibility, DSPy's adapters, smolagents' ``ChatMessage``): a message as it is sent (content a
string or a list of ``text`` / ``image_url`` / ``input_audio`` / ``file`` / ``thinking`` items, an assistant's
``tool_calls``, a ``tool`` message's ``tool_call_id``) and an answer's choice, read whole or accumulated from deltas
(tool calls by index, whole or in argument fragments).

Fields are read from dicts and SDK objects alike (:mod:`.fields`); nothing here knows which SDK sent them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from spanfold.instrumentation.toolkit.invocation import Param, Usage
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading.blocks import IndexedBlocks
from spanfold.semconv import parts as p

#: A request's keyword -> its typed parameter (``n`` apart: OpenAI's default 1 is no choice count).
CHAT_PARAMS: Final[dict[str, Param]] = {
    "temperature": "temperature",
    "top_p": "top_p",
    "seed": "seed",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
    "max_tokens": "max_tokens",
    "max_completion_tokens": "max_tokens",
}

# --- a message as sent --------------------------------------------------------------------------------------------


def content_parts(content: Any) -> list[p.Part]:
    if content is None:
        return []
    if isinstance(content, str):
        return [p.text(content)]
    parts: list[p.Part] = []
    for item in m.as_list(content):
        kind = m.get(item, "type")
        if kind == "text":
            parts.append(p.text(m.get(item, "text")))
        elif kind == "image_url":
            url = m.get(item, "image_url")  # {"url": ...}, or a plain URL (mistral)
            parts.append(p.media(str(url if isinstance(url, str) else m.get(url, "url", "")), "image"))
        elif kind == "input_audio":
            audio = m.get(item, "input_audio")
            parts.append(p.blob(m.get(audio, "data"), f"audio/{m.get(audio, 'format')}", "audio"))
        elif kind == "refusal":
            parts.append(p.text(m.get(item, "refusal")))
        elif kind == "thinking":
            parts.append(p.reasoning(_thinking_text(item)))
        elif kind == "file":  # an uploaded file by id, or the document itself as a data URL
            file = m.get(item, "file")
            data = m.get(file, "file_data")
            if isinstance(data, str) and data:
                parts.append(p.media(data, "document"))
            else:
                parts.append(p.file(m.get(file, "file_id"), "document"))
        else:
            parts.append(p.other(kind))
    return parts


def _thinking_text(chunk: Any) -> str:
    """The text of a ``thinking`` content chunk (mistral: a list of text chunks)."""
    thinking = m.get(chunk, "thinking")
    if isinstance(thinking, str):
        return thinking
    return "".join(str(m.get(item, "text") or "") for item in m.as_list(thinking))


def tool_call_parts(tool_calls: Any) -> list[p.Part]:
    parts: list[p.Part] = []
    for call in m.as_list(tool_calls):
        fn = m.get(call, "function")
        if fn is not None:
            parts.append(p.tool_call(m.get(call, "id"), m.get(fn, "name"), m.get(fn, "arguments")))
        else:  # custom tools
            custom = m.get(call, "custom")
            parts.append(p.tool_call(m.get(call, "id"), m.get(custom, "name"), m.get(custom, "input")))
    return parts


def input_message(msg: Any) -> p.Message:
    """One chat message param (dict or SDK object) as a semconv message."""
    role = m.get(msg, "role")
    content = m.field(msg, "content")
    if role == "tool":
        if isinstance(content, list):
            content = "".join(str(m.get(p, "text", "")) for p in content)
        return p.message(role, [p.tool_response(m.get(msg, "tool_call_id"), content)])
    parts = content_parts(content)
    if role == "assistant":
        refusal = m.get(msg, "refusal")
        if refusal:
            parts.append(p.text(refusal))
        parts.extend(tool_call_parts(m.field(msg, "tool_calls")))
        legacy = m.get(msg, "function_call")
        if legacy is not None:
            parts.append(p.tool_call(None, m.get(legacy, "name"), m.get(legacy, "arguments")))
    return p.message(role, parts, name=m.get(msg, "name"))


# --- an answer's choice ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Choice:
    """One choice of a completion, as a response object or as accumulated from stream chunks."""

    text: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    #: tool calls by index (the model's order): fields ``id``, ``name`` and ``arguments`` when they came as an object,
    #: else argument fragments
    tool_calls: IndexedBlocks = field(default_factory=IndexedBlocks)
    finish_reason: str | None = None

    def to_message(self) -> p.Message:
        parts: list[p.Part] = []
        if self.reasoning:
            parts.append(p.reasoning("".join(self.reasoning)))
        if self.text:
            parts.append(p.text("".join(self.text)))
        if self.refusal:
            parts.append(p.text("".join(self.refusal)))
        for call in self.tool_calls.ordered():
            fields = call.fields
            arguments = fields["arguments"] if "arguments" in fields else call.text()
            parts.append(p.tool_call(fields.get("id"), fields.get("name"), arguments))
        return p.message("assistant", parts)


def add_arguments(choice: Choice, index: int, arguments: Any) -> None:
    """Tool-call arguments: a fragment of JSON text, or the arguments whole as an object (mistral, ollama)."""
    block = choice.tool_calls.open(index)
    if isinstance(arguments, str):
        block.fragments.append(arguments)
    else:
        block.fields["arguments"] = arguments


def add_content(choice: Choice, content: Any) -> None:
    """A message's or delta's content: a string, or content chunks (``text``, ``thinking``)."""
    if isinstance(content, str):
        if content:
            choice.text.append(content)
        return
    for chunk in m.as_list(content):
        kind = m.get(chunk, "type")
        if kind == "text":
            choice.text.append(str(m.get(chunk, "text") or ""))
        elif kind == "thinking":
            choice.reasoning.append(_thinking_text(chunk))


def add_audio(choice: Choice, audio: Any) -> None:
    """An audio answer's ``transcript`` (whole in a message, in pieces in stream deltas) is the answer's text; the
    audio itself is not recorded (the flat formats have no audio part)."""
    if audio:
        transcript = m.get(audio, "transcript")
        if isinstance(transcript, str) and transcript:
            choice.text.append(transcript)


def choice_of(message: Any, finish_reason: Any) -> Choice:
    """A complete message's choice (a ``ChatCompletion``'s, or any SDK's or framework's message of this shape)."""
    choice = Choice(finish_reason=finish_reason)
    content = m.get(message, "content")
    if content:
        add_content(choice, content)
    add_audio(choice, m.get(message, "audio"))
    for key, target in (("refusal", choice.refusal), ("reasoning_content", choice.reasoning)):
        value = m.get(message, key) or (m.get(message, "reasoning") if key == "reasoning_content" else None)
        if isinstance(value, str) and value:
            target.append(value)
    for index, call in enumerate(m.as_list(m.get(message, "tool_calls") or None)):
        fn = m.get(call, "function") or m.get(call, "custom")
        args = m.get(fn, "arguments", None)
        if args is None:
            args = m.get(fn, "input", "")
        block = choice.tool_calls.open(index)
        block.fields["id"] = m.get(call, "id")
        block.fields["name"] = m.get(fn, "name")
        add_arguments(choice, index, args)
    return choice


def add_tool_calls(choice: Choice, tool_calls: Any) -> None:
    """A delta's tool calls: whole (groq, mistral) or in fragments by index (openai)."""
    blocks = choice.tool_calls
    for call in tool_calls:
        block = blocks.open(call.index or 0)
        if call.id:
            block.fields["id"] = call.id
        fn = call.function
        if fn is not None:
            if fn.name:
                block.fields["name"] = fn.name
            args = fn.arguments
            if args:
                if isinstance(args, str):
                    block.fragments.append(args)
                else:  # whole, as an object (mistral)
                    block.fields["arguments"] = args


def usage(value: Any) -> Usage | None:
    """A ``CompletionUsage`` or its dict (the breakdown counts only where the response reports a non-zero one)."""
    if value is None:
        return None
    tokens = Usage(m.get(value, "prompt_tokens"), m.get(value, "completion_tokens"))
    details = m.get(value, "prompt_tokens_details")
    if details is not None:
        tokens.cache_read_input_tokens = m.get(details, "cached_tokens") or None
        tokens.audio_input_tokens = m.get(details, "audio_tokens") or None
        tokens.cache_write_input_tokens = m.get(details, "cache_creation_tokens") or None  # litellm's, DSPy's
    out = m.get(value, "completion_tokens_details")
    if out is not None:
        tokens.reasoning_output_tokens = m.get(out, "reasoning_tokens") or None
        tokens.audio_output_tokens = m.get(out, "audio_tokens") or None
    return tokens

"""OpenAI Chat Completions shapes -> typed invocations (request, response, stream chunks).

Shared by the SDKs that speak the same shapes (groq, litellm; mistralai, cohere and ollama through their own thin
adapters): content may be a string or a list of chunks (``text``, ``image_url`` as an object or a plain URL,
``thinking``), reasoning arrives as ``reasoning_content`` or ``reasoning``, tool-call arguments as a string or an
object, and optional fields an SDK does not declare are read through ``__dict__`` (never an attribute lookup that
raises).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from spanfold.instrumentation.toolkit.invocation import Param, Request, Response, Usage
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading import params
from spanfold.instrumentation.toolkit.reading.blocks import IndexedBlocks
from spanfold.instrumentation.toolkit.reading.history import History
from spanfold.semconv import parts as p

#: Request keyword -> typed request parameter, copied when given.
REQUEST_PARAMS: Final[dict[str, Param]] = {
    "temperature": "temperature",
    "top_p": "top_p",
    "seed": "seed",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
    "max_tokens": "max_tokens",
    "max_completion_tokens": "max_tokens",
}


# --- input ---------------------------------------------------------------------------------------------


def _content_parts(content: Any) -> list[p.Part]:
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


def _tool_call_parts(tool_calls: Any) -> list[p.Part]:
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
    parts = _content_parts(content)
    if role == "assistant":
        refusal = m.get(msg, "refusal")
        if refusal:
            parts.append(p.text(refusal))
        parts.extend(_tool_call_parts(m.field(msg, "tool_calls")))
        legacy = m.get(msg, "function_call")
        if legacy is not None:
            parts.append(p.tool_call(None, m.get(legacy, "name"), m.get(legacy, "arguments")))
    return p.message(role, parts, name=m.get(msg, "name"))


def tool_definition(tool: Any) -> dict[str, Any]:
    fn = m.get(tool, "function")
    if fn is None:
        return {"type": m.get(tool, "type")}
    return {
        "type": "function",
        "name": m.get(fn, "name"),
        "description": m.get(fn, "description"),
        "parameters": m.get(fn, "parameters"),
    }


HISTORY: Final = History(input_message)
TOOLS: Final = History(tool_definition, messages=False, limit=1024)


def request(kwargs: dict[str, Any]) -> Request:
    """The typed request of a ``create``/``parse`` call.

    A generator passed as ``messages`` (or ``tools``) is materialised into a list in ``kwargs`` first, so that
    recording it does not exhaust what the SDK is about to send.
    """
    return chat_request(kwargs, HISTORY, REQUEST_PARAMS)


def chat_request(kwargs: dict[str, Any], history: History, table: Mapping[str, Param], stop: str = "stop") -> Request:
    """:func:`request` for an SDK of the same request shape with its own message conversion (``history``),
    parameter names (``table``) and stop-sequence keyword (``stop``)."""
    model = kwargs.get("model")
    numbers = params.numbers(kwargs, table)
    n = kwargs.get("n")
    if isinstance(n, int) and not isinstance(n, bool) and n != 1:
        numbers["choice_count"] = n
    stops = kwargs.get(stop)
    fmt = kwargs.get("response_format")
    output_type = None
    if params.given(fmt):
        kind = m.get(fmt, "type") if isinstance(fmt, Mapping) else "json_schema"
        output_type = "text" if kind == "text" else "json"
    messages = params.listed(kwargs, "messages")
    tools = params.listed(kwargs, "tools")
    return Request(
        model=model if isinstance(model, str) else None,
        params=numbers,
        stop_sequences=([stops] if isinstance(stops, str) else m.as_list(stops)) if params.given(stops) else None,
        output_type=output_type,
        messages=history.of(messages) if messages is not None else None,
        tools=TOOLS.of(tools) if tools is not None else None,
    )


# --- output --------------------------------------------------------------------------------------------


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


def _choice_from_message(message: Any, finish_reason: Any) -> Choice:
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


def usage(value: Any) -> Usage | None:
    """A ``CompletionUsage`` (the breakdown counts only where the response reports a non-zero one)."""
    if value is None:
        return None
    tokens = Usage(m.get(value, "prompt_tokens"), m.get(value, "completion_tokens"))
    details = m.get(value, "prompt_tokens_details")
    if details is not None:
        tokens.cache_read_input_tokens = m.get(details, "cached_tokens") or None
        tokens.audio_input_tokens = m.get(details, "audio_tokens") or None
    out = m.get(value, "completion_tokens_details")
    if out is not None:
        tokens.reasoning_output_tokens = m.get(out, "reasoning_tokens") or None
        tokens.audio_output_tokens = m.get(out, "audio_tokens") or None
    return tokens


def choices_response(response_id: Any, model: Any, choices: list[Choice], tokens: Usage | None) -> Response:
    return Response(
        id=response_id,
        model=model,
        finish_reasons=[c.finish_reason for c in choices if c.finish_reason] or None,
        messages=[c.to_message() for c in choices],
        usage=tokens,
    )


def response(result: Any) -> Response:
    """A complete ``ChatCompletion`` (or ``ParsedChatCompletion``)."""
    choices = m.as_list(m.get(result, "choices"))
    if len(choices) > 1:
        choices = sorted(choices, key=lambda c: m.get(c, "index") or 0)
    folded = [_choice_from_message(m.get(c, "message"), m.get(c, "finish_reason")) for c in choices]
    return choices_response(m.get(result, "id"), m.get(result, "model"), folded, usage(m.get(result, "usage")))


def _add_tool_calls(choice: Choice, tool_calls: Any) -> None:
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


class ChatStreamAccumulator:
    """Accumulates ``ChatCompletionChunk``s: text and tool-call deltas per choice (parallel calls by index).

    Any SDK's chunk of this shape (pydantic models): fields a given SDK does not declare (``refusal``) are read from
    the model's ``__dict__`` and its pydantic extras; tool calls may arrive whole in one delta (groq, mistral) or in
    fragments (openai)."""

    __slots__ = ("choices", "id", "model", "usage")

    def __init__(self) -> None:
        self.id: Any = None
        self.model: Any = None
        self.usage: Usage | None = None
        self.choices: dict[int, Choice] = {}

    def add(self, chunk: Any) -> None:
        values = chunk.__dict__  # a pydantic model's declared fields: read without its attribute machinery
        if self.id is None:
            self.id = values.get("id")
            self.model = values.get("model")
        tokens = values.get("usage") if "usage" in values else m.get(chunk, "usage")  # not declared by litellm
        if tokens:
            self.usage = usage(tokens)
        choices = self.choices
        for c in values["choices"]:
            index = c.index
            choice = choices.get(index)
            if choice is None:
                choice = choices[index] = Choice()
            delta = c.delta
            if delta:
                fields = delta.__dict__
                extra = delta.__pydantic_extra__  # litellm's Delta keeps its fields there
                if extra:
                    fields = {**fields, **extra}
                tool_calls = fields.get("tool_calls")
                if tool_calls:  # most chunks of a tool-calling answer: argument fragments, nothing else
                    _add_tool_calls(choice, tool_calls)
                content = fields.get("content")
                if content:
                    if isinstance(content, str):
                        choice.text.append(content)
                    else:
                        add_content(choice, content)
                refusal = fields.get("refusal")
                if refusal:
                    choice.refusal.append(refusal)
                # ``reasoning_content`` (some servers send it; not a declared openai field, so among the pydantic
                # extras, merged into ``fields`` above) or ``reasoning`` (groq's; vLLM sends both, the same text)
                reasoning = fields.get("reasoning_content") or fields.get("reasoning")
                if isinstance(reasoning, str) and reasoning:
                    choice.reasoning.append(reasoning)
                audio = fields.get("audio")  # an audio answer: its transcript in pieces (among the extras)
                if audio:
                    add_audio(choice, audio)
            reason = c.finish_reason
            if reason:
                choice.finish_reason = reason

    def result(self) -> Response:
        choices = [self.choices[i] for i in sorted(self.choices)]
        return choices_response(self.id, self.model, choices, self.usage)


# --- stream usage, asked for -------------------------------------------------------------------------------------


def ask_usage(kwargs: dict[str, Any]) -> tuple[dict[str, Any], Callable[[Any], bool]] | None:
    """A stream request that did not say whether it wants its usage, asking for it
    (``stream_options.include_usage``), and the predicate of the chunk that brings only the usage; None for a call
    that is no stream, says already (``include_usage`` given, true or false), or reads the raw response (whose body
    the application reads as it came)."""
    if kwargs.get("stream") is not True:
        return None
    options = kwargs.get("stream_options")
    if params.given(options) and (not isinstance(options, Mapping) or "include_usage" in options):
        return None
    headers = kwargs.get("extra_headers")
    if isinstance(headers, Mapping) and any(str(k).lower() == RAW_RESPONSE_HEADER for k in headers):
        return None
    asked = {**(options if isinstance(options, Mapping) else {}), "include_usage": True}
    return {**kwargs, "stream_options": asked}, usage_only


#: The header the SDK's ``with_raw_response`` / ``with_streaming_response`` send (lower case).
RAW_RESPONSE_HEADER: Final = "x-stainless-raw-response"


def usage_only(chunk: Any) -> bool:
    """Whether a chunk of a stream spanfold asked for usage is the one the asking added (no choices, the usage); any
    other chunk is made as the application would have got it (no ``usage`` field set, as when not asked)."""
    if not m.get(chunk, "choices") and m.get(chunk, "usage") is not None:
        return True
    fields = getattr(chunk, "__pydantic_fields_set__", None)
    if isinstance(fields, set) and m.get(chunk, "usage") is None:
        fields.discard("usage")
    return False

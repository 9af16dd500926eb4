"""OpenAI Chat Completions shapes -> GenAI semconv span attributes (request, response, stream chunks).

Shared by the SDKs that speak the same shapes (groq; mistralai through its own thin adapter): content may be a string
or a list of chunks (``text``, ``image_url`` as an object or a plain URL, ``thinking``), reasoning arrives as
``reasoning_content`` or ``reasoning``, tool-call arguments as a string or an object, and optional fields an SDK does
not declare are read through ``__dict__`` (never an attribute lookup that raises).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spanfold import semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit.reading import messages as m
from spanfold.instrumentation.toolkit.reading import params
from spanfold.instrumentation.toolkit.reading.blocks import IndexedBlocks
from spanfold.instrumentation.toolkit.reading.history import HistoryCache
from spanfold.semconv import parts as p
from spanfold.semconv import shapes

FINISH_REASONS = shapes.OPENAI_COMPATIBLE_FINISH_REASONS

#: Request keyword -> span attribute, copied when given.
REQUEST_PARAMS = {
    "temperature": semconv.REQUEST_TEMPERATURE,
    "top_p": semconv.REQUEST_TOP_P,
    "seed": semconv.REQUEST_SEED,
    "frequency_penalty": semconv.REQUEST_FREQUENCY_PENALTY,
    "presence_penalty": semconv.REQUEST_PRESENCE_PENALTY,
    "max_tokens": semconv.REQUEST_MAX_TOKENS,
    "max_completion_tokens": semconv.REQUEST_MAX_TOKENS,
}


# --- input ---------------------------------------------------------------------------------------------


def _content_parts(content: Any, rt: Runtime) -> list[p.Part]:
    if content is None:
        return []
    if isinstance(content, str):
        return [p.text(content, rt)]
    parts: list[p.Part] = []
    for item in m.as_list(content):
        kind = m.get(item, "type")
        if kind == "text":
            parts.append(p.text(m.get(item, "text"), rt))
        elif kind == "image_url":
            url = m.get(item, "image_url")  # {"url": ...}, or a plain URL (mistral)
            parts.append(p.media(str(url if isinstance(url, str) else m.get(url, "url", "")), "image", rt))
        elif kind == "input_audio":
            audio = m.get(item, "input_audio")
            parts.append(p.blob(m.get(audio, "data"), f"audio/{m.get(audio, 'format')}", "audio", rt))
        elif kind == "refusal":
            parts.append(p.text(m.get(item, "refusal"), rt))
        elif kind == "thinking":
            parts.append(p.reasoning(_thinking_text(item), rt))
        elif kind == "file":  # an uploaded file by id, or the document itself as a data URL
            file = m.get(item, "file")
            data = m.get(file, "file_data")
            if isinstance(data, str) and data:
                parts.append(p.media(data, "document", rt))
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


def _tool_call_parts(tool_calls: Any, rt: Runtime) -> list[p.Part]:
    parts: list[p.Part] = []
    for call in m.as_list(tool_calls):
        fn = m.get(call, "function")
        if fn is not None:
            parts.append(p.tool_call(m.get(call, "id"), m.get(fn, "name"), m.get(fn, "arguments"), rt))
        else:  # custom tools
            custom = m.get(call, "custom")
            parts.append(p.tool_call(m.get(call, "id"), m.get(custom, "name"), m.get(custom, "input"), rt))
    return parts


def input_message(msg: Any, rt: Runtime) -> p.Message:
    """One chat message param (dict or SDK object) as a semconv message."""
    role = m.get(msg, "role")
    content = m.field(msg, "content")
    if role == "tool":
        if isinstance(content, list):
            content = "".join(str(m.get(p, "text", "")) for p in content)
        return p.message(role, [p.tool_response(m.get(msg, "tool_call_id"), content, rt)])
    parts = _content_parts(content, rt)
    if role == "assistant":
        refusal = m.get(msg, "refusal")
        if refusal:
            parts.append(p.text(refusal, rt))
        parts.extend(_tool_call_parts(m.field(msg, "tool_calls"), rt))
        legacy = m.get(msg, "function_call")
        if legacy is not None:
            parts.append(p.tool_call(None, m.get(legacy, "name"), m.get(legacy, "arguments"), rt))
    return p.message(role, parts, name=m.get(msg, "name") if rt.capture_content else None)


_HISTORY = HistoryCache(input_message)


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


_TOOLS = HistoryCache(lambda tool, rt: tool_definition(tool), limit=1024)


def request_attributes(kwargs: dict[str, Any], rt: Runtime) -> tuple[str | None, dict[str, Any]]:
    """The span name target (the model) and the request attributes of a ``create``/``parse`` call.

    A generator passed as ``messages`` is materialised into a list in ``kwargs`` first, so that recording it
    does not exhaust what the SDK is about to send.
    """
    return chat_request_attributes(kwargs, rt, _HISTORY, REQUEST_PARAMS)


def chat_request_attributes(
    kwargs: dict[str, Any], rt: Runtime, history: HistoryCache, table: Mapping[str, str]
) -> tuple[str | None, dict[str, Any]]:
    """:func:`request_attributes` for an SDK of the same request shape with its own message conversion (``history``)
    and parameter names (``table``)."""
    model = kwargs.get("model")
    attrs: dict[str, Any] = {semconv.REQUEST_MODEL: model if isinstance(model, str) else None}
    for key, attr in table.items():
        value = kwargs.get(key)
        if isinstance(value, (int, float)):  # never the SDKs' "not given" markers
            attrs[attr] = value
    n = kwargs.get("n")
    if params.given(n) and n != 1:
        attrs[semconv.REQUEST_CHOICE_COUNT] = n
    stop = kwargs.get("stop")
    if params.given(stop):
        stops = [stop] if isinstance(stop, str) else m.as_list(stop)
        attrs[semconv.REQUEST_STOP_SEQUENCES] = rt.content(stops) if rt.capture_content else None
    fmt = kwargs.get("response_format")
    if params.given(fmt):
        kind = m.get(fmt, "type") if isinstance(fmt, Mapping) else "json_schema"
        attrs[semconv.OUTPUT_TYPE] = "text" if kind == "text" else "json"
    messages = params.listed(kwargs, "messages")
    if messages is not None:
        attrs[semconv.INPUT_MESSAGES] = history.json_list(messages, rt)
    tools = params.listed(kwargs, "tools") if rt.capture_content else None
    if tools is not None:
        attrs[semconv.TOOL_DEFINITIONS] = _TOOLS.json_list(tools, rt)
    return (model if isinstance(model, str) else None), attrs


# --- output --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Choice:
    """One choice of a completion, as a response object or as accumulated from stream chunks."""

    text: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    #: tool calls by index (the model's order): fields ``id`` and ``name``, argument fragments
    tool_calls: IndexedBlocks = field(default_factory=IndexedBlocks)
    finish_reason: str | None = None

    def to_message(self, rt: Runtime) -> p.Message:
        parts: list[p.Part] = []
        if self.reasoning:
            parts.append(p.reasoning("".join(self.reasoning), rt))
        if self.text:
            parts.append(p.text("".join(self.text), rt))
        if self.refusal:
            parts.append(p.text("".join(self.refusal), rt))
        for call in self.tool_calls.ordered():
            parts.append(p.tool_call(call.fields.get("id"), call.fields.get("name"), call.text(), rt))
        reason = self.finish_reason
        return p.message("assistant", parts, finish_reason=FINISH_REASONS.get(reason or "", reason) or "")


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
        block.fragments.append(args if isinstance(args, str) else m.dumps(args))
    return choice


def _usage_attributes(usage: Any) -> dict[str, Any]:
    if usage is None:
        return {}
    details, out = m.get(usage, "prompt_tokens_details"), m.get(usage, "completion_tokens_details")
    attrs = {
        semconv.USAGE_INPUT_TOKENS: m.get(usage, "prompt_tokens"),
        semconv.USAGE_OUTPUT_TOKENS: m.get(usage, "completion_tokens"),
    }
    # the breakdown counts only where the response reports a non-zero one
    if details is not None:
        attrs[semconv.USAGE_CACHE_READ_INPUT_TOKENS] = m.get(details, "cached_tokens") or None
        attrs[semconv.USAGE_AUDIO_INPUT_TOKENS] = m.get(details, "audio_tokens") or None
    if out is not None:
        attrs[semconv.USAGE_REASONING_OUTPUT_TOKENS] = m.get(out, "reasoning_tokens") or None
        attrs[semconv.USAGE_AUDIO_OUTPUT_TOKENS] = m.get(out, "audio_tokens") or None
    return attrs


def _result_attributes(response_id: Any, model: Any, choices: list[Choice], usage: Any, rt: Runtime) -> dict[str, Any]:
    return m.result_attributes(
        response_id,
        model,
        [c.finish_reason for c in choices if c.finish_reason] or None,
        m.dumps([c.to_message(rt) for c in choices]),
        _usage_attributes(usage),
    )


def response_attributes(response: Any, rt: Runtime) -> dict[str, Any]:
    """Attributes of a complete ``ChatCompletion`` (or ``ParsedChatCompletion``)."""
    choices = m.as_list(m.get(response, "choices"))
    if len(choices) > 1:
        choices = sorted(choices, key=lambda c: m.get(c, "index") or 0)
    folded = [_choice_from_message(m.get(c, "message"), m.get(c, "finish_reason")) for c in choices]
    return _result_attributes(m.get(response, "id"), m.get(response, "model"), folded, m.get(response, "usage"), rt)


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
                block.fragments.append(args if isinstance(args, str) else m.dumps(args))


class ChatStreamAccumulator:
    """Accumulates ``ChatCompletionChunk``s: text and tool-call deltas per choice (parallel calls by index).

    Any SDK's chunk of this shape (pydantic models): fields a given SDK does not declare (``refusal``) are read from
    the model's ``__dict__`` and its pydantic extras; tool calls may arrive whole in one delta (groq, mistral) or in
    fragments (openai)."""

    __slots__ = ("choices", "id", "model", "rt", "usage")

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.id: Any = None
        self.model: Any = None
        self.usage: Any = None
        self.choices: dict[int, Choice] = {}

    def add(self, chunk: Any) -> None:
        values = chunk.__dict__  # a pydantic model's declared fields: read without its attribute machinery
        if self.id is None:
            self.id = values.get("id")
            self.model = values.get("model")
        usage = values.get("usage") if "usage" in values else m.get(chunk, "usage")  # not declared by litellm
        if usage:
            self.usage = usage
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

    def attributes(self) -> dict[str, Any]:
        choices = [self.choices[i] for i in sorted(self.choices)]
        return _result_attributes(self.id, self.model, choices, self.usage, self.rt)

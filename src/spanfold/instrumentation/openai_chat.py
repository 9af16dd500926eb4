"""OpenAI Chat Completions shapes -> GenAI semconv span attributes (request, response, stream chunks)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from spanfold import semconv
from spanfold.instrumentation import messages as m
from spanfold.semconv import shapes

FINISH_REASONS = shapes.OPENAI_CHAT_FINISH_REASONS

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


def _content_parts(content: Any, capture: bool) -> list[m.Part]:
    if content is None:
        return []
    if isinstance(content, str):
        return [m.text_part(content, capture)]
    parts: list[m.Part] = []
    for item in m.as_list(content):
        kind = m.get(item, "type")
        if kind == "text":
            parts.append(m.text_part(m.get(item, "text"), capture))
        elif kind == "image_url":
            parts.append(m.media_part(str(m.get(m.get(item, "image_url"), "url", "")), "image", capture))
        elif kind == "input_audio":
            audio = m.get(item, "input_audio")
            parts.append(m.blob_part(m.get(audio, "data"), f"audio/{m.get(audio, 'format')}", "audio", capture))
        elif kind == "refusal":
            parts.append(m.text_part(m.get(item, "refusal"), capture))
        elif kind == "file":
            file = m.get(item, "file")
            parts.append({"type": semconv.PART_FILE, "modality": "file", "file_id": m.get(file, "file_id")})
        else:
            parts.append({"type": str(kind)})
    return parts


def _tool_call_parts(tool_calls: Any, capture: bool) -> list[m.Part]:
    parts = []
    for call in m.as_list(tool_calls):
        fn = m.get(call, "function")
        if fn is not None:
            parts.append(m.tool_call_part(m.get(call, "id"), m.get(fn, "name"), m.get(fn, "arguments"), capture))
        else:  # custom tools
            custom = m.get(call, "custom")
            parts.append(m.tool_call_part(m.get(call, "id"), m.get(custom, "name"), m.get(custom, "input"), capture))
    return parts


def input_message(msg: Any, capture: bool) -> m.SemconvMessage:
    """One chat message param (dict or SDK object) as a semconv message."""
    role = m.get(msg, "role")
    content = m.field(msg, "content")
    if role == "tool":
        if isinstance(content, list):
            content = "".join(str(m.get(p, "text", "")) for p in content)
        return m.message(role, [m.tool_response_part(m.get(msg, "tool_call_id"), content, capture)])
    parts = _content_parts(content, capture)
    if role == "assistant":
        refusal = m.get(msg, "refusal")
        if refusal:
            parts.append(m.text_part(refusal, capture))
        parts.extend(_tool_call_parts(m.field(msg, "tool_calls"), capture))
        legacy = m.get(msg, "function_call")
        if legacy is not None:
            parts.append(m.tool_call_part(None, m.get(legacy, "name"), m.get(legacy, "arguments"), capture))
    return m.message(role, parts, name=m.get(msg, "name") if capture else None)


def _convert_with_content(msg: Any) -> m.SemconvMessage:
    return input_message(msg, True)


def _convert_without_content(msg: Any) -> m.SemconvMessage:
    return input_message(msg, False)


#: Converted history messages, one cache per content-capture mode.
_INPUT_CACHE = {True: m.FragmentCache(), False: m.FragmentCache()}


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


_TOOLS_CACHE = m.FragmentCache(limit=1024)


def request_attributes(kwargs: dict[str, Any], capture: bool) -> tuple[str | None, dict[str, Any]]:
    """The span name target (the model) and the request attributes of a ``create``/``parse`` call.

    A generator passed as ``messages`` is materialised into a list in ``kwargs`` first, so that recording it
    does not exhaust what the SDK is about to send.
    """
    model = kwargs.get("model")
    attrs: dict[str, Any] = {semconv.REQUEST_MODEL: model if isinstance(model, str) else None}
    for key, attr in REQUEST_PARAMS.items():
        value = kwargs.get(key)
        if m.given(value) and isinstance(value, (int, float)):
            attrs[attr] = value
    n = kwargs.get("n")
    if m.given(n) and n != 1:
        attrs[semconv.REQUEST_CHOICE_COUNT] = n
    stop = kwargs.get("stop")
    if m.given(stop):
        attrs[semconv.REQUEST_STOP_SEQUENCES] = [stop] if isinstance(stop, str) else m.as_list(stop)
    fmt = kwargs.get("response_format")
    if m.given(fmt):
        kind = m.get(fmt, "type") if isinstance(fmt, Mapping) else "json_schema"
        attrs[semconv.OUTPUT_TYPE] = "text" if kind == "text" else "json"
    messages = kwargs.get("messages")
    if isinstance(messages, Iterator):
        messages = kwargs["messages"] = list(messages)
    if m.given(messages):
        convert = _convert_with_content if capture else _convert_without_content
        attrs[semconv.INPUT_MESSAGES] = _INPUT_CACHE[capture].json_list(m.as_list(messages), convert)
    tools = kwargs.get("tools")
    if capture and m.given(tools):
        if isinstance(tools, Iterator):
            tools = kwargs["tools"] = list(tools)
        attrs[semconv.TOOL_DEFINITIONS] = _TOOLS_CACHE.json_list(m.as_list(tools), tool_definition)
    return (model if isinstance(model, str) else None), attrs


# --- output --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Choice:
    """One choice of a completion, as a response object or as accumulated from stream chunks."""

    text: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    #: tool calls in the model's order: [id, name, argument fragments]
    tool_calls: dict[int, list[Any]] = field(default_factory=dict)
    finish_reason: str | None = None

    def to_message(self, capture: bool) -> m.SemconvMessage:
        parts: list[m.Part] = []
        if self.reasoning:
            parts.append(m.reasoning_part("".join(self.reasoning), capture))
        if self.text:
            parts.append(m.text_part("".join(self.text), capture))
        if self.refusal:
            parts.append(m.text_part("".join(self.refusal), capture))
        for _, (call_id, name, fragments) in sorted(self.tool_calls.items()):
            parts.append(m.tool_call_part(call_id, name, "".join(fragments), capture))
        reason = self.finish_reason
        return m.message("assistant", parts, finish_reason=FINISH_REASONS.get(reason or "", reason) or "")


def _choice_from_message(message: Any, finish_reason: Any) -> Choice:
    choice = Choice(finish_reason=finish_reason)
    for key, target in (
        ("content", choice.text),
        ("refusal", choice.refusal),
        ("reasoning_content", choice.reasoning),
    ):
        value = m.get(message, key)
        if isinstance(value, str) and value:
            target.append(value)
    for index, call in enumerate(m.as_list(m.get(message, "tool_calls"))):
        fn = m.get(call, "function") or m.get(call, "custom")
        args = m.get(fn, "arguments", None)
        if args is None:
            args = m.get(fn, "input", "")
        choice.tool_calls[index] = [
            m.get(call, "id"),
            m.get(fn, "name"),
            [args if isinstance(args, str) else m.dumps(args)],
        ]
    return choice


def _usage_attributes(usage: Any) -> dict[str, Any]:
    if usage is None:
        return {}
    details = m.get(usage, "prompt_tokens_details")
    return {
        semconv.USAGE_INPUT_TOKENS: m.get(usage, "prompt_tokens"),
        semconv.USAGE_OUTPUT_TOKENS: m.get(usage, "completion_tokens"),
        semconv.USAGE_CACHE_READ_INPUT_TOKENS: m.get(details, "cached_tokens") if details is not None else None,
    }


def _result_attributes(
    response_id: Any, model: Any, choices: list[Choice], usage: Any, capture: bool
) -> dict[str, Any]:
    return m.result_attributes(
        response_id,
        model,
        [c.finish_reason for c in choices if c.finish_reason] or None,
        m.dumps([c.to_message(capture) for c in choices]),
        _usage_attributes(usage),
    )


def response_attributes(response: Any, capture: bool) -> dict[str, Any]:
    """Attributes of a complete ``ChatCompletion`` (or ``ParsedChatCompletion``)."""
    choices = sorted(m.as_list(m.get(response, "choices")), key=lambda c: m.get(c, "index") or 0)
    folded = [_choice_from_message(m.get(c, "message"), m.get(c, "finish_reason")) for c in choices]
    return _result_attributes(
        m.get(response, "id"), m.get(response, "model"), folded, m.get(response, "usage"), capture
    )


def _reasoning(delta: Any) -> Any:
    """A delta's ``reasoning_content``: not a declared field (some servers send it), so among the pydantic extras, or
    a field in a later SDK. Read directly: this runs once per chunk, and ``m.get``'s type checks cost more."""
    extra = delta.__pydantic_extra__
    if extra and "reasoning_content" in extra:
        return extra["reasoning_content"]
    return delta.__dict__.get("reasoning_content")


class ChatStreamAccumulator:
    """Accumulates ``ChatCompletionChunk``s: text and tool-call deltas per choice (parallel calls by index)."""

    __slots__ = ("capture", "choices", "id", "model", "usage")

    def __init__(self, capture: bool) -> None:
        self.capture = capture
        self.id: Any = None
        self.model: Any = None
        self.usage: Any = None
        self.choices: dict[int, Choice] = {}

    def add(self, chunk: Any) -> None:
        if self.id is None:
            self.id = chunk.id
            self.model = chunk.model
        if chunk.usage is not None:
            self.usage = chunk.usage
        for c in chunk.choices:
            choice = self.choices.get(c.index)
            if choice is None:
                choice = self.choices[c.index] = Choice()
            delta = c.delta
            if delta is not None:
                if delta.content:
                    choice.text.append(delta.content)
                if delta.refusal:
                    choice.refusal.append(delta.refusal)
                reasoning = _reasoning(delta)
                if isinstance(reasoning, str) and reasoning:
                    choice.reasoning.append(reasoning)
                if delta.tool_calls:
                    for call in delta.tool_calls:
                        slot = choice.tool_calls.get(call.index)
                        if slot is None:
                            slot = choice.tool_calls[call.index] = [None, None, []]
                        if call.id:
                            slot[0] = call.id
                        fn = call.function
                        if fn is not None:
                            if fn.name:
                                slot[1] = fn.name
                            if fn.arguments:
                                slot[2].append(fn.arguments)
            if c.finish_reason:
                choice.finish_reason = c.finish_reason

    def attributes(self) -> dict[str, Any]:
        choices = [self.choices[i] for i in sorted(self.choices)]
        return _result_attributes(self.id, self.model, choices, self.usage, self.capture)

"""OpenAI Chat Completions shapes -> typed invocations (request, response, stream chunks).

Shared by the SDKs that speak the same shapes (groq, litellm; mistralai, cohere and ollama through their own thin
adapters): content may be a string or a list of chunks (``text``, ``image_url`` as an object or a plain URL,
``thinking``), reasoning arrives as ``reasoning_content`` or ``reasoning``, tool-call arguments as a string or an
object, and optional fields an SDK does not declare are read through ``__dict__`` (never an attribute lookup that
raises).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from spanfold.instrumentation.toolkit.invocation import Param, Request, Response, Usage
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading import params
from spanfold.instrumentation.toolkit.reading.chat_messages import (
    CHAT_PARAMS,
    Choice,
    add_audio,
    add_content,
    add_tool_calls,
    choice_of,
    input_message,
    usage,
)
from spanfold.instrumentation.toolkit.reading.history import History

#: Request keyword -> typed request parameter, copied when given.
REQUEST_PARAMS: Final = CHAT_PARAMS


# --- input ---------------------------------------------------------------------------------------------


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
    folded = [choice_of(m.get(c, "message"), m.get(c, "finish_reason")) for c in choices]
    return choices_response(m.get(result, "id"), m.get(result, "model"), folded, usage(m.get(result, "usage")))


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
                    add_tool_calls(choice, tool_calls)
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

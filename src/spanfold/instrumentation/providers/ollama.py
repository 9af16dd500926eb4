"""Ollama instrumentation: the ``ollama`` SDK's ``chat`` and ``generate``, sync and async, streaming or not.

Supported: ``ollama`` >= 0.4, < 1 (the pydantic responses; tested with 0.6.3). Wrapped: ``Client.chat`` /
``Client.generate`` and the same of ``AsyncClient`` (``POST /api/chat``, ``/api/generate``); ``embed`` (``POST
/api/embed``: an ``embeddings {model}`` span). Their first arguments may
be positional (``chat(model, messages)``, ``generate(model, prompt, suffix)``): ``bind`` reads them.

Ollama's own shapes: messages carry ``content``, ``thinking``, ``images`` (base64 strings, bytes or ``Image``s) and
``tool_calls`` whose arguments are objects and which have no ids (a tool's result is a ``tool`` message with
``tool_name``); parameters live in ``options`` (``num_predict`` is the output limit). A stream is a generator of
responses (NDJSON on the wire): each holds a fragment of the message, tool calls whole, and the last one
(``done: true``) the ``done_reason`` and the token counts ``prompt_eval_count`` / ``eval_count``. A message with tool
calls still ends ``stop``: its output message says ``tool_call``.
"""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any, Final

from spanfold import semconv
from spanfold.instrumentation.providers.openai import chat as openai_chat
from spanfold.instrumentation.toolkit.calls import ModelApi, base_url_server, iterator_result
from spanfold.instrumentation.toolkit.invocation import Param, Request, Response, Usage
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor, model_methods
from spanfold.instrumentation.toolkit.reading import chat_messages, params
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading.embeddings import input_count, vector_length
from spanfold.instrumentation.toolkit.reading.history import History
from spanfold.semconv import parts as p

OPTIONS: Final[dict[str, Param]] = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "seed": "seed",
    "num_predict": "max_tokens",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
}
#: The signature's positional parameters, in order.
_POSITIONAL = {
    "chat": ("model", "messages"),
    "generate": ("model", "prompt", "suffix"),
    "embed": ("model", "input", "truncate", "options", "keep_alive", "dimensions"),
}
#: The first bytes of base64 image data -> its MIME type (Ollama images carry none).
_MAGIC = {"iVBOR": "image/png", "/9j/": "image/jpeg", "R0lGOD": "image/gif", "UklGR": "image/webp"}


def _bind(method: str) -> Any:
    names = _POSITIONAL[method]

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        m.materialize(kwargs, "messages", "tools", "images")
        return {**dict(zip(names, args, strict=False)), **kwargs}

    return bind


def _image(image: Any) -> p.Part:
    value = m.get(image, "value", image) if not isinstance(image, (str, bytes)) else image
    if isinstance(value, bytes):
        value = base64.b64encode(value).decode()
    if not isinstance(value, str):  # a file path the SDK reads
        return p.uri(str(value), "image")
    mime = next((kind for magic, kind in _MAGIC.items() if value.startswith(magic)), None)
    return p.blob(value, mime, "image")


def input_message(msg: Any) -> p.Message:
    role, content = m.get(msg, "role"), m.get(msg, "content")
    if role == "tool":
        return p.message(role, [p.tool_response(None, content)], name=m.get(msg, "tool_name"))
    parts: list[p.Part] = []
    thinking = m.get(msg, "thinking")
    if thinking:
        parts.append(p.reasoning(thinking))
    if content:
        parts.append(p.text(content))
    parts.extend(_image(image) for image in m.as_list(m.field(msg, "images")))
    for call in m.as_list(m.field(msg, "tool_calls")):
        function = m.get(call, "function")
        parts.append(p.tool_call(None, m.get(function, "name"), m.get(function, "arguments")))
    return p.message(role, parts)


def _tool_definition(tool: Any) -> dict[str, Any]:
    if callable(tool) and not isinstance(tool, dict):  # a Python function the SDK describes from its docstring
        return {"type": "function", "name": getattr(tool, "__name__", None), "description": tool.__doc__}
    return openai_chat.tool_definition(tool)


HISTORY: Final = History(input_message)
TOOLS: Final = History(_tool_definition, messages=False, limit=1024)


def _request(request: dict[str, Any]) -> Request:
    options = request.get("options")
    tools = request.get("tools")
    return Request(
        model=params.model_name(request.get("model")),
        params=params.numbers(options, OPTIONS),
        stop_sequences=(params.string_list(m.get(options, "stop")) or None) if options is not None else None,
        output_type="json" if params.given(request.get("format")) else None,
        tools=TOOLS.of(m.as_list(tools)) if tools else None,
    )


def chat_request(request: dict[str, Any]) -> Request:
    invocation = _request(request)
    messages = request.get("messages")
    if messages:
        invocation.messages = HISTORY.of(m.as_list(messages))
    return invocation


def generate_request(request: dict[str, Any]) -> Request:
    invocation = _request(request)
    system = request.get("system")
    if system:
        invocation.system = [p.text(system)]
    prompt = {"role": "user", "content": request.get("prompt"), "images": request.get("images")}
    invocation.messages = [input_message(prompt)]
    return invocation


class ResponseAccumulator:
    """Chat or generate responses, whole or streamed: text, thinking and tool calls, then the last one's reason,
    model and counts."""

    __slots__ = ("choice", "model", "reason", "usage")

    def __init__(self) -> None:
        self.choice = chat_messages.Choice()
        self.reason: Any = None
        self.model: Any = None
        self.usage = Usage()

    def add(self, response: Any) -> None:
        fields = response.__dict__
        message = fields.get("message")
        source = message.__dict__ if message is not None else fields  # generate: "response" and "thinking"
        text = source.get("content") if message is not None else source.get("response")
        if text:
            self.choice.text.append(text)
        thinking = source.get("thinking")
        if thinking:
            self.choice.reasoning.append(thinking)
        for call in source.get("tool_calls") or ():
            index = len(self.choice.tool_calls)
            self.choice.tool_calls.open(index).fields["name"] = call.function.name
            chat_messages.add_arguments(self.choice, index, call.function.arguments)
        if fields.get("done"):
            self.reason = fields.get("done_reason")
            self.model = fields.get("model")
            self.usage = Usage(input_tokens=fields.get("prompt_eval_count"), output_tokens=fields.get("eval_count"))

    def result(self) -> Response:
        reason = self.reason
        return Response(
            model=self.model,
            finish_reasons=[reason] if reason else None,
            messages=[self.choice.to_message()],
            usage=self.usage,
        )


def response(result: Any) -> Response:
    accumulator = ResponseAccumulator()
    accumulator.add(result)
    return accumulator.result()


def _api(method: str, operation: str, request: Any) -> ModelApi:
    return ModelApi(
        kind=f"ollama.{method}",
        provider=semconv.PROVIDER_OLLAMA,
        operation=operation,
        request=request,
        response=response,
        accumulator=ResponseAccumulator,
        classify=iterator_result,
        server=base_url_server,
        bind=_bind(method),
    )


CHAT = _api("chat", semconv.OP_CHAT, chat_request)
GENERATE = _api("generate", semconv.OP_TEXT_COMPLETION, generate_request)


def embed_request(kwargs: dict[str, Any]) -> Request:
    """``embed(model, input, dimensions=)``: how many inputs and the vector length asked."""
    dimensions = kwargs.get("dimensions")
    return Request(
        model=params.model_name(kwargs.get("model")),
        input_count=input_count(kwargs.get("input")),
        dimension_count=dimensions if isinstance(dimensions, int) else None,
    )


def embed_response(result: Any) -> Response:
    """An ``EmbedResponse``: its model, ``prompt_eval_count`` and the first vector's length."""
    vectors = m.get(result, "embeddings") or ()
    tokens = m.get(result, "prompt_eval_count")
    return Response(
        model=m.get(result, "model"),
        messages=None,
        usage=Usage(input_tokens=tokens) if isinstance(tokens, int) else None,
        dimension_count=vector_length(vectors[0]) if vectors else None,
    )


EMBED = replace(
    _api("embed", semconv.OP_EMBEDDINGS, embed_request), response=embed_response, conversation=False
)  # the accumulator never asked: embed does not stream

PATCHES: tuple[Patch, ...] = (
    *model_methods("ollama._client", ("Client", "AsyncClient"), ("chat",), CHAT),
    *model_methods("ollama._client", ("Client", "AsyncClient"), ("generate",), GENERATE),
    *model_methods("ollama._client", ("Client", "AsyncClient"), ("embed",), EMBED),
)


class OllamaInstrumentor(TableInstrumentor, library="ollama", supported="ollama >= 0.4, < 1", table=PATCHES):
    """``OllamaInstrumentor().instrument(tracer_provider=..., runtime=...)``; ``uninstrument()`` restores the SDK."""

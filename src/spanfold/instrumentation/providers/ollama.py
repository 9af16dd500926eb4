"""Ollama instrumentation: the ``ollama`` SDK's ``chat`` and ``generate``, sync and async, streaming or not.

Supported: ``ollama`` >= 0.4, < 1 (the pydantic responses; tested with 0.6.3). Wrapped: ``Client.chat`` /
``Client.generate`` and the same of ``AsyncClient`` (``POST /api/chat``, ``/api/generate``). Their first arguments may
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
from typing import Any

from spanfold import semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.openai import chat as openai_chat
from spanfold.instrumentation.toolkit import legacy
from spanfold.instrumentation.toolkit.calls import ModelApi, base_url_server, iterator_result
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor, model_method
from spanfold.instrumentation.toolkit.reading import messages as m
from spanfold.instrumentation.toolkit.reading import params
from spanfold.instrumentation.toolkit.reading.history import HistoryCache
from spanfold.semconv import parts as p

OPTIONS = {
    "temperature": semconv.REQUEST_TEMPERATURE,
    "top_p": semconv.REQUEST_TOP_P,
    "top_k": semconv.REQUEST_TOP_K,
    "seed": semconv.REQUEST_SEED,
    "num_predict": semconv.REQUEST_MAX_TOKENS,
    "frequency_penalty": semconv.REQUEST_FREQUENCY_PENALTY,
    "presence_penalty": semconv.REQUEST_PRESENCE_PENALTY,
}
#: The signature's positional parameters, in order.
_POSITIONAL = {"chat": ("model", "messages"), "generate": ("model", "prompt", "suffix")}
#: The first bytes of base64 image data -> its MIME type (Ollama images carry none).
_MAGIC = {"iVBOR": "image/png", "/9j/": "image/jpeg", "R0lGOD": "image/gif", "UklGR": "image/webp"}


def _bind(method: str) -> Any:
    names = _POSITIONAL[method]

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        m.materialize(kwargs, "messages", "tools", "images")
        return {**dict(zip(names, args, strict=False)), **kwargs}

    return bind


def _image(image: Any, rt: Runtime) -> p.Part:
    value = m.get(image, "value", image) if not isinstance(image, (str, bytes)) else image
    if isinstance(value, bytes):
        value = base64.b64encode(value).decode()
    if not isinstance(value, str):  # a file path the SDK reads
        return p.uri(str(value), "image", rt)
    mime = next((kind for magic, kind in _MAGIC.items() if value.startswith(magic)), None)
    return p.blob(value, mime, "image", rt)


def input_message(msg: Any, rt: Runtime) -> p.Message:
    role, content = m.get(msg, "role"), m.get(msg, "content")
    if role == "tool":
        return p.message(role, [p.tool_response(None, content, rt)], name=m.get(msg, "tool_name"))
    parts: list[p.Part] = []
    thinking = m.get(msg, "thinking")
    if thinking:
        parts.append(p.reasoning(thinking, rt))
    if content:
        parts.append(p.text(content, rt))
    parts.extend(_image(image, rt) for image in m.as_list(m.field(msg, "images")))
    for call in m.as_list(m.field(msg, "tool_calls")):
        function = m.get(call, "function")
        parts.append(p.tool_call(None, m.get(function, "name"), m.get(function, "arguments"), rt))
    return p.message(role, parts)


def _tool_definition(tool: Any) -> dict[str, Any]:
    if callable(tool) and not isinstance(tool, dict):  # a Python function the SDK describes from its docstring
        return {"type": "function", "name": getattr(tool, "__name__", None), "description": tool.__doc__}
    return openai_chat.tool_definition(tool)


_HISTORY = HistoryCache(input_message)
_TOOLS = HistoryCache(lambda tool, rt: _tool_definition(tool), limit=1024)


def _request(request: dict[str, Any], rt: Runtime) -> tuple[str | None, dict[str, Any]]:
    model = params.model_name(request.get("model"))
    attrs: dict[str, Any] = {semconv.REQUEST_MODEL: model}
    options = request.get("options")
    attrs.update(params.numbers(options, OPTIONS))
    stop = params.string_list(m.get(options, "stop")) if options is not None else None
    if stop and rt.capture_content:
        attrs[semconv.REQUEST_STOP_SEQUENCES] = rt.content(stop)
    if params.given(request.get("format")):
        attrs[semconv.OUTPUT_TYPE] = "json"
    tools = request.get("tools")
    if rt.capture_content and tools:
        attrs[semconv.TOOL_DEFINITIONS] = _TOOLS.json_list(m.as_list(tools), rt)
    return model, attrs


def chat_request(request: dict[str, Any], rt: Runtime) -> tuple[str | None, dict[str, Any]]:
    model, attrs = _request(request, rt)
    messages = request.get("messages")
    if messages:
        attrs[semconv.INPUT_MESSAGES] = _HISTORY.json_list(m.as_list(messages), rt)
    return model, attrs


def generate_request(request: dict[str, Any], rt: Runtime) -> tuple[str | None, dict[str, Any]]:
    model, attrs = _request(request, rt)
    system = request.get("system")
    if system and rt.capture_content:
        attrs[semconv.SYSTEM_INSTRUCTIONS] = m.dumps([p.text(system, rt)])
    prompt = {"role": "user", "content": request.get("prompt"), "images": request.get("images")}
    attrs[semconv.INPUT_MESSAGES] = m.dumps([input_message(prompt, rt)])
    return model, attrs


class ResponseAccumulator:
    """Chat or generate responses, whole or streamed: text, thinking and tool calls, then the last one's counts."""

    __slots__ = ("choice", "last", "rt")

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.choice = openai_chat.Choice()
        self.last: Any = None

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
            block = self.choice.tool_calls.open(len(self.choice.tool_calls))
            block.fields["name"] = call.function.name
            block.fragments.append(m.dumps(call.function.arguments))
        if fields.get("done"):
            self.last = response

    def attributes(self) -> dict[str, Any]:
        last = self.last
        reason = m.get(last, "done_reason") if last is not None else None
        choice = self.choice
        choice.finish_reason = "tool_calls" if len(choice.tool_calls) else reason
        usage = {
            semconv.USAGE_INPUT_TOKENS: m.get(last, "prompt_eval_count"),
            semconv.USAGE_OUTPUT_TOKENS: m.get(last, "eval_count"),
        }
        model = m.get(last, "model") if last is not None else None
        output = m.dumps([choice.to_message(self.rt)])
        return m.result_attributes(None, model, [reason] if reason else None, output, usage)


def response_attributes(response: Any, rt: Runtime) -> dict[str, Any]:
    accumulator = ResponseAccumulator(rt)
    accumulator.add(response)
    return accumulator.attributes()


def _api(method: str, operation: str, request: Any) -> ModelApi:
    return legacy.api(
        kind=f"ollama.{method}",
        provider=semconv.PROVIDER_OLLAMA,
        operation=operation,
        request=request,
        response=response_attributes,
        accumulator=ResponseAccumulator,
        classify=iterator_result,
        server=base_url_server,
        bind=_bind(method),
    )


CHAT = _api("chat", semconv.OP_CHAT, chat_request)
GENERATE = _api("generate", semconv.OP_TEXT_COMPLETION, generate_request)

PATCHES: tuple[Patch, ...] = tuple(
    model_method("ollama._client", f"{cls}.{method}", api, cls == "AsyncClient")
    for cls in ("Client", "AsyncClient")
    for method, api in (("chat", CHAT), ("generate", GENERATE))
)


class OllamaInstrumentor(TableInstrumentor):
    """``OllamaInstrumentor().instrument(tracer_provider=..., runtime=...)``; ``uninstrument()`` restores the SDK."""

    library = "ollama"

    dependencies = ("ollama >= 0.4, < 1",)

    def patches(self, rt: Runtime) -> tuple[Patch, ...]:
        return PATCHES

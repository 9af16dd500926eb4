"""Mistral instrumentation: the ``mistralai`` SDK's chat and agents completions, mapped by
:mod:`spanfold.instrumentation.providers.openai.chat`.

Supported: ``mistralai`` >= 2.0, < 4 (the ``mistralai.client`` layout; tested with 3.7). Wrapped: ``chat.complete`` /
``complete_async`` / ``stream`` / ``stream_async`` (``chat.parse*`` call these) and the same four of ``agents``
(``POST /v1/agents/completions``: the span is named after the ``agent_id`` when no model is given).

The SDK is speakeasy-generated: its own pydantic models, optional fields left ``UNSET`` (a falsy sentinel, not None),
and an ``EventStream`` of ``CompletionEvent``s each holding a chunk in ``.data``. The chat shapes are OpenAI's
(``tool_calls``, role ``tool`` with ``tool_call_id``), with arguments as a string or an object and content as a string
or chunks (``text``, ``image_url``, ``thinking``): the openai_chat shape map reads them. Mistral's own chunk kinds
are read here: ``document_url`` and ``resource_link`` -> ``uri``, ``file`` -> ``file``, ``input_audio`` (base64 or a
URL) -> ``blob`` / ``uri``, ``resource`` -> its text or image; ``reference`` (ids of earlier references) keeps its
type. The SDK's message objects a caller puts back in the history are read as their JSON form (``UNSET`` fields
dropped), once each.
"""

from __future__ import annotations

from typing import Any

from spanfold import semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.openai import chat as openai_chat
from spanfold.instrumentation.toolkit import legacy
from spanfold.instrumentation.toolkit.calls import Result, server_of
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor, model_method
from spanfold.instrumentation.toolkit.reading import messages as m
from spanfold.instrumentation.toolkit.reading.history import HistoryCache
from spanfold.semconv import parts as p

REQUEST_PARAMS = {
    "temperature": semconv.REQUEST_TEMPERATURE,
    "top_p": semconv.REQUEST_TOP_P,
    "top_k": semconv.REQUEST_TOP_K,
    "random_seed": semconv.REQUEST_SEED,
    "frequency_penalty": semconv.REQUEST_FREQUENCY_PENALTY,
    "presence_penalty": semconv.REQUEST_PRESENCE_PENALTY,
    "max_tokens": semconv.REQUEST_MAX_TOKENS,
}


def _plain(msg: Any) -> Any:
    """An SDK message object as its JSON form (``UNSET`` fields dropped); dicts as they are."""
    if isinstance(msg, dict):
        return msg
    dump = getattr(msg, "model_dump", None)
    return dump(by_alias=True) if callable(dump) else msg


def _audio(value: Any, rt: Runtime) -> p.Part:
    if isinstance(value, str) and value.startswith(("http://", "https://", "data:")):
        return p.media(value, "audio", rt)
    return p.blob(value, None, "audio", rt)


def _own_chunk(chunk: Any, rt: Runtime) -> p.Part | None:
    """The part of a chunk kind only Mistral has (or shapes differently: ``file``, ``input_audio``); None for the
    kinds the shared map reads."""
    kind = m.get(chunk, "type")
    if kind == "document_url":
        return p.uri(m.get(chunk, "document_url"), "document", rt)
    if kind == "resource_link":
        return p.uri(m.get(chunk, "uri"), "document", rt)
    if kind == "file":
        return p.file(m.get(chunk, "file_id"), "document")
    if kind == "input_audio":
        return _audio(m.get(chunk, "input_audio"), rt)
    if kind == "resource":
        content = m.get(chunk, "content")
        if m.get(content, "type") == "image_url":
            url = m.get(content, "image_url")
            return p.media(str(url if isinstance(url, str) else m.get(url, "url", "")), "image", rt)
        return p.text(m.get(content, "text"), rt)
    return None


def input_message(msg: Any, rt: Runtime) -> p.Message:
    plain = _plain(msg)
    message = openai_chat.input_message(plain, rt)
    content = m.get(plain, "content")
    if isinstance(content, list) and m.get(plain, "role") != "tool":
        parts = message["parts"]  # one part per content chunk, in order, before any tool call
        for i, chunk in enumerate(content[: len(parts)]):
            own = _own_chunk(chunk, rt)
            if own is not None:
                parts[i] = own
    return message


_HISTORY = HistoryCache(input_message)


def request_attributes(kwargs: dict[str, Any], rt: Runtime) -> tuple[str | None, dict[str, Any]]:
    target, attrs = openai_chat.chat_request_attributes(kwargs, rt, _HISTORY, REQUEST_PARAMS)
    agent = kwargs.get("agent_id")
    return target or (f"agent {agent}" if isinstance(agent, str) else None), attrs


class EventStreamAccumulator(openai_chat.ChatStreamAccumulator):
    """The chat chunk accumulator, fed the chunk each ``CompletionEvent`` holds."""

    __slots__ = ()

    def add(self, chunk: Any) -> None:
        super().add(chunk.data)


def classify(result: Any) -> Result:
    from mistralai.client.utils.eventstreaming import EventStream, EventStreamAsync
    from pydantic import BaseModel

    if isinstance(result, EventStream):
        return Result.STREAM
    if isinstance(result, EventStreamAsync):
        return Result.ASYNC_STREAM
    if isinstance(result, BaseModel):
        return Result.RESPONSE
    return Result.OPAQUE


def server(instance: Any) -> Any:
    return server_of(instance.sdk_configuration.get_server_details()[0])


CHAT = legacy.api(
    kind="mistral.chat",
    provider=semconv.PROVIDER_MISTRAL,
    operation=semconv.OP_CHAT,
    request=request_attributes,
    response=openai_chat.response_attributes,
    accumulator=EventStreamAccumulator,
    classify=classify,
    server=server,
)

#: (module, "Class.method", is_async)
METHODS: tuple[tuple[str, str, bool], ...] = tuple(
    (f"mistralai.client.{module}", f"{cls}.{method}", method.endswith("_async"))
    for module, cls in (("chat", "Chat"), ("agents", "Agents"))
    for method in ("complete", "complete_async", "stream", "stream_async")
)

PATCHES: tuple[Patch, ...] = tuple(model_method(module, name, CHAT, is_async) for module, name, is_async in METHODS)


class MistralInstrumentor(TableInstrumentor):
    """``MistralInstrumentor().instrument(tracer_provider=..., runtime=...)``; ``uninstrument()`` restores the SDK."""

    library = "mistralai.client"

    dependencies = ("mistralai >= 2.0, < 4",)

    def patches(self, rt: Runtime) -> tuple[Patch, ...]:
        return PATCHES

"""Mistral instrumentation: the ``mistralai`` SDK's chat and agents completions, mapped by
:mod:`spanfold.instrumentation.providers.openai.chat`.

Supported: ``mistralai`` >= 2.0, < 4 (the ``mistralai.client`` layout; tested with 3.7). Wrapped: ``chat.complete`` /
``complete_async`` / ``stream`` / ``stream_async`` (``chat.parse*`` call these) and the same four of ``agents``
(``POST /v1/agents/completions``: the span is named after the ``agent_id`` when no model is given);
``embeddings.create`` / ``create_async`` (``POST /v1/embeddings``, OpenAI's shapes under Mistral's names).

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

from typing import Any, Final

from spanfold import semconv
from spanfold.instrumentation.providers.openai import chat as openai_chat
from spanfold.instrumentation.providers.openai import embeddings as openai_embeddings
from spanfold.instrumentation.toolkit.calls import ModelApi, Result, server_of
from spanfold.instrumentation.toolkit.invocation import Endpoint, Param, Request
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor, model_method
from spanfold.instrumentation.toolkit.reading import chat_messages
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading.history import History
from spanfold.semconv import parts as p

REQUEST_PARAMS: Final[dict[str, Param]] = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "random_seed": "seed",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
    "max_tokens": "max_tokens",
}


def _plain(msg: Any) -> Any:
    """An SDK message object as its JSON form (``UNSET`` fields dropped); dicts as they are."""
    if isinstance(msg, dict):
        return msg
    dump = getattr(msg, "model_dump", None)
    return dump(by_alias=True) if callable(dump) else msg


def _audio(value: Any) -> p.Part:
    if isinstance(value, str) and value.startswith(("http://", "https://", "data:")):
        return p.media(value, "audio")
    return p.blob(value, None, "audio")


def _own_chunk(chunk: Any) -> p.Part | None:
    """The part of a chunk kind only Mistral has (or shapes differently: ``file``, ``input_audio``); None for the
    kinds the shared map reads."""
    kind = m.get(chunk, "type")
    if kind == "document_url":
        return p.uri(m.get(chunk, "document_url"), "document")
    if kind == "resource_link":
        return p.uri(m.get(chunk, "uri"), "document")
    if kind == "file":
        return p.file(m.get(chunk, "file_id"), "document")
    if kind == "input_audio":
        return _audio(m.get(chunk, "input_audio"))
    if kind == "resource":
        content = m.get(chunk, "content")
        if m.get(content, "type") == "image_url":
            url = m.get(content, "image_url")
            return p.media(str(url if isinstance(url, str) else m.get(url, "url", "")), "image")
        return p.text(m.get(content, "text"))
    return None


def input_message(msg: Any) -> p.Message:
    plain = _plain(msg)
    message = chat_messages.input_message(plain)
    content = m.get(plain, "content")
    if isinstance(content, list) and m.get(plain, "role") != "tool":
        parts = message["parts"]  # one part per content chunk, in order, before any tool call
        for i, chunk in enumerate(content[: len(parts)]):
            own = _own_chunk(chunk)
            if own is not None:
                parts[i] = own
    return message


HISTORY: Final = History(input_message)


def request(kwargs: dict[str, Any]) -> Request:
    """A chat request; an agents request names its agent, not a model: the span is named after it."""
    invocation = openai_chat.chat_request(kwargs, HISTORY, REQUEST_PARAMS)
    agent = kwargs.get("agent_id")
    if invocation.model is None and isinstance(agent, str):
        invocation.target = f"agent {agent}"
    return invocation


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


def server(instance: Any) -> Endpoint | None:
    return server_of(instance.sdk_configuration.get_server_details()[0])


CHAT = ModelApi(
    kind="mistral.chat",
    provider=semconv.PROVIDER_MISTRAL,
    operation=semconv.OP_CHAT,
    request=request,
    response=openai_chat.response,
    accumulator=EventStreamAccumulator,
    classify=classify,
    server=server,
)


def embeddings_request(kwargs: dict[str, Any]) -> Request:
    """``embeddings.create(model=, inputs=, output_dimension=, encoding_format=)``: OpenAI's embeddings request under
    Mistral's names (the response is OpenAI's shape: :func:`openai_embeddings.response`)."""
    return openai_embeddings.request({ours: kwargs.get(theirs) for ours, theirs in _EMBEDDINGS_NAMES.items()})


#: OpenAI's name of each embeddings keyword -> Mistral's.
_EMBEDDINGS_NAMES: Final = {
    "model": "model",
    "input": "inputs",
    "dimensions": "output_dimension",
    "encoding_format": "encoding_format",
}


EMBEDDINGS = ModelApi(
    kind="mistral.embeddings",
    provider=semconv.PROVIDER_MISTRAL,
    operation=semconv.OP_EMBEDDINGS,
    request=embeddings_request,
    response=openai_embeddings.response,
    accumulator=EventStreamAccumulator,  # never asked: embeddings do not stream
    classify=classify,
    server=server,
    conversation=False,
)

#: (module, "Class.method", is_async)
METHODS: tuple[tuple[str, str, bool], ...] = tuple(
    (f"mistralai.client.{module}", f"{cls}.{method}", method.endswith("_async"))
    for module, cls in (("chat", "Chat"), ("agents", "Agents"))
    for method in ("complete", "complete_async", "stream", "stream_async")
)

PATCHES: tuple[Patch, ...] = (
    *(model_method(module, name, CHAT, is_async) for module, name, is_async in METHODS),
    model_method("mistralai.client.embeddings", "Embeddings.create", EMBEDDINGS, False),
    model_method("mistralai.client.embeddings", "Embeddings.create_async", EMBEDDINGS, True),
)


class MistralInstrumentor(
    TableInstrumentor, library="mistralai.client", supported="mistralai >= 2.0, < 4", table=PATCHES
):
    """``MistralInstrumentor().instrument(tracer_provider=..., runtime=...)``; ``uninstrument()`` restores the SDK."""

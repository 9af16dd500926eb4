"""Cohere instrumentation: the ``cohere`` SDK's v2 chat (``ClientV2`` / ``AsyncClientV2``), streaming or not.

Supported: ``cohere`` >= 5.11, < 8 (the v2 client; tested with 7.3.1). Wrapped: ``V2Client.chat`` / ``chat_stream`` and
the async twins (``POST /v2/chat``); ``embed`` and ``rerank``, sync and async (:mod:`.cohere_embed`).
``chat_stream`` is a generator function (and the async one an async generator
function): calling it returns the stream at once, and the HTTP request starts with the first item read.

The v2 message format is OpenAI-like (``tool_calls`` with string arguments, role ``tool`` with ``tool_call_id``), read
by :mod:`spanfold.instrumentation.providers.openai.chat`, with Cohere's own parts: an assistant's ``tool_plan`` (its
plan before
calling tools: a reasoning part), ``thinking`` content items, and tool results whose content may be ``document``
items (``{"document": {"data": ...}}``). A stream is typed events: ``message-start``, ``content-start`` /
``-delta`` / ``-end`` (text or thinking by index), ``tool-plan-delta``, ``tool-call-start`` / ``-delta`` / ``-end``,
``citation-*``, ``message-end`` (finish reason and usage, in ``usage.tokens``).
"""

from __future__ import annotations

from typing import Any, Final

from spanfold import semconv
from spanfold.instrumentation.providers import cohere_embed
from spanfold.instrumentation.providers.openai import chat as openai_chat
from spanfold.instrumentation.toolkit.calls import ModelApi, iterator_result, server_of
from spanfold.instrumentation.toolkit.invocation import Endpoint, Param, Request, Response, Usage
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor, model_method
from spanfold.instrumentation.toolkit.reading import chat_messages
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading.history import History
from spanfold.semconv import parts as p

REQUEST_PARAMS: Final[dict[str, Param]] = {
    "temperature": "temperature",
    "p": "top_p",
    "k": "top_k",
    "seed": "seed",
    "max_tokens": "max_tokens",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
}


def _tool_result_text(content: Any) -> Any:
    """A tool message's content: a string, or text and ``document`` items (their ``data``; an object's as its JSON
    text, joined with the rest)."""
    if content is None or isinstance(content, str):
        return content
    texts = []
    for item in m.as_list(content):
        if m.get(item, "type") == "document":
            data = m.get(m.get(item, "document"), "data")
            texts.append(data if isinstance(data, str) else m.dumps(data))
        else:
            texts.append(str(m.get(item, "text") or ""))
    return "".join(texts)


def input_message(msg: Any) -> p.Message:
    if m.get(msg, "role") == "tool":
        content = _tool_result_text(m.field(msg, "content"))
        return p.message("tool", [p.tool_response(m.get(msg, "tool_call_id"), content)])
    message = chat_messages.input_message(msg)
    plan = m.get(msg, "tool_plan")
    if plan:
        message["parts"].insert(0, p.reasoning(plan))
    return message


HISTORY: Final = History(input_message)


def request(kwargs: dict[str, Any]) -> Request:
    m.materialize(kwargs, "stop_sequences")
    return openai_chat.chat_request(kwargs, HISTORY, REQUEST_PARAMS, stop="stop_sequences")


def _usage(usage: Any) -> Usage | None:
    tokens = m.get(usage, "tokens") if usage is not None else None
    if tokens is None:
        return None
    counts = (m.get(tokens, "input_tokens"), m.get(tokens, "output_tokens"))
    return Usage(
        input_tokens=int(counts[0]) if counts[0] is not None else None,
        output_tokens=int(counts[1]) if counts[1] is not None else None,
    )


def _response(response_id: Any, choice: chat_messages.Choice, reason: Any, tokens: Usage | None) -> Response:
    return Response(
        id=response_id, finish_reasons=[reason] if reason else None, messages=[choice.to_message()], usage=tokens
    )


def response(result: Any) -> Response:
    message = m.get(result, "message")
    choice = chat_messages.Choice()
    plan = m.get(message, "tool_plan")
    if plan:
        choice.reasoning.append(plan)
    chat_messages.add_content(choice, m.get(message, "content"))
    for index, call in enumerate(m.as_list(m.get(message, "tool_calls"))):
        block = choice.tool_calls.open(index)
        function = m.get(call, "function")
        block.fields.update(id=m.get(call, "id"), name=m.get(function, "name"))
        block.fragments.append(m.get(function, "arguments") or "")
    return _response(m.get(result, "id"), choice, m.get(result, "finish_reason"), _usage(m.get(result, "usage")))


class StreamAccumulator:
    """The v2 stream's typed events, by ``type``."""

    __slots__ = ("choice", "id", "reason", "thinking", "usage")

    def __init__(self) -> None:
        self.choice = chat_messages.Choice()
        self.id: Any = None
        self.reason: Any = None
        self.usage: Usage | None = None
        self.thinking: set[Any] = set()  # indexes of the content blocks that are thinking

    def add(self, event: Any) -> None:
        kind = event.type
        if kind == "content-delta" or kind == "content-start":
            content = event.delta.message.content
            if kind == "content-start" and content.type == "thinking":
                self.thinking.add(event.index)
            if event.index in self.thinking:
                self.choice.reasoning.append(content.thinking or "")
            else:
                self.choice.text.append(content.text or "")
        elif kind == "tool-call-delta":
            self.choice.tool_calls.add(event.index, event.delta.message.tool_calls.function.arguments or "")
        elif kind == "tool-call-start":
            call = event.delta.message.tool_calls
            block = self.choice.tool_calls.start(event.index, call)
            block.fields.update(id=call.id, name=call.function.name if call.function else None)
            block.fragments.append((call.function.arguments if call.function else None) or "")
        elif kind == "tool-plan-delta":
            self.choice.reasoning.append(event.delta.message.tool_plan or "")
        elif kind == "message-start":
            self.id = event.id
        elif kind == "message-end":
            self.reason = event.delta.finish_reason
            self.usage = _usage(event.delta.usage)

    def result(self) -> Response:
        return _response(self.id, self.choice, self.reason, self.usage)


def server(instance: Any) -> Endpoint | None:
    wrapper = getattr(instance, "_client_wrapper", None) or instance._raw_client._client_wrapper
    return server_of(wrapper.get_base_url())


CHAT = ModelApi(
    kind="cohere.chat",
    provider=semconv.PROVIDER_COHERE,
    operation=semconv.OP_CHAT,
    request=request,
    response=response,
    accumulator=StreamAccumulator,
    classify=iterator_result,
    server=server,
)

#: Embed (``POST /v2/embed``) and rerank (``POST /v2/rerank``): no history sent, never stitched; a rerank is the
#: conventions' retrieval that says it reranks (a ``rerank`` step). Shapes: :mod:`.cohere_embed`.
EMBED = ModelApi(
    kind="cohere.embed",
    provider=semconv.PROVIDER_COHERE,
    operation=semconv.OP_EMBEDDINGS,
    request=cohere_embed.embed_request,
    response=cohere_embed.embed_response,
    accumulator=StreamAccumulator,  # never asked: embed does not stream
    classify=iterator_result,
    server=server,
    conversation=False,
)
RERANK = ModelApi(
    kind="cohere.rerank",
    provider=semconv.PROVIDER_COHERE,
    operation=semconv.OP_RETRIEVAL,
    request=cohere_embed.rerank_request,
    response=cohere_embed.rerank_response,
    accumulator=StreamAccumulator,  # never asked: rerank does not stream
    classify=iterator_result,
    server=server,
    conversation=False,
)

_V2 = "cohere.v2.client"
PATCHES: tuple[Patch, ...] = (
    model_method(_V2, "V2Client.chat", CHAT, False),
    model_method(_V2, "V2Client.chat_stream", CHAT, False),
    model_method(_V2, "AsyncV2Client.chat", CHAT, True),
    model_method(_V2, "AsyncV2Client.chat_stream", CHAT, False),  # an async generator function: nothing to await
    model_method(_V2, "V2Client.embed", EMBED, False),
    model_method(_V2, "AsyncV2Client.embed", EMBED, True),
    model_method(_V2, "V2Client.rerank", RERANK, False),
    model_method(_V2, "AsyncV2Client.rerank", RERANK, True),
)


class CohereInstrumentor(TableInstrumentor, library="cohere", supported="cohere >= 5.11, < 8", table=PATCHES):
    """``CohereInstrumentor().instrument(tracer_provider=..., runtime=...)``; ``uninstrument()`` restores the SDK."""

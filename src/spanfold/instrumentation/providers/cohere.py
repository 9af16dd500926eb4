"""Cohere instrumentation: the ``cohere`` SDK's v2 chat (``ClientV2`` / ``AsyncClientV2``), streaming or not.

Supported: ``cohere`` >= 5.11, < 8 (the v2 client; tested with 7.3.1). Wrapped: ``V2Client.chat`` / ``chat_stream`` and
the async twins (``POST /v2/chat``). ``chat_stream`` is a generator function (and the async one an async generator
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

from typing import Any

from spanfold import semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.openai import chat as openai_chat
from spanfold.instrumentation.toolkit import legacy
from spanfold.instrumentation.toolkit.calls import iterator_result, server_of
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor, model_method
from spanfold.instrumentation.toolkit.reading import messages as m
from spanfold.instrumentation.toolkit.reading.history import HistoryCache
from spanfold.semconv import parts as p
from spanfold.semconv import shapes

REQUEST_PARAMS = {
    "temperature": semconv.REQUEST_TEMPERATURE,
    "p": semconv.REQUEST_TOP_P,
    "k": semconv.REQUEST_TOP_K,
    "seed": semconv.REQUEST_SEED,
    "max_tokens": semconv.REQUEST_MAX_TOKENS,
    "frequency_penalty": semconv.REQUEST_FREQUENCY_PENALTY,
    "presence_penalty": semconv.REQUEST_PRESENCE_PENALTY,
}


def _tool_result_text(content: Any) -> Any:
    """A tool message's content: a string, or text and ``document`` items (their ``data``, JSON when an object)."""
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


def input_message(msg: Any, rt: Runtime) -> p.Message:
    if m.get(msg, "role") == "tool":
        content = _tool_result_text(m.field(msg, "content"))
        return p.message("tool", [p.tool_response(m.get(msg, "tool_call_id"), content, rt)])
    message = openai_chat.input_message(msg, rt)
    plan = m.get(msg, "tool_plan")
    if plan:
        message["parts"].insert(0, p.reasoning(plan, rt))
    return message


_HISTORY = HistoryCache(input_message)


def request_attributes(kwargs: dict[str, Any], rt: Runtime) -> tuple[str | None, dict[str, Any]]:
    m.materialize(kwargs, "messages", "tools", "stop_sequences")
    request = {k: v for k, v in kwargs.items() if k != "stop_sequences"}  # the shared map reads ``stop``
    request["stop"] = kwargs.get("stop_sequences")
    return openai_chat.chat_request_attributes(request, rt, _HISTORY, REQUEST_PARAMS)


def _usage(usage: Any) -> dict[str, Any]:
    tokens = m.get(usage, "tokens") if usage is not None else None
    if tokens is None:
        return {}
    counts = (m.get(tokens, "input_tokens"), m.get(tokens, "output_tokens"))
    return {
        semconv.USAGE_INPUT_TOKENS: int(counts[0]) if counts[0] is not None else None,
        semconv.USAGE_OUTPUT_TOKENS: int(counts[1]) if counts[1] is not None else None,
    }


def _result(response_id: Any, choice: openai_chat.Choice, reason: Any, usage: Any, rt: Runtime) -> dict[str, Any]:
    choice.finish_reason = shapes.finish_reason(shapes.COHERE_FINISH_REASONS, reason)
    output = m.dumps([choice.to_message(rt)])
    return m.result_attributes(response_id, None, [reason] if reason else None, output, _usage(usage))


def response_attributes(response: Any, rt: Runtime) -> dict[str, Any]:
    message = m.get(response, "message")
    choice = openai_chat.Choice()
    plan = m.get(message, "tool_plan")
    if plan:
        choice.reasoning.append(plan)
    openai_chat.add_content(choice, m.get(message, "content"))
    for index, call in enumerate(m.as_list(m.get(message, "tool_calls"))):
        block = choice.tool_calls.open(index)
        function = m.get(call, "function")
        block.fields.update(id=m.get(call, "id"), name=m.get(function, "name"))
        block.fragments.append(m.get(function, "arguments") or "")
    return _result(m.get(response, "id"), choice, m.get(response, "finish_reason"), m.get(response, "usage"), rt)


class StreamAccumulator:
    """The v2 stream's typed events, by ``type``."""

    __slots__ = ("choice", "id", "reason", "rt", "thinking", "usage")

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.choice = openai_chat.Choice()
        self.id: Any = None
        self.reason: Any = None
        self.usage: Any = None
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
            self.usage = event.delta.usage

    def attributes(self) -> dict[str, Any]:
        return _result(self.id, self.choice, self.reason, self.usage, self.rt)


def server(instance: Any) -> Any:
    wrapper = getattr(instance, "_client_wrapper", None) or instance._raw_client._client_wrapper
    return server_of(wrapper.get_base_url())


CHAT = legacy.api(
    kind="cohere.chat",
    provider=semconv.PROVIDER_COHERE,
    operation=semconv.OP_CHAT,
    request=request_attributes,
    response=response_attributes,
    accumulator=StreamAccumulator,
    classify=iterator_result,
    server=server,
)

_V2 = "cohere.v2.client"
PATCHES: tuple[Patch, ...] = (
    model_method(_V2, "V2Client.chat", CHAT, False),
    model_method(_V2, "V2Client.chat_stream", CHAT, False),
    model_method(_V2, "AsyncV2Client.chat", CHAT, True),
    model_method(_V2, "AsyncV2Client.chat_stream", CHAT, False),  # an async generator function: nothing to await
)


class CohereInstrumentor(TableInstrumentor):
    """``CohereInstrumentor().instrument(tracer_provider=..., runtime=...)``; ``uninstrument()`` restores the SDK."""

    library = "cohere"

    dependencies = ("cohere >= 5.11, < 8",)

    def patches(self, rt: Runtime) -> tuple[Patch, ...]:
        return PATCHES

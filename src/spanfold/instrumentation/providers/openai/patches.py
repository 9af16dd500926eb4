"""OpenAI instrumentation: which ``openai`` SDK methods are wrapped, and with which API description.

Supported: ``openai`` >= 1.40, < 4: the httpx-based 1.x and 2.x and the httpx2-based 3.x (1.40.0 is the first release
with the ``parse()`` and ``stream()`` helpers; the range is :data:`SUPPORTED`). Chat Completions: ``create``
(sync/async, streaming or not, through ``with_raw_response`` too), ``parse``, and the ``stream()`` helper (it calls
``create``; closing the helper ends the span at once). Responses API
(:mod:`spanfold.instrumentation.providers.openai.responses`,
from 1.66 on): the same for ``responses.create`` / ``responses.parse`` / ``responses.stream()``. Embeddings
(:mod:`spanfold.instrumentation.providers.openai.embeddings`): ``embeddings.create``, sync and async.

Where the SDK moved things, the table lists every place (what a version lacks is skipped): Chat Completions lived in
the module ``openai.resources.chat.completions`` before 1.66 (a package since); ``parse()`` and ``stream()`` were
``client.beta.chat.completions`` methods before 1.92, and the beta ``parse()`` called ``create`` itself in the
oldest releases (1.40): only the outermost of nested model calls gets a span (the toolkit's one guard,
:func:`~spanfold.instrumentation.toolkit.calls.current_call`).
"""

from __future__ import annotations

from typing import Final

from spanfold import semconv
from spanfold.instrumentation.providers.openai import chat as openai_chat
from spanfold.instrumentation.providers.openai import embeddings as openai_embeddings
from spanfold.instrumentation.providers.openai import responses as openai_responses
from spanfold.instrumentation.toolkit.calls import ModelApi, base_url_server, stainless_result
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor, helper_closes, model_methods

#: The releases spanfold traces (the ``openai`` extra and ``instruments-any`` in pyproject.toml say the same).
SUPPORTED: Final = "openai >= 1.40, < 4"

#: openai's raw responses: ``with_raw_response``'s parsed, ``with_streaming_response``'s followed unread.
CLASSIFY: Final = stainless_result("openai", streamed_raw=True)

CHAT = ModelApi(
    kind="openai.chat",
    provider=semconv.PROVIDER_OPENAI,
    operation=semconv.OP_CHAT,
    request=openai_chat.request,
    response=openai_chat.response,
    accumulator=openai_chat.ChatStreamAccumulator,
    classify=CLASSIFY,
    server=base_url_server,
    ask_usage=openai_chat.ask_usage,
)

RESPONSES = ModelApi(
    kind="openai.responses",
    provider=semconv.PROVIDER_OPENAI,
    operation=semconv.OP_CHAT,
    request=openai_responses.request,
    response=openai_responses.response,
    accumulator=openai_responses.ResponseStreamAccumulator,
    classify=CLASSIFY,
    server=base_url_server,
)

EMBEDDINGS = ModelApi(
    kind="openai.embeddings",
    provider=semconv.PROVIDER_OPENAI,
    operation=semconv.OP_EMBEDDINGS,
    request=openai_embeddings.request,
    response=openai_embeddings.response,
    accumulator=openai_chat.ChatStreamAccumulator,  # never asked: embeddings do not stream
    classify=CLASSIFY,
    server=base_url_server,
    conversation=False,
)

#: The sync and async classes of each API.
_COMPLETIONS, _RESPONSES = ("Completions", "AsyncCompletions"), ("Responses", "AsyncResponses")
_CHAT_HELPERS = ("ChatCompletionStream", "AsyncChatCompletionStream")
_RESPONSE_HELPERS = ("ResponseStream", "AsyncResponseStream")


def table(package: str, chat: ModelApi, responses: ModelApi) -> tuple[Patch, ...]:
    """The SDK's patches under ``package``: ``openai``, or a copy of it another SDK ships (Portkey's)."""
    return (
        *model_methods(f"{package}.resources.chat.completions.completions", _COMPLETIONS, ("create", "parse"), chat),
        *model_methods(f"{package}.resources.chat.completions", _COMPLETIONS, ("create",), chat),  # before 1.66
        *model_methods(f"{package}.resources.beta.chat.completions", _COMPLETIONS, ("parse",), chat),  # before 1.92
        *model_methods(f"{package}.resources.responses.responses", _RESPONSES, ("create", "parse"), responses),
        *helper_closes(f"{package}.lib.streaming.chat._completions", _CHAT_HELPERS),
        *helper_closes(f"{package}.lib.streaming.responses._responses", _RESPONSE_HELPERS),
    )


PATCHES: tuple[Patch, ...] = (
    *table("openai", CHAT, RESPONSES),
    *model_methods("openai.resources.embeddings", ("Embeddings", "AsyncEmbeddings"), ("create",), EMBEDDINGS),
)


class OpenAIInstrumentor(TableInstrumentor, library="openai", supported=SUPPORTED, table=PATCHES):
    """``OpenAIInstrumentor().instrument(tracer_provider=..., runtime=...)``; ``uninstrument()`` restores the SDK."""

"""Groq instrumentation: the ``groq`` SDK's Chat Completions, mapped by
:mod:`spanfold.instrumentation.providers.openai.chat`.

Supported: ``groq`` >= 1.0, < 2 (tested with 1.7). Wrapped: ``chat.completions.create``, sync and async, streaming or
not, through ``with_raw_response`` too (``with_streaming_response`` is left alone). Groq's API is OpenAI's Chat
Completions, so the request, response and chunk shapes are OpenAI's; what differs is the SDK's own types (read by
the toolkit's Stainless classifier), the ``reasoning`` field (read by the shared shape map), and streamed usage, which
Groq sends in the last chunk's ``x_groq.usage`` whether or not ``stream_options.include_usage`` was asked for.
"""

from __future__ import annotations

from typing import Any, Final

from spanfold import semconv
from spanfold.instrumentation.providers.openai import chat as openai_chat
from spanfold.instrumentation.toolkit.calls import ModelApi, base_url_server, stainless_result
from spanfold.instrumentation.toolkit.patching import TableInstrumentor, model_methods
from spanfold.instrumentation.toolkit.reading import chat_messages


class GroqStreamAccumulator(openai_chat.ChatStreamAccumulator):
    """OpenAI's chunk accumulator, plus the usage Groq sends in ``x_groq`` (the last chunk's)."""

    __slots__ = ()

    def add(self, chunk: Any) -> None:
        super().add(chunk)
        extra = chunk.__dict__.get("x_groq")
        if extra is not None and extra.usage is not None:
            self.usage = chat_messages.usage(extra.usage)


CHAT = ModelApi(
    kind="groq.chat",
    provider=semconv.PROVIDER_GROQ,
    operation=semconv.OP_CHAT,
    request=openai_chat.request,
    response=openai_chat.response,
    accumulator=GroqStreamAccumulator,
    classify=stainless_result("groq"),
    server=base_url_server,
)

PATCHES: Final = model_methods(
    "groq.resources.chat.completions", ("Completions", "AsyncCompletions"), ("create",), CHAT
)


class GroqInstrumentor(TableInstrumentor, library="groq", supported="groq >= 1.0, < 2", table=PATCHES):
    """``GroqInstrumentor().instrument(tracer_provider=..., runtime=...)``; ``uninstrument()`` restores the SDK."""

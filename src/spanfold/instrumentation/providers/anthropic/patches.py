"""Anthropic instrumentation: which ``anthropic`` SDK methods are wrapped, and how the SDK's own spans are handled.

Supported: ``anthropic`` >= 0.40, < 3: the httpx-based 0.x and 1.x and the httpx2-based 2.x (the range is
:data:`SUPPORTED`). Wrapped: ``messages.create`` (sync and async, streaming or not, through ``with_raw_response``
too), ``messages.parse`` (where the SDK has it), the ``messages.stream()`` helper, and the same methods of
``beta.messages`` (the same code path: the beta tool runner and message threads call ``beta.messages.create``) and of
the 0.x ``beta.prompt_caching.messages``. Messages was the module ``anthropic.resources.messages`` in the oldest 0.x
(a package since): the table lists both places, and what a version lacks is skipped. The mapping of the shapes is in
:mod:`spanfold.instrumentation.providers.anthropic.messages`.

The SDK's own spans, and why spanfold suppresses its call span under ours
-------------------------------------------------------------------------
anthropic traces itself (2.x, and 1.x from 1.14 on; older SDKs do not, and the hooks below are skipped there): every API
call gets a CLIENT span ``anthropic.messages.create`` (scope ``com.anthropic.sdk.python``) from the global tracer
provider, or the one its ``open_telemetry`` client option names, unless that option or
``ANTHROPIC_OPEN_TELEMETRY=false`` turns it off. Content is recorded only in its ``content`` mode
(``ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content``). Its tool runner adds ``anthropic.messages.tool_runner``
(``invoke_agent``) and ``anthropic.custom_tool_use {name}`` (``execute_tool``) spans. With both spanfold's wrapper and
the SDK's span, one API call would be two model steps. The three ways out, and the choice:

* *Enrich the SDK's span* (no span of ours): only exists when the user's client has tracing on and on a provider
  spanfold may never see (the client's own ``tracer_provider``); its name is ``anthropic.messages.create``, not
  ``chat {model}``; and ours would have to be written from inside the SDK's private call machinery.
* *Turn its content mode on*: a per-client option resolved at construction, so spanfold would have to rewrite
  users' clients; and even then a raw ``stream=True`` read without the helper gets no output content, images and
  documents are reduced to their type, ``tool_result`` blocks stay inside user messages, content is cut at 750 kB,
  and the finish reason is not in the semconv attribute.
* **Suppress it under ours (chosen).** spanfold's ``chat {model}`` span is complete in every mode (raw streams,
  helper, raw responses, async), identical in shape to the OpenAI spans, governed by spanfold's one content switch,
  and independent of the client's options. While spanfold's wrapper has its span current, the SDK's
  ``start_api_call_span`` is answered with a non-recording span that carries *our* span context: the SDK runs its
  usual traced path (nothing recorded), and when its ``propagation`` is on, the ``traceparent`` it sends names our
  span, just as it would have named its own. A call spanfold did not wrap (a fault before our span started, other
  endpoints such as ``count_tokens``) keeps its native span. The tool runner's spans are kept; with content capture
  on spanfold adds ``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result`` to its tool spans (the SDK records
  them only in content mode, and then as ``anthropic.tool_result.content``).

Users who never call ``spanfold.init()`` still fold: ``spanfold.exporter.dialects.anthropic_native`` reads the SDK's
native spans (content mode on or off).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from opentelemetry import trace as otel_trace

from spanfold import counters, semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.anthropic import messages as anthropic_messages
from spanfold.instrumentation.toolkit import tool_spans as tools
from spanfold.instrumentation.toolkit.calls import ModelApi, Wrapper, base_url_server, current_call, stainless_result
from spanfold.instrumentation.toolkit.patching import (
    Patch,
    TableInstrumentor,
    adopting_managers,
    deferred_requests,
    model_methods,
    plain,
)
from spanfold.instrumentation.toolkit.reading import anthropic_blocks
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.streams import AsyncStreamProxy, SyncStreamProxy

#: The releases spanfold traces (the ``anthropic`` extra and ``instruments-any`` in pyproject.toml say the same).
SUPPORTED: Final = "anthropic >= 0.40, < 3"

#: Every module that holds a ``Messages`` / ``AsyncMessages`` resource in some supported release (the same class
#: reached through the old and the new path is wrapped once): the Messages package, the beta one, the oldest 0.x's
#: module of the same name and the 0.x prompt-caching beta.
_MODULES = (
    "anthropic.resources.messages.messages",
    "anthropic.resources.beta.messages.messages",
    "anthropic.resources.messages",
    "anthropic.resources.beta.prompt_caching.messages",
)
#: The span name the SDK gives the call span of every Messages create/parse/stream request.
NATIVE_CALL_SPAN: Final = "anthropic.messages.create"
#: The resource classes, sync and async.
_CLASSES = ("Messages", "AsyncMessages")
#: The arguments a stream manager keeps (one-shot iterators among them are made lists first).
_KEPT = ("messages", "system", "tools", "stop_sequences")


MESSAGES = ModelApi(
    kind="anthropic.messages",
    provider=semconv.PROVIDER_ANTHROPIC,
    operation=semconv.OP_CHAT,
    request=anthropic_messages.request,
    response=anthropic_messages.response,
    accumulator=anthropic_messages.MessageStreamAccumulator,
    classify=stainless_result("anthropic"),
    server=base_url_server,
)

# --- the SDK's own tracing: one model step per API call ------------------------------------------------


def _native_call_span(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``anthropic._base_client.start_api_call_span``: under spanfold's model span, a non-recording stand-in with our
    span context (so the SDK propagates ours), instead of a second model span."""
    try:
        call = current_call()
        if call is not None:
            options = args[2] if len(args) > 2 else kwargs.get("options")
            if getattr(options, "span_name", None) == NATIVE_CALL_SPAN:
                return otel_trace.NonRecordingSpan(call.span.get_span_context())
    except Exception as exc:
        counters.fault("anthropic.native_span", exc)
    return wrapped(*args, **kwargs)


def _tool_span_enricher(rt: Runtime) -> Wrapper:
    """``anthropic.lib._tracing._tools.end_tool_use_span(client, span, input, run)``: the tool runner's tool span gets
    the standard arguments and result attributes
    (:func:`~spanfold.instrumentation.toolkit.tool_spans.record_tool_call`)."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            if len(args) >= 4:
                span, arguments, run = args[1], args[2], args[3]
                if run.result is None:
                    tools.record_tool_call(span, rt, arguments=arguments)
                else:
                    result = anthropic_blocks.tool_result_response(run.content or m.get(run.result, "content"))
                    tools.record_tool_call(span, rt, arguments=arguments, result=result)
        except Exception as exc:
            counters.fault("anthropic.tool_span", exc)
        return wrapped(*args, **kwargs)

    return wrapper


def _stream_instancecheck(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """anthropic 0.x: the metaclass of ``Stream`` / ``AsyncStream`` answers ``isinstance()`` itself, True only for a
    ``MessageStream`` (a real stream passes by its type before it is asked), so the user's ``isinstance(stream,
    anthropic.Stream)`` would be False for our proxy of a stream: ask about the stream it proxies."""
    obj = args[0] if args else None
    if isinstance(obj, (SyncStreamProxy, AsyncStreamProxy)):
        return isinstance(obj.__wrapped__, instance)
    return wrapped(*args, **kwargs)


PATCHES: tuple[Patch, ...] = (
    *(patch for module in _MODULES for patch in model_methods(module, _CLASSES, ("create", "parse"), MESSAGES)),
    # stream(): the request is made when its manager is entered; the helper's close() closes our proxy
    *(
        patch
        for module in _MODULES
        for patch in deferred_requests(module, _CLASSES, "stream", MESSAGES, materialize=_KEPT)
    ),
    *adopting_managers("anthropic.lib.streaming._messages", ("MessageStreamManager", "AsyncMessageStreamManager")),
    *adopting_managers(
        "anthropic.lib.streaming._prompt_caching_beta_messages",
        ("PromptCachingBetaMessageStreamManager", "AsyncPromptCachingBetaMessageStreamManager"),
    ),
    plain("anthropic._streaming", "_SyncStreamMeta.__instancecheck__", _stream_instancecheck),  # 0.x only
    plain("anthropic._streaming", "_AsyncStreamMeta.__instancecheck__", _stream_instancecheck),
    # hooks into the SDK's own tracing (absent in SDKs without it)
    plain("anthropic._base_client", "start_api_call_span", _native_call_span),
    Patch("anthropic.lib._tracing._tools", "end_tool_use_span", lambda tracer, rt: _tool_span_enricher(rt)),
)


class AnthropicInstrumentor(TableInstrumentor, library="anthropic", supported=SUPPORTED, table=PATCHES):
    """``AnthropicInstrumentor().instrument(tracer_provider=..., runtime=...)``; ``uninstrument()`` restores it."""

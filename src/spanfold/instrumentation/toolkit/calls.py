"""The one wrapper around a model API method, for every provider: a span per call, streams proxied.

A provider describes an API with a :class:`ModelApi` (how to read the request, the response, a stream) and
gets its sync and async ``wrapt`` wrappers from :func:`sync_wrapper` / :func:`async_wrapper`. The user's call
always runs and always returns exactly what it would have returned without spanfold (the same object; a stream
comes back as a transparent proxy of the same stream); its exceptions propagate untouched.

A ``ModelApi`` also describes methods whose shape is not ``method(**request)``:

* ``bind``: the request from the positional and keyword arguments (botocore's ``_make_api_call(operation, params)``),
  or None for a call that is not a model call (an S3 ``PutObject`` through the same method): it runs untouched, with
  no span and no other work;
* ``Result.NESTED_STREAM`` / ``NESTED_ASYNC_STREAM`` with ``nested_stream``: a response dict holding the stream under
  that key (Bedrock's ``converse_stream`` returns ``{"stream": EventStream, ...}``): the very same dict comes back with
  the stream proxied in place.

The server address is read in its own fault boundary: a fault there costs the span its ``server.*`` attributes, not
the span. What the providers share beside the wrapper: the server readers (:func:`server_of`, the one reader of a URL;
:func:`base_url_server`), the result classifiers (:func:`stainless_result` for the Stainless-generated SDKs,
:func:`iterator_result` for the pydantic ones), and :func:`by_operation`, one method making every operation of a
client (botocore's).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import SpanKind, Tracer

from spanfold import counters, semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit import attributes
from spanfold.instrumentation.toolkit.invocation import Endpoint, Request, Response
from spanfold.instrumentation.toolkit.spans import ModelSpan
from spanfold.instrumentation.toolkit.streams import (
    Accumulator,
    AsyncStreamProxy,
    StreamState,
    SyncStreamProxy,
    Transparent,
)
from spanfold.stitching import conversations


class Result(Enum):
    """What an SDK method returned."""

    RESPONSE = "response"  # a complete response object
    STREAM = "stream"  # a sync stream of chunks
    ASYNC_STREAM = "async_stream"
    NESTED_STREAM = "nested_stream"  # a dict holding a sync stream under ``ModelApi.nested_stream``
    NESTED_ASYNC_STREAM = "nested_async_stream"
    RAW = "raw"  # a raw-response wrapper (``with_raw_response``); ``.parse()`` gives one of the above
    ASYNC_RAW = "async_raw"  # the same with an ``async def parse()`` (anthropic's ``AsyncAPIResponse``)
    OPAQUE = "opaque"  # something spanfold must not touch (``with_streaming_response`` of most SDKs)
    #: A ``with_streaming_response`` result whose body spanfold never reads: only what the user's own ``.parse()``
    #: gives is followed (a stream proxied); unparsed, its span ends when it is closed (openai: the Agents SDK streams
    #: through it).
    STREAMED_RAW = "streamed_raw"
    ASYNC_STREAMED_RAW = "async_streamed_raw"


@dataclass(frozen=True, slots=True)
class ModelApi:
    """How one provider API maps onto a GenAI span."""

    kind: str  # for fault counters, e.g. "openai.chat"
    provider: str
    operation: str
    #: The call's keyword arguments -> the typed request (the provider's shape map).
    request: Callable[[dict[str, Any]], Request]
    #: A complete response -> the typed response.
    response: Callable[[Any], Response]
    #: A new stream accumulator: fed every chunk, asked once for the typed response.
    accumulator: Callable[[], Accumulator]
    classify: Callable[[Any], Result]
    #: The SDK resource (``self`` of the wrapped method) -> where its client sends requests, and the provider it
    #: reaches where one SDK reaches several (google-genai: the Gemini Developer API or Vertex AI), which wins over
    #: ``provider``.
    server: Callable[[Any], Endpoint | None] = lambda instance: None
    #: (args, kwargs) -> the request as keyword arguments, or None for a call that is not a model call. Unset: the
    #: request is the keyword arguments themselves (the SDK methods take keywords only).
    bind: Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any] | None] | None = None
    #: The key of a response dict that holds the stream (``Result.NESTED_STREAM``).
    nested_stream: str | None = None
    #: ``(response dict, state, is_async) -> proxy`` of ``response[nested_stream]`` when the nested value is not a
    #: chunk stream (Bedrock ``invoke_model``'s readable body: the proxy feeds the state the bytes the user reads).
    #: Unset: the toolkit's chunk-stream proxies.
    nested_proxy: Callable[[dict[str, Any], StreamState, bool], Any] | None = None
    #: Stream usage asked for (:attr:`~spanfold.content.runtime.Runtime.stream_usage`): the call's keyword arguments ->
    #: the ones that ask a stream for its usage and the predicate of the chunk that only the asking brought (kept
    #: from the application), or None when the call is no stream, asks already, or must not be changed.
    ask_usage: Callable[[dict[str, Any]], tuple[dict[str, Any], Callable[[Any], bool]] | None] | None = None
    #: A router library's call (litellm): the client SDK calls it makes inside are the same model step, so while its
    #: wrapped call runs, other model wrappers make no span (one step, its tokens counted once; :func:`current_call`).
    outer: bool = False
    #: A call of a conversation (a chat: stitched into its zero-code run at the source). False for a call that sends
    #: no history (embeddings): made inside a span it is that run's step; un-parented it is a trace of its own (under
    #: the run's external parent, when there is one), never evidence of a conversation.
    conversation: bool = True


#: The model call whose wrapped method is running in this context, with its API. A model method called inside it is
#: the same API call and runs untouched: one of the same provider (openai 1.40's beta ``parse()`` calls ``create``), or
#: any while an ``outer`` API's call runs (a router reaching a client SDK) or a framework's own step (no API: see
#: :func:`claim`). The only outermost-call guard.
_CURRENT: ContextVar[tuple[ModelApi | None, ModelSpan] | None] = ContextVar("spanfold_model_call", default=None)


def current_call() -> ModelSpan | None:
    """The model call whose wrapped method is running in this context (anthropic's own call span defers to it)."""
    current = _CURRENT.get()
    return current[1] if current is not None else None


def _inside_call(api: ModelApi) -> bool:
    current = _CURRENT.get()
    if current is None:
        return False
    outer = current[0]
    return outer is None or outer.outer or outer.provider == api.provider


def claim(call: ModelSpan) -> Token[tuple[ModelApi | None, ModelSpan] | None]:
    """A framework's own model step is running (smolagents' ``generate``, recorded from the framework's objects): the
    client SDK calls made inside it are that step, and spanfold's model wrappers make no span for them (other
    producers' spans nest under it). Hand the token to :func:`release` when the step's call returns (for a generator,
    around each step of it)."""
    return _CURRENT.set((None, call))


def release(token: Token[tuple[ModelApi | None, ModelSpan] | None]) -> None:
    with contextlib.suppress(ValueError):  # released in another context than it was claimed in: that value dies with it
        _CURRENT.reset(token)


#: Response types a wrapper remembers (:class:`_Classifier`).
RESPONSE_TYPES_LIMIT = 64


class _Classifier:
    """``api.classify``, remembering the types it found to be complete responses (that answer depends on the type
    alone; never ``dict``, whose kind depends on its keys): the next result of one of them skips the SDK's isinstance
    chain. ``bench/tricks.py``: 0.05 against 1.34 µs for an openai ``ChatCompletion``. One per wrapper."""

    __slots__ = ("_classify", "_responses")

    def __init__(self, classify: Callable[[Any], Result]) -> None:
        self._classify = classify
        self._responses: set[type] = set()

    def __call__(self, result: Any) -> Result:
        kind = type(result)
        if kind in self._responses:
            return Result.RESPONSE
        answer = self._classify(result)
        if answer is Result.RESPONSE and kind is not dict and len(self._responses) < RESPONSE_TYPES_LIMIT:
            self._responses.add(kind)
        return answer


Wrapper = Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]


#: The port a URL without one is served on.
DEFAULT_PORTS: Final = {"https": 443, "http": 80}


def _endpoint(url: Any) -> Endpoint | None:
    if isinstance(url, str):
        parts = urlsplit(url)
        host, port, scheme = parts.hostname, parts.port, parts.scheme
    else:  # an httpx.URL
        host, port, scheme = url.host, url.port, url.scheme
    if not host:
        return None
    return Endpoint(host, port or DEFAULT_PORTS.get(scheme))


def server_of(url: Any, provider: str | None = None) -> Endpoint | None:
    """Where the URL a client sends to points (an ``httpx.URL`` or a string): its host, and its port, else its
    scheme's default; None for a missing or empty URL. With ``provider`` (an SDK that reaches several: google-genai's
    Gemini Developer API or Vertex AI), the endpoint always names it, with or without a server. The one server reader
    of every provider."""
    endpoint = _endpoint(url) if (isinstance(url, str) and url) or hasattr(url, "host") else None
    if provider is None:
        return endpoint
    return Endpoint(provider=provider) if endpoint is None else Endpoint(endpoint.address, endpoint.port, provider)


def base_url_server(instance: Any) -> Endpoint | None:
    """The server of an SDK resource whose client has a ``base_url`` (the Stainless-generated SDKs: openai,
    anthropic, groq). Read from the client's ``_base_url`` where the SDK keeps it (its setter writes it there): openai
    3's ``base_url`` property imports a module on every read, a third of this call's cost."""
    client = instance._client
    url = getattr(client, "_base_url", None)
    return server_of(client.base_url if url is None else url)


def _server(api: ModelApi, instance: Any) -> Mapping[str, Any]:
    try:
        return attributes.endpoint(api.server(instance))
    except Exception as exc:
        counters.fault(f"{api.kind}.server", exc)
        return {}


def _begin(
    api: ModelApi, tracer: Tracer, rt: Runtime, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> ModelSpan | None:
    """The started span of a model call; None for a call that is not one, inside an outer step, or when reading the
    request failed."""
    if _inside_call(api):
        return None
    try:
        request = kwargs if api.bind is None else api.bind(args, kwargs)
        if request is None:
            return None
        invocation = api.request(request)
        name, attrs = attributes.model_call(invocation, api.provider, api.operation, rt)
    except Exception as exc:
        counters.fault(f"{api.kind}.request", exc)
        return None
    attrs.update(_server(api, instance))
    source = conversations.active()
    if source is not None and not api.conversation:
        turn, context = None, None if otel_trace.get_current_span().get_span_context().is_valid else source.parent
    else:
        turn, context = _place(api, source, request, invocation, attrs, rt) if source is not None else (None, None)
    try:
        call = ModelSpan(tracer, name, attrs, kind=SpanKind.CLIENT, rt=rt, context=context, provider=api.provider)
    except Exception as exc:
        counters.fault(f"{api.kind}.span", exc)
        return None
    if turn is not None:
        try:
            turn.started(call.span)
            call.turn = turn
        except Exception as exc:
            counters.fault(f"{api.kind}.stitch", exc)
    return call


def _place(
    api: ModelApi,
    source: conversations.Conversations,
    request: dict[str, Any],
    invocation: Request,
    attrs: dict[str, Any],
    rt: Runtime,
) -> tuple[conversations.Turn | None, otel_context.Context | None]:
    """Where an un-parented call's span starts (its zero-code conversation, or the run's external parent), and its
    turn in that conversation; nothing for a call made inside a span (its trace is decided)."""
    if otel_trace.get_current_span().get_span_context().is_valid:
        return None, None
    if not source.stitch:
        return None, source.parent
    try:
        full = (
            attrs if conversations.records_all(rt) else attributes.request(invocation, api.provider, conversations.FULL)
        )
        turn = source.turn(full, conversations.request_list(request))
    except Exception as exc:
        counters.fault(f"{api.kind}.stitch", exc)
        return None, source.parent
    attrs[semconv.SPANFOLD_STITCHED] = True
    if source.parent is not None and turn.conversation is not None:  # runs share the caller's trace id: name the run
        attrs[semconv.SPANFOLD_RUN_ID] = turn.conversation.run_id
    return turn, turn.context


def _nested(api: ModelApi, result: Any, proxy: type[SyncStreamProxy | AsyncStreamProxy], state: StreamState) -> Any:
    """The response dict itself, its stream replaced in place by a proxy of the very same stream."""
    key = api.nested_stream
    if key is None or not isinstance(result, dict) or key not in result:
        state.finish()
        return result
    if api.nested_proxy is not None:
        result[key] = api.nested_proxy(result, state, proxy is AsyncStreamProxy)
    else:
        result[key] = proxy(result[key], state)
    return result


def _complete(
    api: ModelApi, call: ModelSpan, result: Any, classify: _Classifier, hide: Callable[[Any], bool] | None = None
) -> Any:
    """Finish the span from ``result`` (or hand it to a stream proxy, which keeps the chunks ``hide`` says from the
    user); return what the user gets."""
    try:
        kind = classify(result)
        if kind is Result.RESPONSE:
            call.finish_with(api.response(result))
            return result
        if kind is Result.STREAM:
            return SyncStreamProxy(result, StreamState(call, api.accumulator(), api.kind, hide))
        if kind is Result.ASYNC_STREAM:
            return AsyncStreamProxy(result, StreamState(call, api.accumulator(), api.kind, hide))
        if kind is Result.NESTED_STREAM:
            state = StreamState(call, api.accumulator(), api.kind)
            return _nested(api, result, SyncStreamProxy, state)
        if kind is Result.NESTED_ASYNC_STREAM:
            state = StreamState(call, api.accumulator(), api.kind)
            return _nested(api, result, AsyncStreamProxy, state)
        if kind is Result.RAW:
            return RawResponseProxy(result, api, call, classify)
        if kind is Result.ASYNC_RAW:
            return AsyncRawResponseProxy(result, api, call, classify)
        if kind is Result.STREAMED_RAW:
            return StreamedRawProxy(result, api, call, classify)
        if kind is Result.ASYNC_STREAMED_RAW:
            return AsyncStreamedRawProxy(result, api, call, classify)
        call.finish()
        return result
    except Exception as exc:
        counters.fault(f"{api.kind}.response", exc)
        call.finish()
        return result


class _RawProxy(Transparent):
    """A ``with_raw_response`` result whose span finishes from what ``.parse()`` gives (a stream is proxied), or
    ends when this is collected unparsed. Subclasses say when and how the body is parsed."""

    def __init__(self, wrapped: Any, api: ModelApi, call: ModelSpan, classify: _Classifier) -> None:
        super().__init__(wrapped)
        self._self_api = api
        self._self_call = call
        self._self_classify = classify
        self._self_parsed: Any = None

    def _self_parsed_as(self, result: Any) -> Any:
        """What the user's ``.parse()`` (no arguments) returns: the first parse finishes the span."""
        if self._self_parsed is None:
            self._self_parsed = _complete(self._self_api, self._self_call, result, self._self_classify)
        return self._self_parsed

    def _self_end_unparsed(self) -> None:
        call = getattr(self, "_self_call", None)
        if call is not None and not call.ended and self._self_parsed is None:
            call.finish()

    def __del__(self) -> None:
        self._self_end_unparsed()


class RawResponseProxy(_RawProxy):
    """A non-streaming body is parsed at once (the SDK caches the parse, so the user's own ``.parse()`` returns the
    very same object); a streaming one when the user parses it."""

    def __init__(self, wrapped: Any, api: ModelApi, call: ModelSpan, classify: _Classifier) -> None:
        super().__init__(wrapped, api, call, classify)
        if not _streams(wrapped):
            self._self_parsed_as(wrapped.parse())

    def parse(self, *args: Any, **kwargs: Any) -> Any:
        result = self.__wrapped__.parse(*args, **kwargs)
        return result if args or kwargs else self._self_parsed_as(result)


def _streams(raw: Any) -> bool:
    """Whether a raw response holds a stream (openai: ``_stream``; anthropic: ``_is_sse_stream``)."""
    return bool(getattr(raw, "_stream", False) or getattr(raw, "_is_sse_stream", False))


class AsyncRawResponseProxy(_RawProxy):
    """For raw responses whose ``parse()`` is a coroutine: the async wrapper awaits :meth:`_self_prime` before
    returning it, which parses a non-streaming body at once (the SDK caches the parse)."""

    async def _self_prime(self) -> None:
        if _streams(self.__wrapped__):
            return
        try:
            parsed = await self.__wrapped__.parse()
        except Exception as exc:  # the user's own .parse() raises it again
            counters.fault(f"{self._self_api.kind}.raw_parse", exc)
            self._self_call.finish()
            return
        self._self_parsed_as(parsed)

    async def parse(self, *args: Any, **kwargs: Any) -> Any:
        result = await self.__wrapped__.parse(*args, **kwargs)
        return result if args or kwargs else self._self_parsed_as(result)


class StreamedRawProxy(RawResponseProxy):
    """A ``with_streaming_response`` result (:attr:`Result.STREAMED_RAW`): never parsed by spanfold."""

    def __init__(self, wrapped: Any, api: ModelApi, call: ModelSpan, classify: _Classifier) -> None:
        _RawProxy.__init__(self, wrapped, api, call, classify)

    def close(self) -> Any:
        try:
            return self.__wrapped__.close()
        finally:
            self._self_end_unparsed()


class AsyncStreamedRawProxy(AsyncRawResponseProxy):
    """The async ``with_streaming_response`` result (:attr:`Result.ASYNC_STREAMED_RAW`): never parsed by spanfold."""

    async def _self_prime(self) -> None:
        return None

    async def close(self) -> Any:
        try:
            return await self.__wrapped__.close()
        finally:
            self._self_end_unparsed()


def _asking_usage(
    api: ModelApi, rt: Runtime, kwargs: dict[str, Any]
) -> tuple[dict[str, Any], Callable[[Any], bool] | None]:
    """The keyword arguments the call is made with (asking a stream for its usage, when the runtime says so and the
    API can), and the predicate of the chunks kept from the user (None: none)."""
    if not rt.stream_usage or api.ask_usage is None:
        return kwargs, None
    try:
        asked = api.ask_usage(kwargs)
    except Exception as exc:
        counters.fault(f"{api.kind}.ask_usage", exc)
        return kwargs, None
    return (kwargs, None) if asked is None else asked


def sync_wrapper(api: ModelApi, tracer: Tracer, rt: Runtime) -> Wrapper:
    classify = _Classifier(api.classify)

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call = _begin(api, tracer, rt, instance, args, kwargs)
        if call is None:
            return wrapped(*args, **kwargs)
        kwargs, hide = _asking_usage(api, rt, kwargs)
        call.activate()
        token = _CURRENT.set((api, call))
        try:
            result = wrapped(*args, **kwargs)
        except BaseException as exc:
            call.deactivate()
            call.fail(exc)
            raise
        finally:
            _CURRENT.reset(token)
        call.deactivate()
        return _complete(api, call, result, classify, hide)

    return wrapper


def async_wrapper(api: ModelApi, tracer: Tracer, rt: Runtime) -> Wrapper:
    classify = _Classifier(api.classify)

    async def wrapper(
        wrapped: Callable[..., Awaitable[Any]], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        call = _begin(api, tracer, rt, instance, args, kwargs)
        if call is None:
            return await wrapped(*args, **kwargs)
        kwargs, hide = _asking_usage(api, rt, kwargs)
        call.activate()
        token = _CURRENT.set((api, call))
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            call.deactivate()
            call.fail(exc)
            raise
        finally:
            _CURRENT.reset(token)
        call.deactivate()
        out = _complete(api, call, result, classify, hide)
        if isinstance(out, AsyncRawResponseProxy):
            await out._self_prime()
        return out

    return wrapper


def by_operation(
    apis: Mapping[str, ModelApi], name_of: Callable[[tuple[Any, ...], dict[str, Any]], Any]
) -> Callable[[Tracer, Runtime, bool], Wrapper]:
    """The wrapper factory ``(tracer, rt, is_async)`` of one method that makes every operation of a client (botocore's
    ``_make_api_call(operation_name, api_params)``): a call of an operation ``name_of(args, kwargs)`` names in
    ``apis`` goes through that API's model wrapper (async ones for a coroutine method); any other runs untouched, with
    no span and no other work."""

    def factory(tracer: Tracer, rt: Runtime, is_async: bool) -> Wrapper:
        make = async_wrapper if is_async else sync_wrapper
        wrappers = {operation: make(api, tracer, rt) for operation, api in apis.items()}

        def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            try:
                traced = wrappers.get(name_of(args, kwargs))
            except Exception as exc:
                counters.fault("calls.operation", exc)
                traced = None
            if traced is None:
                return wrapped(*args, **kwargs)
            return traced(wrapped, instance, args, kwargs)

        return wrapper

    return factory


#: The request header a Stainless SDK's raw-response wrappers send: ``stream`` for ``with_streaming_response``.
RAW_RESPONSE_HEADER: Final = "X-Stainless-Raw-Response"


def stainless_result(package: str, *, streamed_raw: bool = False) -> Callable[[Any], Result]:
    """``classify`` for a Stainless-generated SDK (openai, anthropic, groq), from the package's own types (read from
    the imported SDK, never importing it): its streams; its raw responses, ``with_raw_response``'s (the legacy type
    where the SDK has one: openai, anthropic 0.x, whose ``parse()`` is sync for the async client too) parsed by
    spanfold; ``with_streaming_response``'s (marked by the request header ``X-Stainless-Raw-Response: stream``) left
    to the user, or with ``streamed_raw`` followed without being read (:attr:`Result.STREAMED_RAW`: openai, which the
    Agents SDK streams through); its response models."""
    legacy_module, response_module = f"{package}._legacy_response", f"{package}._response"

    def classify(result: Any) -> Result:
        sdk = sys.modules[package]
        if isinstance(result, sdk.Stream):
            return Result.STREAM
        if isinstance(result, sdk.AsyncStream):
            return Result.ASYNC_STREAM
        legacy = sys.modules.get(legacy_module)  # imported by the SDK where it has one
        if legacy is not None and isinstance(result, legacy.LegacyAPIResponse):
            return Result.RAW
        raw = importlib.import_module(response_module)
        if isinstance(result, (raw.APIResponse, raw.AsyncAPIResponse)):
            is_async = isinstance(result, raw.AsyncAPIResponse)
            if _streamed(result):
                if not streamed_raw:
                    return Result.OPAQUE
                return Result.ASYNC_STREAMED_RAW if is_async else Result.STREAMED_RAW
            return Result.ASYNC_RAW if is_async else Result.RAW
        if isinstance(result, sdk.BaseModel):
            return Result.RESPONSE
        return Result.OPAQUE

    return classify


def _streamed(raw: Any) -> bool:
    """Whether a Stainless raw response is ``with_streaming_response``'s (its request marked so)."""
    headers = getattr(getattr(raw, "_options", None), "headers", None)
    return isinstance(headers, Mapping) and headers.get(RAW_RESPONSE_HEADER) == "stream"


def iterator_result(result: Any) -> Result:
    """``classify`` for SDKs that answer with a pydantic model, or stream as a (sync or async) generator of them
    (ollama, cohere)."""
    from pydantic import BaseModel

    if isinstance(result, BaseModel):
        return Result.RESPONSE
    if isinstance(result, Iterator):
        return Result.STREAM
    if isinstance(result, AsyncIterator):
        return Result.ASYNC_STREAM
    return Result.OPAQUE

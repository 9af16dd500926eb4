"""One sync and one async stream proxy with chunk hooks, shared by every provider.

The proxies yield exactly the SDK's own chunk objects, forward every other attribute to the SDK stream
(``wrapt.ObjectProxy``: ``isinstance`` and ``.response`` keep working), feed each chunk to a provider's
:class:`Accumulator`, and end the span exactly once: at the end of the stream, on an error (status set before
the end), on ``close()`` / ``with`` exit, on an early ``break`` followed by either, or when the stream is
garbage-collected unfinished.
"""

from __future__ import annotations

import copy
import inspect
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, SupportsIndex, cast

import wrapt

from spanfold import counters
from spanfold.instrumentation.toolkit.invocation import Response
from spanfold.instrumentation.toolkit.spans import ModelSpan, RunSpan

if TYPE_CHECKING:
    ObjectProxy = wrapt.ObjectProxy[Any]
else:  # wrapt 1 (what opentelemetry-instrumentation before 0.62 allows) has no subscriptable proxy class
    ObjectProxy = wrapt.ObjectProxy


class Accumulator(Protocol):
    """A provider's stream accumulator: fed every chunk, asked once for the typed response."""

    def add(self, chunk: Any) -> None: ...

    def result(self) -> Response: ...


class SpanAccumulator(Protocol):
    """A stream accumulator of a span that is not a model call (a framework's run streamed as items): asked once for
    the span's result attributes."""

    def add(self, chunk: Any) -> None: ...

    def attributes(self) -> Mapping[str, Any]: ...


class StreamState:
    """The span of one stream, its accumulator, and the exactly-once finish.

    Each chunk is fed to the accumulator as it is handed to the user, before the user's code runs: an accumulator
    takes what the span needs (references to the chunk's strings and numbers, never the chunk to read later), so an
    application that changes a chunk in place afterwards (LlamaIndex appends to the first tool-call delta) does not
    change the span."""

    __slots__ = ("accumulator", "add", "failed", "hide", "kind", "span", "timed")

    def __init__(
        self,
        span: ModelSpan | RunSpan,
        accumulator: Accumulator | SpanAccumulator,
        kind: str,
        hide: Callable[[Any], bool] | None = None,
    ) -> None:
        self.span = span
        self.accumulator = accumulator
        self.add = accumulator.add
        self.kind = kind
        self.failed = False  # the accumulator raised on a chunk: it is fed nothing more
        #: A chunk spanfold asked for and the application did not (its usage: :attr:`Runtime.stream_usage`): True
        #: for one the accumulator takes and the application never sees. None: every chunk goes through.
        self.hide = hide
        #: A model span whose metrics wait for the first chunk's time (metrics on), until it comes.
        self.timed = span if isinstance(span, ModelSpan) and span.measured is not None else None

    def push(self, chunk: Any) -> None:
        """A chunk the user is about to get (one fault per stream, not per chunk)."""
        if self.timed is not None:
            self.first_chunk()
        if self.failed:
            return
        try:
            self.add(chunk)
        except Exception as exc:
            self.fault(exc)

    def first_chunk(self) -> None:
        """The first chunk came (metrics on): its time, for the call's time to first chunk."""
        timed, self.timed = self.timed, None
        if timed is not None:
            timed.first_chunk_ns = time.time_ns()

    def fault(self, exc: Exception) -> None:
        self.failed = True
        counters.fault(f"{self.kind}.stream_chunk", exc)

    def finish(self, error: BaseException | None = None) -> None:
        if self.span.ended:
            return
        attrs: Mapping[str, Any]
        try:
            attrs = self._attributes()
        except Exception as exc:
            counters.fault(f"{self.kind}.stream_result", exc)
            attrs = {}
        if error is not None:  # task cancellation and KeyboardInterrupt cut the stream short too
            self.span.fail(error, attrs)
        else:
            self.span.finish(attrs)

    def _attributes(self) -> Mapping[str, Any]:
        """A model call's result from its accumulator's typed response, another span's from its accumulator's
        attributes."""
        accumulator = self.accumulator
        if hasattr(accumulator, "result") and isinstance(self.span, ModelSpan):
            return self.span.result(cast("Accumulator", accumulator).result())
        return cast("SpanAccumulator", accumulator).attributes()


def _hidden(source: Iterator[Any], state: StreamState) -> Iterator[Any]:
    """``source``'s chunks but those ``state.hide`` keeps from the application, which the state takes all the same."""
    hide = cast("Callable[[Any], bool]", state.hide)
    for chunk in source:
        if _hides(hide, chunk, state):
            state.push(chunk)
            continue
        yield chunk


async def _ahidden(source: AsyncIterator[Any], state: StreamState) -> AsyncIterator[Any]:
    """:func:`_hidden` of an async stream."""
    hide = cast("Callable[[Any], bool]", state.hide)
    async for chunk in source:
        if _hides(hide, chunk, state):
            state.push(chunk)
            continue
        yield chunk


def _hides(hide: Callable[[Any], bool], chunk: Any, state: StreamState) -> bool:
    try:
        return hide(chunk)
    except Exception as exc:
        counters.fault(f"{state.kind}.stream_hide", exc)
        return False


class _IfWrapped:
    """A proxy method that exists only when the wrapped object has the method of that name: ``getattr(proxy, "close",
    None)`` gives None exactly when the SDK's stream has no ``close`` (litellm's async stream), as without spanfold."""

    def __init__(self, method: Any) -> None:
        self.method = method
        self.name = method.__name__

    def __get__(self, proxy: Any, owner: Any = None) -> Any:
        if proxy is None:
            return self
        if not hasattr(proxy.__wrapped__, self.name):
            raise AttributeError(self.name)
        return self.method.__get__(proxy, owner)


class Transparent(ObjectProxy):
    """What copying and pickling a proxy does: what it does to the SDK object.

    ``copy.copy`` gives a proxy of the SDK object's copy (sharing its span and accumulator, as the copy shares the
    SDK object's iterator); ``copy.deepcopy`` and ``pickle`` act on the SDK object itself, so they succeed, or raise
    the very error, exactly as without spanfold (wrapt's proxies raise ``NotImplementedError`` for all three)."""

    def __copy__(self) -> Any:
        return self._self_copy(copy.copy(self.__wrapped__))

    def _self_copy(self, wrapped_copy: Any) -> Any:
        return wrapped_copy

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return copy.deepcopy(self.__wrapped__, memo)

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        return self.__wrapped__.__reduce_ex__(protocol)

    def __reduce__(self) -> Any:
        return self.__wrapped__.__reduce__()


class SyncStreamProxy(Transparent):
    """A sync SDK stream that reports its chunks and its end. Iterating it iterates what the SDK stream's own
    ``__iter__`` gives (a class-level patch of ``Stream.__iter__`` still runs).

    ``iter(proxy)`` is a generator over that source, as the SDK's own ``Stream.__iter__`` is: a ``for`` loop resumes
    it per chunk, cheaper than a call of :meth:`__next__` through the proxy (kept for ``next(stream)``). Leaving the
    loop early (``break``) does not end the span: ``close()``, the ``with`` exit or the proxy's collection does, as
    before; iterating again continues where the loop stopped."""

    def __init__(self, wrapped: Any, state: StreamState) -> None:
        super().__init__(wrapped)
        self._self_state = state
        self._self_source: Any = None if state.hide is None else _hidden(iter(wrapped), state)

    def _self_copy(self, wrapped_copy: Any) -> Any:
        return SyncStreamProxy(wrapped_copy, self._self_state)

    def __iter__(self) -> Iterator[Any]:
        if self._self_source is None:
            self._self_source = iter(self.__wrapped__)
        return self._self_chunks(self._self_source)

    def _self_chunks(self, source: Iterator[Any]) -> Iterator[Any]:
        """The source's chunks, each pushed to the state (inlined: this runs once per chunk). The generator holds the
        proxy: ``for chunk in client.create(..., stream=True)`` keeps no other reference to it, and a collected proxy
        ends its span."""
        state = self._self_state
        add = state.add
        next_chunk = source.__next__
        while True:
            try:
                chunk = next_chunk()
            except StopIteration:
                state.finish()
                return
            except BaseException as exc:
                state.finish(exc)
                raise
            if state.timed is not None:
                state.first_chunk()
            if not state.failed:
                try:
                    add(chunk)
                except Exception as exc:
                    state.fault(exc)
            yield chunk

    def __next__(self) -> Any:
        source = self._self_source
        try:
            chunk = (self.__wrapped__ if source is None else source).__next__()
        except StopIteration:
            self._self_state.finish()
            raise
        except BaseException as exc:
            self._self_state.finish(exc)
            raise
        self._self_state.push(chunk)
        return chunk

    def __enter__(self) -> SyncStreamProxy:
        self.__wrapped__.__enter__()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Any:
        try:
            return self.__wrapped__.__exit__(exc_type, exc, tb)
        finally:
            self._self_state.finish()

    @_IfWrapped
    def close(self) -> Any:
        try:
            return self.__wrapped__.close()
        finally:
            self._self_state.finish()

    def __del__(self) -> None:
        state = getattr(self, "_self_state", None)
        if state is not None and not state.span.ended:
            state.finish()


class AsyncStreamProxy(Transparent):
    """An async SDK stream that reports its chunks and its end (iterating what the SDK stream's ``__aiter__`` gives)."""

    def __init__(self, wrapped: Any, state: StreamState) -> None:
        super().__init__(wrapped)
        self._self_state = state
        self._self_source: Any = None if state.hide is None else _ahidden(wrapped.__aiter__(), state)

    def _self_copy(self, wrapped_copy: Any) -> Any:
        return AsyncStreamProxy(wrapped_copy, self._self_state)

    def __aiter__(self) -> AsyncStreamProxy:
        if self._self_source is None:
            self._self_source = self.__wrapped__.__aiter__()
        return self

    async def __anext__(self) -> Any:
        source = self._self_source
        try:
            chunk = await (self.__wrapped__ if source is None else source).__anext__()
        except StopAsyncIteration:
            self._self_state.finish()
            raise
        except BaseException as exc:
            self._self_state.finish(exc)
            raise
        self._self_state.push(chunk)
        return chunk

    async def __aenter__(self) -> AsyncStreamProxy:
        await self.__wrapped__.__aenter__()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> Any:
        try:
            return await self.__wrapped__.__aexit__(exc_type, exc, tb)
        finally:
            self._self_state.finish()

    @_IfWrapped
    async def close(self) -> Any:
        try:
            result = self.__wrapped__.close()
            if inspect.isawaitable(result):
                result = await result
            return result
        finally:
            self._self_state.finish()

    def __del__(self) -> None:
        state = getattr(self, "_self_state", None)
        if state is not None and not state.span.ended:
            state.finish()

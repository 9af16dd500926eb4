"""One sync and one async stream proxy with chunk hooks, shared by every provider.

The proxies yield exactly the SDK's own chunk objects, forward every other attribute to the SDK stream
(``wrapt.ObjectProxy``: ``isinstance`` and ``.response`` keep working), feed each chunk to a provider's
:class:`Accumulator`, and end the span exactly once: at the end of the stream, on an error (status set before
the end), on ``close()`` / ``with`` exit, on an early ``break`` followed by either, or when the stream is
garbage-collected unfinished.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, Protocol

import wrapt

from spanfold import counters
from spanfold.instrumentation.spans import ModelSpan


class Accumulator(Protocol):
    """A provider's stream accumulator: fed every chunk, asked once for the span's result attributes."""

    def add(self, chunk: Any) -> None: ...

    def attributes(self) -> Mapping[str, Any]: ...


#: Chunks reach the accumulator in batches of this many, and at the end of the stream. Fed one at a time, between
#: the SDK's own work on each chunk, the same code runs several times slower (cold caches); a batch also bounds what
#: is held. The SDK does not reuse its chunk objects, and its stream helpers copy what they accumulate.
CHUNK_BATCH = 32


class StreamState:
    """The span of one stream, its accumulator, the chunks not yet fed to it, and the exactly-once finish."""

    __slots__ = ("accumulator", "failed", "kind", "pending", "span")

    def __init__(self, span: ModelSpan, accumulator: Accumulator, kind: str) -> None:
        self.span = span
        self.accumulator = accumulator
        self.kind = kind
        self.pending: list[Any] = []
        self.failed = False  # the accumulator raised on a chunk: it is fed nothing more

    def push(self, chunk: Any) -> None:
        """A chunk the user got: held, and fed with the others when the batch is full."""
        pending = self.pending
        pending.append(chunk)
        if len(pending) >= CHUNK_BATCH:
            self.feed()

    def feed(self) -> None:
        """Feed the held chunks to the accumulator (one fault per stream, not per chunk)."""
        if not self.failed:
            add = self.accumulator.add
            try:
                for chunk in self.pending:
                    add(chunk)
            except Exception as exc:
                self.failed = True
                counters.fault(f"{self.kind}.stream_chunk", exc)
        self.pending.clear()

    def finish(self, error: BaseException | None = None) -> None:
        if self.span.ended:
            return
        self.feed()
        try:
            attrs = self.accumulator.attributes()
        except Exception as exc:
            counters.fault(f"{self.kind}.stream_result", exc)
            attrs = {}
        if error is not None:  # task cancellation and KeyboardInterrupt cut the stream short too
            self.span.fail(error, attrs)
        else:
            self.span.finish(attrs)


def _iterator(stream: Any) -> Any:
    """What the proxy pulls chunks from: the stream itself when it is an iterator (the SDK streams), else the iterator
    it gives (botocore's ``EventStream`` is iterable only: its ``__iter__`` is a generator, which runs nothing until
    the first chunk is asked for)."""
    return stream if hasattr(type(stream), "__next__") else iter(stream)


def _async_iterator(stream: Any) -> Any:
    """The same for async streams: aiobotocore's ``AioEventStream.__anext__`` is an async generator function (its
    ``__aiter__`` returns the generator), not an awaitable ``__anext__``."""
    anext = getattr(type(stream), "__anext__", None)
    if anext is not None and not inspect.isasyncgenfunction(anext):
        return stream
    return stream.__aiter__()


class SyncStreamProxy(wrapt.ObjectProxy[Any]):
    """A sync SDK stream that reports its chunks and its end."""

    def __init__(self, wrapped: Any, state: StreamState) -> None:
        super().__init__(wrapped)
        self._self_state = state
        self._self_chunks = _iterator(wrapped)

    def __iter__(self) -> SyncStreamProxy:
        return self

    def __next__(self) -> Any:
        try:
            chunk = self._self_chunks.__next__()
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

    def close(self) -> Any:
        try:
            return self.__wrapped__.close()
        finally:
            self._self_state.finish()

    def __del__(self) -> None:
        state = getattr(self, "_self_state", None)
        if state is not None and not state.span.ended:
            state.finish()


class AsyncStreamProxy(wrapt.ObjectProxy[Any]):
    """An async SDK stream that reports its chunks and its end."""

    def __init__(self, wrapped: Any, state: StreamState) -> None:
        super().__init__(wrapped)
        self._self_state = state
        self._self_chunks = _async_iterator(wrapped)

    def __aiter__(self) -> AsyncStreamProxy:
        return self

    async def __anext__(self) -> Any:
        try:
            chunk = await self._self_chunks.__anext__()
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

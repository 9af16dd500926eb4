"""A framework's own (async) generator, watched: each step run in a context of spanfold's, each item it yields seen,
its end (exhausted, failed, closed, or collected unfinished) seen once. The application gets the same items and the
same exceptions; a fault in what watches is counted and never reaches it.

For the generators a framework runs itself (a run's steps, the tool calls a step yields, a session's messages); a
model call's stream is :mod:`.streams`' (it accumulates a response).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from opentelemetry import context as otel_context

from spanfold import counters
from spanfold.instrumentation.toolkit.streams import Transparent

#: The context each step runs in: one context, or a function of the current one (None: the current one, as it is).
Within = otel_context.Context | Callable[[otel_context.Context], otel_context.Context] | None
#: What is told of each item yielded.
OnItem = Callable[[Any], None]
#: What is told when the generator ends: None when it was exhausted or closed, else what it raised.
OnEnd = Callable[[BaseException | None], None]


class _Watch:
    __slots__ = ("ended", "kind", "on_end", "on_item", "within")

    def __init__(self, kind: str, within: Within, on_item: OnItem | None, on_end: OnEnd | None) -> None:
        self.kind = kind
        self.within = within
        self.on_item = on_item
        self.on_end = on_end
        self.ended = False

    def attach(self) -> object | None:
        within = self.within
        if within is None:
            return None
        try:
            context = within(otel_context.get_current()) if callable(within) else within
        except Exception as exc:
            counters.fault(f"{self.kind}.context", exc)
            return None
        return otel_context.attach(context)

    def item(self, item: Any) -> None:
        if self.on_item is not None:
            try:
                self.on_item(item)
            except Exception as exc:
                counters.fault(f"{self.kind}.item", exc)

    def end(self, error: BaseException | None = None) -> None:
        if self.ended:
            return
        self.ended = True
        if self.on_end is not None:
            try:
                self.on_end(error)
            except Exception as exc:
                counters.fault(f"{self.kind}.end", exc)


def _detach(token: object | None) -> None:
    if token is not None:
        otel_context.detach(token)  # type: ignore[arg-type]


class Watched(Transparent):
    """A generator (or any iterator) watched as the module doc says; ``kind`` names its fault counters."""

    def __init__(
        self,
        wrapped: Any,
        kind: str,
        within: Within = None,
        on_item: OnItem | None = None,
        on_end: OnEnd | None = None,
    ) -> None:
        super().__init__(wrapped)
        self._self_watch = _Watch(kind, within, on_item, on_end)

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        watch = self._self_watch
        token = watch.attach()
        try:
            item = self.__wrapped__.__next__()
        except StopIteration:
            watch.end()
            raise
        except BaseException as exc:
            watch.end(exc)
            raise
        finally:
            _detach(token)
        watch.item(item)
        return item

    def close(self) -> Any:
        try:
            return self.__wrapped__.close()
        finally:
            self._self_watch.end()

    def __del__(self) -> None:
        watch = getattr(self, "_self_watch", None)
        if watch is not None:
            watch.end()


class AsyncWatched(Transparent):
    """:class:`Watched` for an async generator (or any async iterator)."""

    def __init__(
        self,
        wrapped: Any,
        kind: str,
        within: Within = None,
        on_item: OnItem | None = None,
        on_end: OnEnd | None = None,
    ) -> None:
        super().__init__(wrapped)
        self._self_watch = _Watch(kind, within, on_item, on_end)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        watch = self._self_watch
        token = watch.attach()
        try:
            item = await self.__wrapped__.__anext__()
        except StopAsyncIteration:
            watch.end()
            raise
        except BaseException as exc:
            watch.end(exc)
            raise
        finally:
            _detach(token)
        watch.item(item)
        return item

    async def aclose(self) -> Any:
        try:
            result = self.__wrapped__.aclose()
            return await result if inspect.isawaitable(result) else result
        finally:
            self._self_watch.end()

    def __del__(self) -> None:
        watch = getattr(self, "_self_watch", None)
        if watch is not None:
            watch.end()


def _done(done: Callable[[Any], None] | None, result: Any, kind: str) -> None:
    if done is not None:
        try:
            done(result)
        except Exception as exc:
            counters.fault(f"{kind}.done", exc)


async def _awaited_in(
    coroutine: Any, context: otel_context.Context, done: Callable[[Any], None] | None, kind: str
) -> Any:
    token = otel_context.attach(context)
    result = None
    try:
        result = await coroutine
        return result
    finally:
        otel_context.detach(token)
        _done(done, result, kind)


def called_within(
    context: otel_context.Context, call: Callable[[], Any], kind: str, done: Callable[[Any], None] | None = None
) -> Any:
    """``call()`` with ``context`` current, and what it returns run there too: a coroutine awaited in it, a
    (async) generator's steps run in it. ``done(result)`` is told when a plain or awaited result is back (None when
    the call raised). For a framework's code that must see spanfold's state of it (a run that opens no span, a
    ReAct step) whether its method is sync or async."""
    token = otel_context.attach(context)
    try:
        result = call()
    except BaseException:
        otel_context.detach(token)
        _done(done, None, kind)
        raise
    otel_context.detach(token)
    if inspect.iscoroutine(result):
        return _awaited_in(result, context, done, kind)
    if inspect.isasyncgen(result):
        return AsyncWatched(result, kind, context)
    if inspect.isgenerator(result):
        return Watched(result, kind, context)
    _done(done, result, kind)
    return result

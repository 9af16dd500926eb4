"""A response body the user reads, seen by the span as it is read: botocore's ``StreamingBody`` (``invoke_model``).

The body is read exactly once, by the user: spanfold never reads it itself (that would take the bytes from the
user, or hold the connection's data and change when and where a read error is raised). The proxy forwards every
read to the very same ``StreamingBody`` and hands the bytes the user got to the span's :class:`StreamState`; the span
ends at the end of the body (a read that returns ``b""``, a whole-body ``read()``, or the content length reached),
on a read error (recorded, then raised to the user unchanged), on ``close()``, or when the body is collected unread.
``iter_chunks``, ``iter_lines``, ``readlines`` and iteration run the SDK's own code over the proxy's ``read``.
Everything else (``set_socket_timeout``, ``tell``, ``isinstance``) reaches the SDK's body.
"""

from __future__ import annotations

import inspect
from typing import Any

from spanfold.instrumentation.toolkit.streams import ObjectProxy, StreamState


class _Body(ObjectProxy):
    def __init__(self, wrapped: Any, state: StreamState) -> None:
        super().__init__(wrapped)
        self._self_state = state
        self._self_read = 0

    def _self_got(self, chunk: Any, whole: bool) -> None:
        """Bytes the user got (``whole``: the read asked for everything there was)."""
        state = self._self_state
        if chunk:
            state.push(bytes(chunk))
            self._self_read += len(chunk)
        length = getattr(self.__wrapped__, "_content_length", None)
        if not chunk or whole or (length is not None and self._self_read >= int(length)):
            state.finish()

    def __del__(self) -> None:
        state = getattr(self, "_self_state", None)
        if state is not None and not state.span.ended:
            state.finish()


class SyncBody(_Body):
    def read(self, amt: int | None = None) -> bytes:
        try:
            chunk: bytes = self.__wrapped__.read(amt)
        except BaseException as exc:
            self._self_state.finish(exc)
            raise
        self._self_got(chunk, amt is None)
        return chunk

    def readinto(self, b: Any) -> int:
        try:
            count: int = self.__wrapped__.readinto(b)
        except BaseException as exc:
            self._self_state.finish(exc)
            raise
        self._self_got(memoryview(b)[:count], False)
        return count

    def readlines(self) -> list[bytes]:
        return type(self.__wrapped__).readlines(self)  # type: ignore[no-any-return]

    def iter_lines(self, *args: Any, **kwargs: Any) -> Any:
        return type(self.__wrapped__).iter_lines(self, *args, **kwargs)

    def iter_chunks(self, *args: Any, **kwargs: Any) -> Any:
        return type(self.__wrapped__).iter_chunks(self, *args, **kwargs)

    def __iter__(self) -> Any:
        return type(self.__wrapped__).__iter__(self)

    def __next__(self) -> bytes:
        return type(self.__wrapped__).__next__(self)  # type: ignore[no-any-return]

    def __enter__(self) -> SyncBody:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> Any:
        try:
            return self.__wrapped__.close()
        finally:
            self._self_state.finish()


class AsyncBody(_Body):
    """aiobotocore's bodies: ``await read()``, ``async for``, ``async with``."""

    async def read(self, amt: int | None = None) -> bytes:
        try:
            chunk: bytes = await self.__wrapped__.read(amt)
        except BaseException as exc:
            self._self_state.finish(exc)
            raise
        self._self_got(chunk, amt is None)
        return chunk

    async def readinto(self, b: Any) -> int:
        try:
            count: int = await self.__wrapped__.readinto(b)
        except BaseException as exc:
            self._self_state.finish(exc)
            raise
        self._self_got(memoryview(b)[:count], False)
        return count

    async def readlines(self) -> list[bytes]:
        return await type(self.__wrapped__).readlines(self)  # type: ignore[no-any-return]

    def iter_lines(self, *args: Any, **kwargs: Any) -> Any:
        return type(self.__wrapped__).iter_lines(self, *args, **kwargs)

    def iter_chunks(self, *args: Any, **kwargs: Any) -> Any:
        return type(self.__wrapped__).iter_chunks(self, *args, **kwargs)

    def __aiter__(self) -> Any:
        return type(self.__wrapped__).__aiter__(self)

    async def __anext__(self) -> bytes:
        return await type(self.__wrapped__).__anext__(self)  # type: ignore[no-any-return]

    async def __aenter__(self) -> AsyncBody:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> Any:
        try:
            closer = getattr(self.__wrapped__, "aclose", None) or self.__wrapped__.close
            result = closer()
            return (await result) if inspect.isawaitable(result) else result
        finally:
            self._self_state.finish()

    def close(self) -> Any:
        try:
            return self.__wrapped__.close()
        finally:
            self._self_state.finish()

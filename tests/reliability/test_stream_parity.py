"""Stream parity: every way a user can consume a stream, differentially against the same stream without spanfold
(chunks seen, exceptions, the HTTP response's state), sync and async, raw ``create(stream=True)`` and the SDKs'
``stream()`` helpers; exactly one span end each, at the right moment, with an error status when the stream broke.
"""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.trace import StatusCode

from spanfold.testing import Reply, ToolCallSpec
from spanfold.testing.request import MockRequest
from spanfold.testing.server import RENDERERS
from spanfold.testing.wire.base import RenderContext

from .conftest import Answer, Boom, FaultLog, Harness, anthropic_client, openai_client

REPLY = Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})], text="Let me check the weather in Paris.")


class Rendered:
    """A transport answering with the mock server's exact provider shapes; a stream may break after ``keep``
    events by raising ``fail``."""

    def __init__(self, api: Any, keep: int | None = None, fail: BaseException | None = None) -> None:
        self.api = api
        self.keep = keep
        self.fail = fail

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        ctx = RenderContext(MockRequest(self.api, request.url.path, body))
        renderer = RENDERERS[self.api]
        out = renderer.body(REPLY, ctx)
        if not body.get("stream"):
            answer = Answer.json(out)
        else:
            events = [e.encode() for e in renderer.events(out, ctx)]
            if self.keep is not None:
                events = events[: self.keep]
            answer = Answer(200, "text/event-stream", tuple(events), self.fail)
        return httpx2.Response(
            answer.status,
            headers={"content-type": answer.content_type},
            stream=_stream(answer),
            request=request,
        )


def _stream(answer: Answer) -> Any:
    from .conftest import _Body

    return _Body(answer.pieces, answer.fail)


class Ends(SpanProcessor):
    """Counts ``on_end`` per span: a span ended twice would show up here (the SDK would warn and skip the second)."""

    def __init__(self) -> None:
        self.ends: list[int] = []

    def on_end(self, span: ReadableSpan) -> None:
        assert span.context is not None
        self.ends.append(span.context.span_id)


# --- how streams are made --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    api: Any
    client: Callable[..., Any]
    open: Callable[[Any], Any]  # client -> stream (or stream manager, or coroutine of one)
    helper: bool = False


SOURCES = {
    "openai.chat": Source(
        "chat",
        openai_client,
        lambda c: c.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "Weather?"}], stream=True
        ),
    ),
    "openai.chat.helper": Source(
        "chat",
        openai_client,
        lambda c: c.chat.completions.stream(model="gpt-4o", messages=[{"role": "user", "content": "Weather?"}]),
        helper=True,
    ),
    "openai.responses": Source(
        "responses", openai_client, lambda c: c.responses.create(model="gpt-4o", input="Weather?", stream=True)
    ),
    "anthropic.messages": Source(
        "messages",
        anthropic_client,
        lambda c: c.messages.create(
            model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "Weather?"}], stream=True
        ),
    ),
    "anthropic.messages.helper": Source(
        "messages",
        anthropic_client,
        lambda c: c.messages.stream(
            model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "Weather?"}]
        ),
        helper=True,
    ),
}

# --- the ways of consuming a stream ----------------------------------------------------------------------------
# Each takes the stream and a probe (ended spans so far) and returns (what the user saw, probes taken). The first
# item must be equal with and without spanfold; the probes are checked only with spanfold on.

Probe = Callable[[], int]
Seen = list[Any]


def _desc(x: Any) -> Any:
    return (x.__class__.__qualname__, repr(x))


def _err(exc: BaseException) -> Any:
    return ("raised", type(exc).__qualname__, str(exc))


def iterate(s: Any, probe: Probe) -> tuple[Seen, list[int]]:
    seen: Seen = []
    try:
        for chunk in s:
            seen.append(_desc(chunk))
    except Exception as exc:
        seen.append(_err(exc))
    return seen, [probe()]


def with_block(s: Any, probe: Probe) -> tuple[Seen, list[int]]:
    seen: Seen = []
    try:
        with s as inner:
            for chunk in inner:
                seen.append(_desc(chunk))
    except Exception as exc:
        seen.append(_err(exc))
    return seen, [probe()]


def with_break(s: Any, probe: Probe) -> tuple[Seen, list[int]]:
    with s as inner:
        seen = [_desc(next(iter(inner)))]
        taken = [probe()]
    return seen, [*taken, probe()]


def close_early(s: Any, probe: Probe) -> tuple[Seen, list[int]]:
    seen = [_desc(next(iter(s)))]
    taken = [probe()]
    s.close()
    seen.append(s.response.is_closed)
    return seen, [*taken, probe()]


def break_then_gc(s: Any, probe: Probe) -> tuple[Seen, list[int]]:
    seen: Seen = []
    for chunk in s:
        seen.append(_desc(chunk))
        break
    taken = [probe()]
    del s, chunk
    gc.collect()
    return seen, [*taken, probe()]


def never_read_gc(s: Any, probe: Probe) -> tuple[Seen, list[int]]:
    taken = [probe()]
    del s
    gc.collect()
    return [], [*taken, probe()]


#: way -> (function, probes expected with spanfold on)
SYNC_WAYS: dict[str, tuple[Callable[[Any, Probe], tuple[Seen, list[int]]], list[int]]] = {
    "iterate": (iterate, [1]),
    "with": (with_block, [1]),
    "with_break": (with_break, [0, 1]),
    "close_early": (close_early, [0, 1]),
    "break_then_gc": (break_then_gc, [0, 1]),
    "never_read_gc": (never_read_gc, [0, 1]),
}
#: The helpers are context managers: the stream is what ``with`` gives.
HELPER_WAYS = {"with", "with_break"}


async def aiterate(s: Any, probe: Probe) -> tuple[Seen, list[int]]:
    seen: Seen = []
    try:
        async for chunk in s:
            seen.append(_desc(chunk))
    except Exception as exc:
        seen.append(_err(exc))
    return seen, [probe()]


async def awith_block(s: Any, probe: Probe) -> tuple[Seen, list[int]]:
    seen: Seen = []
    try:
        async with s as inner:
            async for chunk in inner:
                seen.append(_desc(chunk))
    except Exception as exc:
        seen.append(_err(exc))
    return seen, [probe()]


async def awith_break(s: Any, probe: Probe) -> tuple[Seen, list[int]]:
    async with s as inner:
        seen = [_desc(await inner.__aiter__().__anext__())]
        taken = [probe()]
    return seen, [*taken, probe()]


async def aclose_early(s: Any, probe: Probe) -> tuple[Seen, list[int]]:
    seen = [_desc(await s.__aiter__().__anext__())]
    taken = [probe()]
    await s.close()
    seen.append(s.response.is_closed)
    return seen, [*taken, probe()]


async def abreak_then_gc(s: Any, probe: Probe) -> tuple[Seen, list[int]]:
    seen: Seen = []
    async for chunk in s:
        seen.append(_desc(chunk))
        break
    taken = [probe()]
    del s, chunk
    gc.collect()
    return seen, [*taken, probe()]


async def anever_read_gc(s: Any, probe: Probe) -> tuple[Seen, list[int]]:
    taken = [probe()]
    del s
    gc.collect()
    return [], [*taken, probe()]


ASYNC_WAYS: dict[str, tuple[Callable[[Any, Probe], Awaitable[tuple[Seen, list[int]]]], list[int]]] = {
    "iterate": (aiterate, [1]),
    "with": (awith_block, [1]),
    "with_break": (awith_break, [0, 1]),
    "close_early": (aclose_early, [0, 1]),
    "break_then_gc": (abreak_then_gc, [0, 1]),
    "never_read_gc": (anever_read_gc, [0, 1]),
}

CASES = [(source, way) for source in SOURCES for way in SYNC_WAYS if (way in HELPER_WAYS) or not SOURCES[source].helper]


@pytest.fixture
def ends(harness: Harness) -> Ends:
    counter = Ends()
    harness.provider.add_span_processor(counter)
    return counter


def _check_one_end(harness: Harness, ends: Ends, error: bool) -> ReadableSpan:
    spans = harness.take_spans()
    assert len(spans) == 1, [s.name for s in spans]
    assert len(ends.ends) == len(set(ends.ends)) == 1
    ends.ends.clear()
    status = spans[0].status.status_code
    assert status == (StatusCode.ERROR if error else StatusCode.UNSET)
    return spans[0]


def _sync_run(source: Source, way: Any, transport: Rendered, probe: Probe) -> tuple[Seen, list[int]]:
    client = source.client(transport)
    return way(source.open(client), probe)


async def _async_run(source: Source, way: Any, transport: Rendered, probe: Probe) -> tuple[Seen, list[int]]:
    client = source.client(transport, True)
    opened = [source.open(client)]
    if asyncio.iscoroutine(opened[0]):
        opened = [await opened.pop()]
    return await way(opened.pop(), probe)  # no reference left here: the way may drop the stream for GC


@pytest.mark.parametrize(("source", "way"), CASES)
def test_sync_stream_parity(source: str, way: str, harness: Harness, ends: Ends, fault_log: FaultLog) -> None:
    src, (fn, probes) = SOURCES[source], SYNC_WAYS[way]
    expected, _ = _sync_run(src, fn, Rendered(src.api), lambda: 0)
    with harness.on():
        got, taken = _sync_run(src, fn, Rendered(src.api), lambda: len(harness.exporter.get_finished_spans()))
    assert got == expected
    assert len(got) > (3 if way in ("iterate", "with") else -1 if way == "never_read_gc" else 0)
    assert taken == probes
    span = _check_one_end(harness, ends, error=False)
    if way in ("iterate", "with") and source.startswith("openai.chat"):
        output = json.loads(str((span.attributes or {})["gen_ai.output.messages"]))
        assert output[0]["parts"][0] == {"type": "text", "content": "Let me check the weather in Paris."}
    assert fault_log.check_logged_once() == {}


@pytest.mark.parametrize(("source", "way"), CASES)
def test_async_stream_parity(source: str, way: str, harness: Harness, ends: Ends, fault_log: FaultLog) -> None:
    src, (fn, probes) = SOURCES[source], ASYNC_WAYS[way]
    expected, _ = asyncio.run(_async_run(src, fn, Rendered(src.api), lambda: 0))
    with harness.on():
        got, taken = asyncio.run(
            _async_run(src, fn, Rendered(src.api), lambda: len(harness.exporter.get_finished_spans()))
        )
    assert got == expected
    assert taken == probes
    _check_one_end(harness, ends, error=False)
    assert fault_log.check_logged_once() == {}


FAILURES = [httpx2.ReadError("connection reset mid-stream"), Boom("the app's transport broke")]


@pytest.mark.parametrize("fail", FAILURES, ids=["read_error", "other_exception"])
@pytest.mark.parametrize("source", [s for s in SOURCES if not SOURCES[s].helper])
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_exception_mid_stream(
    source: str, fail: BaseException, is_async: bool, harness: Harness, ends: Ends, fault_log: FaultLog
) -> None:
    """The connection breaks after three events: the same exception reaches the user at the same chunk; the span
    ends once, with an error status, recording what arrived."""
    src = SOURCES[source]
    if is_async:
        expected, _ = asyncio.run(_async_run(src, aiterate, Rendered(src.api, 3, fail), lambda: 0))
        with harness.on():
            got, _ = asyncio.run(_async_run(src, aiterate, Rendered(src.api, 3, fail), lambda: 0))
    else:
        expected, _ = _sync_run(src, iterate, Rendered(src.api, 3, fail), lambda: 0)
        with harness.on():
            got, _ = _sync_run(src, iterate, Rendered(src.api, 3, fail), lambda: 0)
    assert got == expected
    assert got[-1][0] == "raised"
    span = _check_one_end(harness, ends, error=True)
    assert (span.attributes or {})["error.type"]
    assert [e.name for e in span.events] == ["exception"]
    assert fault_log.check_logged_once() == {}


@pytest.mark.parametrize("source", ["openai.chat.helper", "anthropic.messages.helper"])
def test_helper_final_message_parity(source: str, harness: Harness, ends: Ends) -> None:
    """The helpers' accumulated final message is the same object shape with and without spanfold."""
    src = SOURCES[source]

    def final(s: Any, probe: Probe) -> tuple[Seen, list[int]]:
        with s as inner:
            value = (
                inner.get_final_completion() if hasattr(inner, "get_final_completion") else inner.get_final_message()
            )
        return [_desc(value)], [probe()]

    expected, _ = _sync_run(src, final, Rendered(src.api), lambda: 0)
    with harness.on():
        got, taken = _sync_run(src, final, Rendered(src.api), lambda: len(harness.exporter.get_finished_spans()))
    assert got == expected
    assert taken == [1]
    _check_one_end(harness, ends, error=False)


class _Stall(httpx2.AsyncByteStream):
    """An SSE body that sends ``first`` and then never another byte."""

    def __init__(self, first: bytes) -> None:
        self.first = first

    async def __aiter__(self) -> Any:
        yield self.first
        await asyncio.Event().wait()


def _stalling(stream: bool) -> Callable[[httpx2.Request], Any]:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        if not stream:
            await asyncio.Event().wait()  # the response never comes
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": []}
        first = f"data: {json.dumps(chunk)}\n\n".encode()
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, stream=_Stall(first), request=request
        )

    return handler


@pytest.mark.parametrize("stream", [False, True], ids=["awaiting_the_response", "awaiting_a_chunk"])
def test_cancelled_task(stream: bool, harness: Harness, ends: Ends) -> None:
    """A task cancelled while spanfold's wrapper (or stream proxy) awaits: the cancellation reaches the task as it
    would without spanfold, and the span ends exactly once."""

    async def app() -> list[Any]:
        client = openai_client(_stalling(stream), True)

        async def call() -> None:
            s = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}], stream=stream
            )
            async for _ in s:
                pass

        task = asyncio.ensure_future(call())
        await asyncio.sleep(0.05)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError as exc:
            return ["cancelled", type(exc).__name__, task.cancelled()]
        return ["finished"]

    expected = asyncio.run(app())
    with harness.on():
        got = asyncio.run(app())
    assert got == expected == ["cancelled", "CancelledError", True]
    gc.collect()
    spans = harness.take_spans()
    assert len(spans) == 1 and len(ends.ends) == 1


def test_keyboard_interrupt_mid_stream(harness: Harness, ends: Ends) -> None:
    """Ctrl-C while a stream is being read: the KeyboardInterrupt reaches the user untouched; one span end."""

    def app() -> Any:
        transport = Rendered("chat", 2, KeyboardInterrupt())
        client = openai_client(transport)
        seen = []
        try:
            for chunk in client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}], stream=True
            ):
                seen.append(_desc(chunk))
        except KeyboardInterrupt as exc:
            seen.append(("interrupted", repr(exc)))
        return seen

    expected = app()
    with harness.on():
        got = app()
    assert got == expected
    assert got[-1][0] == "interrupted" and len(got) == 3
    assert len(harness.take_spans()) == 1 and len(ends.ends) == 1

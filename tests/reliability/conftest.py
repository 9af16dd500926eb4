"""Reliability harness: the real SDKs over ``httpx2.MockTransport``, spanfold switched on and off per call, and the
user-visible outcome of a call (what it returned, chunk by chunk, or what it raised) in a comparable form.

Differential: every call runs once uninstrumented and once through spanfold's wrappers; the two outcomes must be equal,
the wrapped call must hand back the very object the SDK method returned, and exactly one span must end.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanfold import counters
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.anthropic.patches import AnthropicInstrumentor
from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor

#: Slow tests: marked ``slow`` and skipped unless SPANFOLD_SLOW=1.
SLOW = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("SPANFOLD_SLOW") != "1", reason="slow: set SPANFOLD_SLOW=1"),
]

OPENAI_KEY = "sk-proj-RELIABILITYtestKEY0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-api03-RELIABILITYtestKEY0123456789abcdef"

# --- scripted HTTP answers ---------------------------------------------------------------------------------


class Boom(Exception):
    """An exception raised by the transport (not an httpx2 error: the SDK wraps it)."""


@dataclass(frozen=True)
class Answer:
    """What the transport does with one request: raise, or answer ``status`` with ``pieces`` of body, optionally
    raising ``fail`` after the pieces (a connection dropped mid-body)."""

    status: int = 200
    content_type: str = "application/json"
    pieces: tuple[bytes, ...] = ()
    fail: BaseException | None = None
    raise_now: BaseException | None = None

    @classmethod
    def json(cls, value: Any, status: int = 200) -> Answer:
        return cls(status, "application/json", (json.dumps(value).encode(),))

    @classmethod
    def sse(cls, events: list[tuple[str | None, str]], fail: BaseException | None = None) -> Answer:
        pieces = []
        for event, data in events:
            head = f"event: {event}\n" if event is not None else ""
            pieces.append((head + "".join(f"data: {line}\n" for line in data.split("\n")) + "\n").encode())
        return cls(200, "text/event-stream", tuple(pieces), fail)


class Pieces:
    """A response body in pieces, then ``fail`` raised (a connection cut mid-stream); sync and async. Mixed into the
    byte-stream classes of httpx2 here and of httpx (the SDKs before openai 3) beside."""

    def __init__(self, pieces: tuple[bytes, ...], fail: BaseException | None) -> None:
        self.pieces = pieces
        self.fail = fail

    def __iter__(self) -> Iterator[bytes]:
        yield from self.pieces
        if self.fail is not None:
            raise self.fail

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece
        if self.fail is not None:
            raise self.fail


class _Body(Pieces, httpx2.SyncByteStream, httpx2.AsyncByteStream):
    pass


def _respond(answer: Answer, request: httpx2.Request) -> httpx2.Response:
    if answer.raise_now is not None:
        raise answer.raise_now
    return httpx2.Response(
        answer.status,
        headers={"content-type": answer.content_type, "x-should-retry": "false"},
        stream=_Body(answer.pieces, answer.fail),
        request=request,
    )


class Script:
    """A transport answering every request with the same :class:`Answer`; remembers the requests' headers and
    bodies (what the SDK sent must not change under spanfold)."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.headers: list[dict[str, str]] = []
        self.bodies: list[bytes] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.headers.append(dict(request.headers))
        self.bodies.append(request.content)
        return _respond(self.answer, request)


# --- clients -----------------------------------------------------------------------------------------------


def openai_client(handler: Callable[[httpx2.Request], httpx2.Response], is_async: bool = False) -> Any:
    transport = httpx2.MockTransport(handler)
    if is_async:
        return openai.AsyncOpenAI(
            api_key=OPENAI_KEY,
            base_url="http://mock.test/v1",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=transport),
        )
    return openai.OpenAI(
        api_key=OPENAI_KEY,
        base_url="http://mock.test/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=transport),
    )


def anthropic_client(handler: Callable[[httpx2.Request], httpx2.Response], is_async: bool = False) -> Any:
    transport = httpx2.MockTransport(handler)
    if is_async:
        return anthropic.AsyncAnthropic(
            api_key=ANTHROPIC_KEY,
            base_url="http://mock.test",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=transport),
        )
    return anthropic.Anthropic(
        api_key=ANTHROPIC_KEY,
        base_url="http://mock.test",
        max_retries=0,
        http_client=httpx2.Client(transport=transport),
    )


# --- outcomes ----------------------------------------------------------------------------------------------


def _model(value: Any) -> Any:
    return (value.__class__.__qualname__, repr(value))


def _error(exc: BaseException) -> Any:
    return ("raised", type(exc).__qualname__, str(exc))


def _is_raw(value: Any) -> bool:
    return hasattr(value, "http_response") and callable(getattr(value, "parse", None))


def outcome(call: Callable[[], Any]) -> tuple[Any, Any]:
    """(comparable outcome, the object the call returned or the exception it raised): a stream is read to its end (or
    its error) and closed, a raw response parsed (and its stream read)."""
    try:
        result = call()
    except Exception as exc:
        return _error(exc), exc
    return describe(result), result


def describe(result: Any) -> Any:
    if _is_raw(result):
        try:
            parsed = result.parse()
        except Exception as exc:
            return ("raw", result.http_response.status_code, _error(exc))
        return ("raw", result.http_response.status_code, describe(parsed))
    if isinstance(result, (openai.Stream, anthropic.Stream)):
        chunks: list[Any] = []
        try:
            for chunk in result:
                chunks.append(_model(chunk))
        except Exception as exc:
            chunks.append(_error(exc))
        finally:
            result.close()
        return ("stream", result.__class__.__qualname__, chunks)
    return _model(result)


async def aoutcome(call: Callable[[], Any]) -> tuple[Any, Any]:
    try:
        result = await call()
    except Exception as exc:
        return _error(exc), exc
    return await adescribe(result), result


async def adescribe(result: Any) -> Any:
    if _is_raw(result):
        try:
            parsed = result.parse()
            if asyncio.iscoroutine(parsed):
                parsed = await parsed
        except Exception as exc:
            return ("raw", result.http_response.status_code, _error(exc))
        return ("raw", result.http_response.status_code, await adescribe(parsed))
    if isinstance(result, (openai.AsyncStream, anthropic.AsyncStream)):
        chunks: list[Any] = []
        try:
            async for chunk in result:
                chunks.append(_model(chunk))
        except Exception as exc:
            chunks.append(_error(exc))
        finally:
            await result.close()
        return ("stream", result.__class__.__qualname__, chunks)
    return _model(result)


# --- the SDK methods, and what they returned ---------------------------------------------------------------

#: Every SDK method spanfold wraps that makes the request itself: module, class, method.
WRAPPED = (
    [("openai.resources.chat.completions.completions", cls, "create") for cls in ("Completions", "AsyncCompletions")]
    + [("openai.resources.responses.responses", cls, "create") for cls in ("Responses", "AsyncResponses")]
    + [("openai.resources.chat.completions.completions", cls, "parse") for cls in ("Completions", "AsyncCompletions")]
    + [
        (f"anthropic.resources.{beta}messages.messages", cls, "create")
        for beta in ("", "beta.")
        for cls in ("Messages", "AsyncMessages")
    ]
)


class Returned:
    """Records the object each SDK method itself returned (or the exception it raised), beneath spanfold's wrapper."""

    def __init__(self) -> None:
        self.values: list[Any] = []

    def last(self) -> Any:
        return self.values[-1]


def _recorder(original: Callable[..., Any], returned: Returned) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(inspect.unwrap(original)):

        @functools.wraps(original)
        async def record_async(*args: Any, **kwargs: Any) -> Any:
            try:
                value = await original(*args, **kwargs)
            except BaseException as exc:
                returned.values.append(exc)
                raise
            returned.values.append(value)
            return value

        return record_async

    @functools.wraps(original)
    def record(*args: Any, **kwargs: Any) -> Any:
        try:
            value = original(*args, **kwargs)
        except BaseException as exc:
            returned.values.append(exc)
            raise
        returned.values.append(value)
        return value

    return record


def unwrapped(value: Any) -> Any:
    """What a spanfold proxy stands for (the object itself when it is not a proxy)."""
    return getattr(value, "__wrapped__", value)


@dataclass
class Harness:
    """spanfold's instrumentors on a private provider, switched on only inside :meth:`on`."""

    exporter: InMemorySpanExporter
    provider: TracerProvider
    settings: Runtime
    returned: Returned
    instrumentors: list[Any] = field(default_factory=list)

    @contextmanager
    def on(self) -> Iterator[None]:
        for inst in self.instrumentors:
            inst.instrument(tracer_provider=self.provider, runtime=self.settings, skip_dep_check=True)
        try:
            yield
        finally:
            for inst in self.instrumentors:
                inst.uninstrument()

    def take_spans(self) -> list[Any]:
        spans = list(self.exporter.get_finished_spans())
        self.exporter.clear()
        return spans


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    returned = Returned()
    for module, cls, name in WRAPPED:
        owner = getattr(importlib.import_module(module), cls)
        monkeypatch.setattr(owner, name, _recorder(getattr(owner, name), returned))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY", "false")  # the SDK's own spans would go to the global provider
    yield Harness(
        exporter, provider, Runtime(capture_content=True), returned, [OpenAIInstrumentor(), AnthropicInstrumentor()]
    )


class FaultLog(logging.Handler):
    """Every record spanfold's logger emits."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def kinds(self) -> list[str]:
        """The fault kind of every fault warning, in order (one entry per log line)."""
        out = []
        for record in self.records:
            msg = record.getMessage()
            if "internal fault (" in msg:
                out.append(msg.split("internal fault (", 1)[1].split(")", 1)[0])
        return out

    def check_logged_once(self) -> dict[str, int]:
        """Each fault kind logged at most once, and each logged kind counted in ``stats()``; the fault counters."""
        kinds = self.kinds()
        assert len(kinds) == len(set(kinds)), f"a fault kind was logged more than once: {kinds}"
        stats = counters.snapshot()
        faults = {k.removeprefix("fault."): v for k, v in stats.items() if k.startswith("fault.")}
        assert set(kinds) == set(faults), (kinds, faults)
        assert stats.get("faults", 0) == sum(faults.values())
        return faults


@pytest.fixture
def fault_log() -> Iterator[FaultLog]:
    handler = FaultLog()
    logger = logging.getLogger("spanfold")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


# --- spanfold serve ----------------------------------------------------------------------------------------


@pytest.fixture
def weather_spans(_global_provider: Any, global_spans: Any) -> list[ReadableSpan]:
    """The spans of one weather-agent run (the body the receiver tests send)."""
    from ..bridge.conftest import run_weather_agent

    run_weather_agent(_global_provider)
    return list(global_spans.get_finished_spans())


@pytest.fixture
def served() -> Iterator[Any]:
    """``served(**options)``: a ``spanfold serve`` receiver on a free loopback port, stopped after the test."""
    from ..bridge.test_receiver import Served

    made: list[Served] = []

    def make(**options: Any) -> Served:
        made.append(Served(**options))
        return made[-1]

    yield make
    for s in made:
        s.thread.stop()

"""Span-level fixtures: the real SDK, a transport that replays recorded responses, an in-memory exporter."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor
from spanfold.testing import MockLLMServer


class Replay:
    """Answers each request with the next recorded response; remembers the request bodies."""

    def __init__(self, interactions: list[dict[str, Any]]) -> None:
        self.interactions = list(interactions)
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(request.content))
        recorded = self.interactions[len(self.requests) - 1]["response"]
        return httpx2.Response(
            recorded["status"], headers={"content-type": recorded["content_type"]}, content=recorded["body"].encode()
        )


#: What a backend shows first of a span (:mod:`spanfold.instrumentation.toolkit.shown`).
SHOWN = ("input.value", "input.mime_type", "output.value", "output.mime_type")


class Spans:
    """The finished spans of a test, and the switches it may flip."""

    def __init__(
        self, exporter: InMemorySpanExporter, settings: Runtime, provider: TracerProvider, instrumentor: Any = None
    ) -> None:
        self.instrumentor = instrumentor or OpenAIInstrumentor()
        self.exporter = exporter
        self.settings = settings
        self.provider = provider

    def use(self, rt: Runtime) -> None:
        """Re-instrument with another runtime (a runtime is fixed per instrumentation)."""
        self.instrumentor.uninstrument()
        self.settings = rt
        self.instrumentor.instrument(tracer_provider=self.provider, runtime=rt)

    def finished(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def one(self) -> ReadableSpan:
        spans = self.finished()
        assert len(spans) == 1, [s.name for s in spans]
        return spans[0]

    def attrs(self, span: ReadableSpan | None = None) -> dict[str, Any]:
        """Attributes with the JSON ones parsed, without the stitching marker (whether a zero-code conversation is
        active depends on the tests before; tests/e2e/test_source_stitching.py checks the marker) and without what a
        backend shows first (``input.value`` / ``output.value`` and their MIME types: copies of the messages,
        tests/instrumentation/test_shown_values.py checks them)."""
        raw = dict((span or self.one()).attributes or {})
        raw.pop("spanfold.stitched", None)
        for key in SHOWN:
            raw.pop(key, None)
        for key in (
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.tool.definitions",
            "gen_ai.system_instructions",
        ):
            if key in raw:
                raw[key] = json.loads(str(raw[key]))
        return raw


@pytest.fixture
def spans() -> Iterator[Spans]:
    with spans_of(OpenAIInstrumentor()) as recorded:
        yield recorded


@pytest.fixture
def replay_client(load_recording: Callable[[str], list[dict[str, Any]]]) -> Callable[..., Any]:
    """``replay_client("file.json", async_=False)`` -> (openai client, Replay)."""
    import openai

    def make(name: str, async_: bool = False) -> tuple[Any, Replay]:
        replay = Replay(load_recording(name))
        transport = httpx2.MockTransport(replay)
        if async_:
            return openai.AsyncOpenAI(
                api_key="sk-test",
                base_url="http://recorded.test/v1",
                max_retries=0,
                http_client=httpx2.AsyncClient(transport=transport),
            ), replay
        return openai.OpenAI(
            api_key="sk-test",
            base_url="http://recorded.test/v1",
            max_retries=0,
            http_client=httpx2.Client(transport=transport),
        ), replay

    return make


@contextmanager
def spans_of(instrumentor: Any) -> Iterator[Spans]:
    """``instrumentor`` on a private provider with content capture on, its finished spans in memory; restored after.
    Tool definitions are recorded whole: the provider tests pin each provider's mapping of them."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rt = Runtime(capture_content=True, full_tool_definitions=True)
    instrumentor.instrument(tracer_provider=provider, runtime=rt)
    try:
        yield Spans(exporter, rt, provider, instrumentor)
    finally:
        instrumentor.uninstrument()


@pytest.fixture
def mock() -> Iterator[MockLLMServer]:
    """The embedded mock LLM server (every provider's wire format)."""
    with MockLLMServer() as server:
        yield server

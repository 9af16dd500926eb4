"""The current official OpenTelemetry OpenAI instrumentation, ``opentelemetry-instrumentation-genai-openai`` (1.3b0,
on ``opentelemetry-util-genai`` 1.3b0; it replaced ``openai-v2``, whose spans ``tests/bridge/test_dialect_otel_v2.py``
folds), on the real openai SDK over real HTTP to the embedded mock server, folded by spanfold's exporter half alone
(a ``FoldingSpanProcessor`` or a ``FoldingSpanExporter`` on the application's own providers; no ``spanfold.init()``,
no spanfold instrumentation while it runs).

Content capture is turned on as that instrumentation's users turn it on (read when it is instrumented):
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` set to

``span_only``
    the messages on the span (``gen_ai.input.messages`` / ``gen_ai.output.messages`` JSON, the contract's names):
    no rewriter touches them;
``event_only``
    the span without content, and one ``gen_ai.client.inference.operation.details`` log record per call in its
    context, the messages among its attributes as structured values: ``GenAIEventLogProcessor`` on the application's
    ``LoggerProvider`` hands them to the fold;
``span_and_event``
    both: the span's own messages are read, the event is taken and left.

Each case (a plain chat call; a tool loop of two calls: the tool call, its output, the final answer; streamed; async)
folds to the events spanfold's own instrumentation gives for the same run, event by event, with the same step
metadata (model, provider, response id, finish reasons, tokens) and trace metadata.

The package needs ``opentelemetry-util-genai >= 1.3``; the test extra pins ``< 1.0`` for openai-v2's per-message
events. So it runs in the venv ``.ci/genai-openai`` builds (pins in ``constraints/genai-openai.txt``), which fails if
these tests were skipped; elsewhere this module is skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import pytest

try:
    importlib.metadata.version("opentelemetry-instrumentation-genai-openai")
except importlib.metadata.PackageNotFoundError:  # it and the test extra cannot share a venv
    pytest.skip(
        "opentelemetry-instrumentation-genai-openai is tested by .ci/genai-openai, in a venv of its own",
        allow_module_level=True,
    )

import openai
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanfold import counters
from spanfold.content.runtime import Runtime
from spanfold.exporter.dialects import genai_events
from spanfold.exporter.dialects.dispatch import REWRITERS
from spanfold.exporter.dialects.genai_event_logs import GenAIEventLogProcessor
from spanfold.exporter.files.writers import MemoryWriter
from spanfold.exporter.pipeline.processor import FoldingSpanProcessor
from spanfold.exporter.pipeline.span_exporter import FoldingSpanExporter
from spanfold.exporter.records import from_readable
from spanfold.testing import WEATHER, WEATHER_TOOLS_OPENAI, MockLLMServer, Reply, ToolCallSpec, Usage, get_weather
from spanfold.trace.model import Trace

CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
SCOPE = "opentelemetry.instrumentation.genai.openai"
MODEL = "gpt-4o-mini"
QUESTION = "What's the weather in Paris?"
WEATHER_TEXT = get_weather("Paris")
ANSWER = "It is 18°C and sunny in Paris."
HELLO = "Hello! Ask me about the weather anywhere."
#: The tokens the mock server reports for each call (the ``Usage`` its replies give).
TOOL_TOKENS, ANSWER_TOKENS = Usage(61, 9), Usage(83, 12)
PLAIN_TOKENS = Usage(40, 11)


@dataclass(frozen=True)
class Case:
    """One run: the mock server's scripted replies, and how the agent calls the API."""

    replies: tuple[Reply, ...]
    stream: bool = False
    asynchronous: bool = False

    @property
    def plain(self) -> bool:
        """One call, answered (else the tool loop)."""
        return len(self.replies) == 1


PLAIN = (Reply.text(HELLO, usage=PLAIN_TOKENS),)
LOOP = (
    Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})], usage=TOOL_TOKENS),
    Reply.text(ANSWER, usage=ANSWER_TOKENS),
)
CASES = {
    "plain": Case(PLAIN),
    "tool-loop": Case(LOOP),
    "streamed": Case(LOOP, stream=True),
    "async": Case(LOOP, asynchronous=True),
    "async-streamed": Case(LOOP, stream=True, asynchronous=True),
}


def _events(case: Case) -> list[dict[str, Any]]:
    """The flat trace of a run of ``case``."""
    opening = [{"role": "system", "content": WEATHER.system}, {"role": "user", "content": QUESTION}]
    if case.plain:
        return [*opening, {"role": "assistant", "content": HELLO}]
    arguments = {"city": "Paris"}
    call = {"id": "call_mock_1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
    return [
        *opening,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": WEATHER_TEXT, "tool_call_id": "call_mock_1"},
        {"role": "assistant", "content": ANSWER},
    ]


def _steps(case: Case) -> list[dict[str, Any]]:
    """Per model call (its first output event), the metadata the fold gives it."""
    calls = [("stop", PLAIN_TOKENS)] if case.plain else [("tool_calls", TOOL_TOKENS), ("stop", ANSWER_TOKENS)]
    return [
        {
            "model": MODEL,
            "provider": "openai",
            "response_id": f"chatcmpl-mock-{n}",
            "finish_reasons": [reason],
            "usage": {"input_tokens": tokens.input_tokens, "output_tokens": tokens.output_tokens},
        }
        for n, (reason, tokens) in enumerate(calls, 1)
    ]


# --- the agent -------------------------------------------------------------------------------------------------------


def _request(history: list[Any], stream: bool) -> dict[str, Any]:
    request: dict[str, Any] = {"model": MODEL, "messages": history, "tools": WEATHER_TOOLS_OPENAI}
    if stream:
        request["stream_options"] = {"include_usage": True}  # tokens in the last chunk
    return request


def _tool_outputs(history: list[Any], message: Any) -> bool:
    """The tool outputs of the model's calls appended to ``history``; False when it called none (it answered)."""
    history.append(message)
    for call in message.tool_calls or ():
        arguments = json.loads(call.function.arguments or "{}")
        history.append({"role": "tool", "tool_call_id": call.id, "content": get_weather(**arguments)})
    return bool(message.tool_calls)


def agent(client: openai.OpenAI, stream: bool) -> str:
    """Ask, run the tools the model calls, ask again, until it answers."""
    history: list[Any] = [{"role": "system", "content": WEATHER.system}, {"role": "user", "content": QUESTION}]
    while True:
        if stream:
            with client.chat.completions.stream(**_request(history, stream)) as events:
                message = events.get_final_completion().choices[0].message
        else:
            message = client.chat.completions.create(**_request(history, stream)).choices[0].message
        if not _tool_outputs(history, message):
            return str(message.content)


async def async_agent(client: openai.AsyncOpenAI, stream: bool) -> str:
    history: list[Any] = [{"role": "system", "content": WEATHER.system}, {"role": "user", "content": QUESTION}]
    while True:
        if stream:
            async with client.chat.completions.stream(**_request(history, stream)) as events:
                message = (await events.get_final_completion()).choices[0].message
        else:
            message = (await client.chat.completions.create(**_request(history, stream))).choices[0].message
        if not _tool_outputs(history, message):
            return str(message.content)


# --- the runs ----------------------------------------------------------------------------------------------------


@dataclass
class Run:
    trace: Trace
    spans: list[ReadableSpan]
    answer: str

    def invariant(self) -> list[dict[str, Any]]:
        return [e.to_invariant() for e in self.trace.events]

    def steps(self) -> list[dict[str, Any]]:
        keys = ("model", "provider", "response_id", "finish_reasons", "usage")
        return [
            {k: e.metadata.get(k) for k in keys}
            for e in self.trace.events
            if e.role == "assistant" and "model" in e.metadata
        ]


@contextlib.contextmanager
def genai_openai(monkeypatch: pytest.MonkeyPatch, capture: str, provider: TracerProvider) -> Iterator[None]:
    """genai-openai instrumented on ``provider`` with ``capture`` (read when instrumenting), its events to a
    ``LoggerProvider`` that hands them to the fold."""
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    monkeypatch.setenv(CAPTURE, capture)
    logs = LoggerProvider()
    logs.add_log_record_processor(GenAIEventLogProcessor())
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider, logger_provider=logs)
    try:
        yield
    finally:
        instrumentor.uninstrument()


@contextlib.contextmanager
def spanfold_own(provider: TracerProvider) -> Iterator[None]:
    """spanfold's own OpenAI instrumentation on ``provider``, content captured (the reference run)."""
    from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor

    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider, runtime=Runtime(capture_content=True))
    try:
        yield
    finally:
        instrumentor.uninstrument()


Instrument = Callable[[TracerProvider], AbstractContextManager[None]]


def run(case: Case, instrument: Instrument, *, exporter: bool = False, root: bool = True) -> Run:
    """``case`` against a fresh mock server, instrumented by ``instrument(provider)``, folded by a
    ``FoldingSpanProcessor`` (``exporter``: a ``FoldingSpanExporter`` behind the SDK's ``BatchSpanProcessor``), in
    one root span (``root=False``: the calls un-parented, stitched by the fold)."""
    writer = MemoryWriter()
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    folding: FoldingSpanProcessor | BatchSpanProcessor
    if exporter:
        folding = BatchSpanProcessor(FoldingSpanExporter(writers=[writer]))
    else:
        folding = FoldingSpanProcessor([writer], stitch=not root)
    provider.add_span_processor(folding)
    try:
        with instrument(provider), MockLLMServer() as server:
            server.script(*case.replies)
            span = provider.get_tracer("weather-app").start_as_current_span("agent run")
            with span if root else contextlib.nullcontext():
                if case.asynchronous:
                    client = openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
                    answer = asyncio.run(async_agent(client, case.stream))
                else:
                    sync = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
                    answer = agent(sync, case.stream)
        assert folding.force_flush(30_000)
    finally:
        provider.shutdown()
    (trace,) = writer.traces
    return Run(trace, list(spans.get_finished_spans()), answer)


def model_spans(r: Run) -> list[ReadableSpan]:
    return [s for s in r.spans if s.name == f"chat {MODEL}"]


@pytest.fixture(autouse=True)
def _empty_buffer() -> Iterator[None]:
    genai_events.BUFFER.clear()
    yield
    genai_events.BUFFER.clear()


@pytest.fixture(scope="module")
def reference() -> dict[str, Run]:
    """Each case as spanfold's own instrumentation folds it."""
    return {name: run(case, spanfold_own) for name, case in CASES.items()}


# --- the tests ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("capture", ["span_only", "event_only", "span_and_event"])
@pytest.mark.parametrize("name", list(CASES))
def test_folds_as_spanfold_own_run(
    monkeypatch: pytest.MonkeyPatch, reference: dict[str, Run], name: str, capture: str
) -> None:
    case = CASES[name]
    r = run(case, lambda provider: genai_openai(monkeypatch, capture, provider))
    assert r.answer == (HELLO if case.plain else ANSWER)
    spans = model_spans(r)
    assert len(spans) == len(case.replies)
    assert {s.instrumentation_scope.name for s in spans if s.instrumentation_scope} == {SCOPE}
    on_span = capture != "event_only"
    assert all(("gen_ai.input.messages" in (s.attributes or {})) is on_span for s in spans)

    assert r.invariant() == _events(case)
    assert r.invariant() == reference[name].invariant()
    assert r.steps() == _steps(case) == reference[name].steps()
    meta = r.trace.meta
    assert meta.models == [MODEL]
    assert meta.status == "complete"
    usage = [step["usage"] for step in _steps(case)]
    assert [(s.attributes or {}).get("gen_ai.usage.input_tokens") for s in spans] == [u["input_tokens"] for u in usage]
    assert (
        meta.usage.input_tokens
        == sum(u["input_tokens"] for u in usage)
        == reference[name].trace.meta.usage.input_tokens
    )
    assert (
        meta.usage.output_tokens
        == sum(u["output_tokens"] for u in usage)
        == reference[name].trace.meta.usage.output_tokens
    )
    assert len(genai_events.BUFFER) == 0  # every event taken by its span's fold
    assert counters.snapshot().get("faults", 0) == 0


def test_span_attributes_speak_the_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    """With content on the span no rewriter touches it: what genai-openai writes there is the contract's."""
    r = run(CASES["tool-loop"], lambda provider: genai_openai(monkeypatch, "span_only", provider))
    for span in model_spans(r):
        record = from_readable(span)
        assert [rewrite(record) for rewrite in REWRITERS] == [None] * len(REWRITERS)


def test_events_carry_the_messages_the_span_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """``event_only``: the span has model, usage, ids and finish reasons; the messages are in the details event,
    structured (not JSON text), and the fold reads them from there."""
    captured: list[Any] = []

    class Keep(GenAIEventLogProcessor):
        def on_emit(self, log_record: Any) -> None:
            captured.append(log_record.log_record)
            super().on_emit(log_record)

    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    monkeypatch.setenv(CAPTURE, "event_only")
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    logs = LoggerProvider()
    logs.add_log_record_processor(Keep())
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider, logger_provider=logs)
    try:
        with MockLLMServer() as server:
            server.script(*LOOP)
            agent(openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0), stream=False)
    finally:
        instrumentor.uninstrument()
    first = spans.get_finished_spans()[0]
    assert "gen_ai.output.messages" not in (first.attributes or {})
    assert [r.event_name for r in captured] == [genai_events.DETAILS_EVENT] * 2
    assert captured[0].span_id == first.context.span_id
    output = captured[0].attributes["gen_ai.output.messages"]
    assert not isinstance(output, str)
    assert output[0]["parts"][0]["name"] == "get_weather"
    rewritten = genai_events.rewrite(from_readable(first))
    assert rewritten is not None
    assert json.loads(rewritten[1]["gen_ai.input.messages"])[1]["parts"] == [{"type": "text", "content": QUESTION}]
    attrs = rewritten[1]
    assert json.loads(attrs["gen_ai.output.messages"])[0]["parts"] == [
        {"arguments": {"city": "Paris"}, "name": "get_weather", "id": "call_mock_1", "type": "tool_call"}
    ]


def test_without_content_keeps_models_and_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    r = run(CASES["tool-loop"], lambda provider: genai_openai(monkeypatch, "no_content", provider))
    assert all("gen_ai.input.messages" not in (s.attributes or {}) for s in model_spans(r))
    assert r.trace.events == []
    assert r.trace.meta.models == [MODEL]
    assert r.trace.meta.usage.input_tokens == TOOL_TOKENS.input_tokens + ANSWER_TOKENS.input_tokens
    assert r.trace.meta.usage.output_tokens == TOOL_TOKENS.output_tokens + ANSWER_TOKENS.output_tokens
    assert [s["model"] for s in r.trace.meta.to_dict()["steps"]] == [MODEL, MODEL]


@pytest.mark.parametrize("capture", ["span_only", "event_only"])
def test_through_the_span_exporter(monkeypatch: pytest.MonkeyPatch, capture: str) -> None:
    """The zero-code path: a ``FoldingSpanExporter`` behind the SDK's ``BatchSpanProcessor``."""
    r = run(CASES["tool-loop"], lambda provider: genai_openai(monkeypatch, capture, provider), exporter=True)
    assert r.invariant() == _events(CASES["tool-loop"])
    assert r.steps() == _steps(CASES["tool-loop"])


@pytest.mark.parametrize("capture", ["span_only", "event_only"])
def test_unparented_calls_stitched_into_one_run(monkeypatch: pytest.MonkeyPatch, capture: str) -> None:
    """No agent span: each call is a trace of its own, and the fold stitches them by their histories."""
    r = run(CASES["tool-loop"], lambda provider: genai_openai(monkeypatch, capture, provider), root=False)
    assert len({s.context.trace_id for s in model_spans(r)}) == 2
    assert r.invariant() == _events(CASES["tool-loop"])
    assert r.steps() == _steps(CASES["tool-loop"])

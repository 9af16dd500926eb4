"""The weather agent instrumented by each producer of GenAI spans: spanfold, the official OpenTelemetry OpenAI
instrumentation (latest attributes, and its older per-message log events), OpenLLMetry and OpenInference.

Each run is the real SDK (``openai`` / ``anthropic``) over real HTTP to the embedded mock server, instrumented by the
producer's real package on the process's global TracerProvider, inside one plain root span (so the calls share a
trace), with the tool functions traced the producer's way. The producer is instrumented for the run only and
uninstrumented after it, and spanfold's own instrumentation is off while a peer runs, so test order never matters.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import spanfold.setup
from spanfold.exporter.dialects.genai_event_logs import GenAIEventLogProcessor
from spanfold.exporter.fold.folding import fold
from spanfold.exporter.records import from_readable
from spanfold.instrumentation import registry
from spanfold.testing import WEATHER, MockLLMServer, scenarios
from spanfold.testing.agents import PROVIDERS
from spanfold.trace.model import Trace

#: run_tool(name, arguments JSON, call id) -> the result text the model gets back
ToolRunner = Callable[[str, str, str], str]


@dataclass
class Run:
    """One instrumented agent run: its finished spans, the agent's answer and message history."""

    spans: list[ReadableSpan]
    answer: str
    server: MockLLMServer
    history: list[Any] = field(default_factory=list)
    _trace: Trace | None = None

    def openai_client(self) -> openai.OpenAI:
        return openai.OpenAI(api_key="sk-test", base_url=self.server.base_url, max_retries=0)

    def anthropic_client(self, *, native_spans: bool = False) -> anthropic.Anthropic:
        """A client with the SDK's own spans off (unless asked): a peer's run shows that peer's spans only."""
        options: dict[str, Any] = {} if native_spans else {"open_telemetry": False}  # the SDK's default: on
        return anthropic.Anthropic(
            api_key="sk-ant-test", base_url=self.server.anthropic_base_url, max_retries=0, **options
        )

    def fold(self) -> Trace:
        """The run's flat trace (folded once: the fold takes buffered log events, as it does in the processor)."""
        if self._trace is None:
            records = [from_readable(s) for s in self.spans]
            self._trace = fold(records, trace_id=format(records[0].trace_id, "032x"))
        return self._trace

    def invariant(self) -> list[dict[str, Any]]:
        return [e.to_invariant() for e in self.fold().events]

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name.startswith(prefix)]


# --- the agent loops (the demo's, with the tool runner a parameter) ---------------------------------------------------


def plain_tool(name: str, arguments: str, call_id: str) -> str:
    return scenarios.run_weather_tool(name, json.loads(arguments or "{}"))


def chat_agent(client: openai.OpenAI, run_tool: ToolRunner, history: list[Any], *, stream: bool = False) -> str:
    history += [{"role": "system", "content": WEATHER.system}, {"role": "user", "content": WEATHER.question}]
    for _ in range(6):
        request: dict[str, Any] = {
            "model": PROVIDERS["openai"].model,
            "messages": history,
            "tools": scenarios.WEATHER_TOOLS_OPENAI,
        }
        if stream:
            with client.chat.completions.stream(**request) as s:
                message = s.get_final_completion().choices[0].message
        else:
            message = client.chat.completions.create(**request).choices[0].message
        history.append(message)
        if not message.tool_calls:
            return str(message.content or "")
        for call in message.tool_calls:
            result = run_tool(call.function.name, call.function.arguments, call.id)
            history.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise AssertionError("the agent did not finish")


def anthropic_agent(client: anthropic.Anthropic, run_tool: ToolRunner, history: list[Any]) -> str:
    history.append({"role": "user", "content": WEATHER.question})
    for _ in range(6):
        message = client.messages.create(
            model=PROVIDERS["anthropic"].model,
            max_tokens=1024,
            system=WEATHER.system,
            messages=history,
            tools=scenarios.WEATHER_TOOLS_ANTHROPIC,
        )
        history.append({"role": "assistant", "content": message.content})
        uses = [b for b in message.content if b.type == "tool_use"]
        if not uses:
            return "".join(b.text for b in message.content if b.type == "text")
        results = [
            {"type": "tool_result", "tool_use_id": u.id, "content": run_tool(u.name, json.dumps(u.input), u.id)}
            for u in uses
        ]
        history.append({"role": "user", "content": results})
    raise AssertionError("the agent did not finish")


# --- environment switches -------------------------------------------------------------------------------------------


@contextlib.contextmanager
def environ(**values: str) -> Iterator[None]:
    """Set environment variables for a block (and re-read the semconv opt-in both ways)."""
    from opentelemetry.instrumentation._semconv import _OpenTelemetrySemanticConventionStability as stability

    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    stability._initialized = False  # the opt-in is read once per process; read it again
    stability._initialize()
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
        stability._initialized = False
        stability._initialize()


def _sdk_classes() -> dict[type, dict[str, Any]]:
    """The attributes of every class of the imported openai / anthropic modules (what instrumentors patch)."""
    out: dict[type, dict[str, Any]] = {}
    for name, module in list(sys.modules.items()):
        if module is None or name.partition(".")[0] not in ("openai", "anthropic"):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == name:
                out[value] = dict(vars(value))
    return out


def _restore(saved: dict[type, dict[str, Any]]) -> list[str]:
    """Put back every class attribute that changed since ``saved``; the names of those that had to be."""
    restored = []
    for cls, before in saved.items():
        for key, value in list(vars(cls).items()):
            if key in before and before[key] is not value:
                setattr(cls, key, before[key])
                restored.append(f"{cls.__qualname__}.{key}")
    return restored


#: Patches a peer's ``uninstrument()`` left behind in the last run (OpenLLMetry 0.62.4 leaves
#: ``Completions.create`` wrapped: its ``unwrap("openai.resources.chat.completions", "Completions.create")`` finds
#: nothing with opentelemetry-instrumentation 0.66).
LEFT_PATCHED: list[str] = []


@contextlib.contextmanager
def instrumented(instrumentor: Any, **kwargs: Any) -> Iterator[None]:
    """An instrumentor on for a block only. spanfold's own is turned off first, and whatever the instrumentor's
    ``uninstrument()`` leaves patched in the SDKs is put back, so no run sees another producer's patches."""
    assert spanfold.setup.current() is None, "spanfold.init() is active: a peer run would be traced twice"
    registry.uninstrument_all()
    saved = _sdk_classes()
    instrumentor.instrument(**kwargs)
    try:
        yield
    finally:
        instrumentor.uninstrument()
        LEFT_PATCHED[:] = _restore(saved)


# --- tool tracing the producers' way ---------------------------------------------------------------------------------


def openinference_tools(provider: TracerProvider, config: Any = None) -> ToolRunner:
    """The weather tools decorated with OpenInference's own ``OITracer.tool`` (``config``: its ``TraceConfig``)."""
    from openinference.instrumentation import OITracer, TraceConfig

    tracer = OITracer(provider.get_tracer("weather-agent"), config=config or TraceConfig())
    tools = {
        "get_weather": tracer.tool(scenarios.get_weather),
        "convert_temperature": tracer.tool(scenarios.convert_temperature),
    }
    return lambda name, arguments, call_id: str(tools[name](**json.loads(arguments or "{}")))


def traceloop_tool(provider: TracerProvider, fn: Callable[..., Any]) -> Callable[..., Any]:
    """What the traceloop SDK's ``@tool`` decorator records (``traceloop.sdk.decorators.base``, 0.62: span
    ``{name}.tool`` on the ``traceloop.tracer`` scope, kind / entity name / ``gen_ai.tool.name``, the JSON of
    ``{"args", "kwargs"}`` in, the JSON of the result out, both only when ``TRACELOOP_TRACE_CONTENT`` is not
    ``false``), with the attribute names from OpenLLMetry's own
    ``opentelemetry-semantic-conventions-ai``. traceloop-sdk itself is not installed: it pins every OpenLLMetry
    instrumentation and an older OpenTelemetry SDK."""
    from opentelemetry.semconv_ai import SpanAttributes, TraceloopSpanKindValues

    tracer = provider.get_tracer("traceloop.tracer")
    kind = TraceloopSpanKindValues.TOOL.value
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with tracer.start_as_current_span(f"{name}.{kind}") as span:
            span.set_attribute(SpanAttributes.TRACELOOP_SPAN_KIND, kind)
            span.set_attribute(SpanAttributes.TRACELOOP_ENTITY_NAME, name)
            span.set_attribute("gen_ai.tool.name", name)
            content = (os.getenv("TRACELOOP_TRACE_CONTENT") or "true").lower() == "true"
            if content:
                span.set_attribute(SpanAttributes.TRACELOOP_ENTITY_INPUT, json.dumps({"args": args, "kwargs": kwargs}))
            result = fn(*args, **kwargs)
            if content:
                span.set_attribute(SpanAttributes.TRACELOOP_ENTITY_OUTPUT, json.dumps(result))
            return result

    return wrapper


def traceloop_tools(provider: TracerProvider) -> ToolRunner:
    tools = {n: traceloop_tool(provider, getattr(scenarios, n)) for n in ("get_weather", "convert_temperature")}
    return lambda name, arguments, call_id: str(tools[name](**json.loads(arguments or "{}")))


# --- the producers -----------------------------------------------------------------------------------------------


@dataclass
class Harness:
    """The global provider and its in-memory exporter; each run gets a fresh mock server (same tool-call ids)."""

    provider: TracerProvider
    exporter: InMemorySpanExporter

    @contextlib.contextmanager
    def run(self) -> Iterator[Run]:
        """A fresh weather-agent server and a root span around the block; the run's spans once it ends."""
        self.exporter.clear()
        with MockLLMServer(scenarios.weather_agent) as server:
            out = Run(spans=[], answer="", server=server)
            with trace.get_tracer("weather-run").start_as_current_span("weather run"):
                yield out
        out.spans = list(self.exporter.get_finished_spans())
        self.exporter.clear()


def run_spanfold(h: Harness, *, api: str = "openai") -> Run:
    from spanfold.content.runtime import Runtime
    from spanfold.instrumentation.providers.anthropic.patches import AnthropicInstrumentor
    from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor

    instrumentor = AnthropicInstrumentor() if api == "anthropic" else OpenAIInstrumentor()
    with (
        instrumented(instrumentor, tracer_provider=h.provider, runtime=Runtime(capture_content=True)),
        h.run() as run,
    ):
        if api == "anthropic":
            run.answer = anthropic_agent(run.anthropic_client(), WEATHER.run_tool, run.history)
        else:
            run.answer = chat_agent(run.openai_client(), WEATHER.run_tool, run.history)
    return run


def run_otel_v2_latest(h: Harness, *, capture: str = "SPAN_ONLY", stream: bool = False) -> Run:
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    env = {
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": capture,
    }
    with environ(**env), instrumented(OpenAIInstrumentor(), tracer_provider=h.provider), h.run() as run:
        run.answer = chat_agent(run.openai_client(), plain_tool, run.history, stream=stream)
    return run


def run_otel_v2_events(h: Harness, *, capture: bool = True, stream: bool = False) -> Run:
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider

    logs = LoggerProvider()
    logs.add_log_record_processor(GenAIEventLogProcessor())  # the process's buffer, which the fold reads
    env = {"OTEL_SEMCONV_STABILITY_OPT_IN": "", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": str(capture)}
    with (
        environ(**env),
        instrumented(OpenAIInstrumentor(), tracer_provider=h.provider, logger_provider=logs),
        h.run() as run,
    ):
        run.answer = chat_agent(run.openai_client(), plain_tool, run.history, stream=stream)
    return run


def run_openllmetry(h: Harness, *, api: str = "openai", events: bool = False, native_spans: bool = False) -> Run:
    """OpenLLMetry; ``events``: its event mode (``use_attributes=False``): messages as log events, not attributes;
    ``native_spans``: the anthropic SDK's own spans on too (one API call, two producers)."""
    from opentelemetry.instrumentation.openai.shared.config import Config
    from opentelemetry.sdk._logs import LoggerProvider

    if api == "anthropic":
        from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor as Instrumentor
    else:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as Instrumentor  # type: ignore[assignment]

    kwargs: dict[str, Any] = {"tracer_provider": h.provider}
    if events:
        kwargs["logger_provider"] = logs = LoggerProvider()
        logs.add_log_record_processor(GenAIEventLogProcessor())
    saved = Config.use_legacy_attributes  # the instrumentor's constructor sets this class attribute
    try:
        instrumentor = Instrumentor(use_attributes=False) if events else Instrumentor()
        with instrumented(instrumentor, **kwargs), h.run() as run:
            tools = traceloop_tools(h.provider)
            if api == "anthropic":
                client = run.anthropic_client(native_spans=native_spans)
                run.answer = anthropic_agent(client, tools, run.history)
            else:
                run.answer = chat_agent(run.openai_client(), tools, run.history)
    finally:
        Config.use_legacy_attributes = saved
    return run


def run_openinference(h: Harness) -> Run:
    from openinference.instrumentation.openai import OpenAIInstrumentor

    with instrumented(OpenAIInstrumentor(), tracer_provider=h.provider), h.run() as run:
        run.answer = chat_agent(run.openai_client(), openinference_tools(h.provider), run.history)
    return run

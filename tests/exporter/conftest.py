"""Exporter fixtures: a real SDK TracerProvider per test with the folding processor and a MemoryWriter, and helpers
that make GenAI spans exactly as an instrumentation writes them (semconv attributes, JSON strings)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from spanfold import config
from spanfold.exporter.files.writers import MemoryWriter
from spanfold.exporter.pipeline.processor import FoldingSpanProcessor
from spanfold.trace.model import Trace

T0 = 1_700_000_000_000_000_000  # 2023-11-14T22:13:20Z
MS = 1_000_000


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- semconv messages, as an instrumentation writes them ---------------------------------------------------


def text(role: str, content: str | None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "text"} if content is None else {"type": "text", "content": content}
    return {"role": role, "parts": [part]}


def user(content: str | None) -> dict[str, Any]:
    return text("user", content)


def system(content: str | None) -> dict[str, Any]:
    return text("system", content)


def call(call_id: str | None, name: str, arguments: Any = None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "tool_call", "id": call_id, "name": name}
    if arguments is not None:
        part["arguments"] = arguments
    return part


def assistant(content: str | None = None, *calls: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "content": content}] if content is not None else []
    parts.extend(calls)
    msg: dict[str, Any] = {"role": "assistant", "parts": parts}
    if finish is not None:
        msg["finish_reason"] = finish
    return msg


def tool_msg(call_id: str | None, response: Any = None, *, capture: bool = True) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "tool_call_response", "id": call_id}
    if capture:
        part["response"] = response
    return {"role": "tool", "parts": [part]}


# --- the Invariant events expected -------------------------------------------------------------------------


def U(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def S(content: Any) -> dict[str, Any]:
    return {"role": "system", "content": content}


def A(content: Any = None, *calls: tuple[str | None, str, Any]) -> dict[str, Any]:
    event: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        event["tool_calls"] = []
        for cid, name, args in calls:
            tc: dict[str, Any] = {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            if cid is None:
                del tc["id"]
            event["tool_calls"].append(tc)
    return event


def T(call_id: str | None, content: Any, error: dict[str, Any] | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"role": "tool", "content": content}
    if call_id is not None:
        event["tool_call_id"] = call_id
    if error is not None:
        event["error"] = error
    return event


# --- span makers --------------------------------------------------------------------------------------------


class Spans:
    """Makes GenAI spans on a real tracer, on a fake clock (10 ms per tick) so ordering is deterministic."""

    def __init__(self, provider: TracerProvider, processor: FoldingSpanProcessor, writer: MemoryWriter) -> None:
        self.provider = provider
        self.processor = processor
        self.writer = writer
        self.tracer = provider.get_tracer("spanfold-tests")
        self.clock = T0

    def tick(self, ms: int = 10) -> int:
        self.clock += ms * MS
        return self.clock

    # traces ------------------------------------------------------------------------------------------------

    def flush(self) -> list[Trace]:
        assert self.processor.force_flush(10_000)
        return list(self.writer.traces)

    def one(self) -> Trace:
        traces = self.flush()
        assert len(traces) == 1, [t.to_invariant() for t in traces]
        return traces[0]

    # spans -------------------------------------------------------------------------------------------------

    @contextmanager
    def span(
        self,
        name: str,
        attributes: dict[str, Any],
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        root: bool = False,
        start: int | None = None,
        end: int | None = None,
        error: BaseException | None = None,
        error_type: str | None = None,
    ) -> Iterator[Span]:
        ctx = otel_context.Context() if root else None
        with self.tracer.start_as_current_span(
            name,
            context=ctx,
            kind=kind,
            attributes=attributes,
            start_time=start if start is not None else self.tick(),
            end_on_exit=False,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            yield span
            if error is not None:
                span.set_attribute("error.type", error_type or type(error).__qualname__)
                span.record_exception(error)
                span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
        span.end(end_time=end if end is not None else self.tick())

    @contextmanager
    def agent(self, name: str, *, conversation_id: str | None = None, root: bool = False) -> Iterator[Span]:
        attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
        if conversation_id is not None:
            attrs["gen_ai.conversation.id"] = conversation_id
        with self.span(f"invoke_agent {name}", attrs, root=root) as span:
            yield span

    def chat(
        self,
        inputs: Sequence[dict[str, Any]] | None,
        outputs: Sequence[dict[str, Any]] | None = None,
        *,
        system: Sequence[dict[str, Any]] | None = None,
        model: str = "gpt-test",
        usage: tuple[int, int] | None = (10, 5),
        error: BaseException | None = None,
        error_type: str | None = None,
        attributes: dict[str, Any] | None = None,
        root: bool = False,
    ) -> None:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": model,
        }
        if system is not None:
            attrs["gen_ai.system_instructions"] = dumps(system)
        if inputs is not None:
            attrs["gen_ai.input.messages"] = dumps(inputs)
        attrs.update(attributes or {})
        with self.span(
            f"chat {model}", attrs, kind=SpanKind.CLIENT, root=root, error=error, error_type=error_type
        ) as span:
            if error is None:
                span.set_attribute("gen_ai.response.model", model)
                if outputs is not None:
                    span.set_attribute("gen_ai.output.messages", dumps(outputs))
                if usage is not None:
                    span.set_attribute("gen_ai.usage.input_tokens", usage[0])
                    span.set_attribute("gen_ai.usage.output_tokens", usage[1])

    def tool(
        self,
        name: str,
        arguments: Any = None,
        result: Any = None,
        *,
        call_id: str | None = None,
        error: BaseException | None = None,
        root: bool = False,
        start: int | None = None,
        end: int | None = None,
        capture: bool = True,
    ) -> None:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.type": "function",
        }
        if call_id is not None:
            attrs["gen_ai.tool.call.id"] = call_id
        if capture and arguments is not None:
            attrs["gen_ai.tool.call.arguments"] = dumps(arguments)
        with self.span(f"execute_tool {name}", attrs, root=root, start=start, end=end, error=error) as span:
            if capture and error is None and result is not None:
                span.set_attribute("gen_ai.tool.call.result", result if isinstance(result, str) else dumps(result))


def make_config(**overrides: Any) -> config.Config:
    base: dict[str, Any] = {"stitch_idle": 60.0, "trace_timeout": 60.0}
    base.update(overrides)
    return config.load(base, environ={})


@contextmanager
def harness(**overrides: Any) -> Iterator[Spans]:
    writer = MemoryWriter()
    processor = FoldingSpanProcessor([writer], make_config(**overrides), poll_interval=0.05)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    try:
        yield Spans(provider, processor, writer)
    finally:
        provider.shutdown()


@pytest.fixture
def spans() -> Iterator[Spans]:
    with harness() as s:
        yield s

"""Peak memory of spans streamed through ``FoldingSpanProcessor``: ``python bench/memory_1m.py [SPANS ...]``.

Feeds SDK ``ReadableSpan``s (agent runs: an ``invoke_agent`` root over two ``chat`` spans and one ``execute_tool``
span; every tenth run's root never ends) through the processor's public ``on_start``/``on_end``, flushing every
``BATCH`` spans so nothing is dropped, into a writer that only counts. Prints the traced peak (``tracemalloc``, all
threads) for each size and its ratio to the first: flat means memory does not grow with the number of spans.
Default sizes: 100,000, 300,000 and 1,000,000 spans. ``tests/reliability/test_bounded_memory.py`` runs the same
workload at smaller sizes.
"""

from __future__ import annotations

import gc
import json
import sys
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, SpanKind, TraceFlags

from spanfold import config, counters
from spanfold.exporter.pipeline.processor import FoldingSpanProcessor
from spanfold.trace.model import Trace

BATCH = 20_000
SPANS_PER_RUN = 4
STUCK_EVERY = 10
RESOURCE = Resource.create({"service.name": "memory-bench"})
T0 = 1_700_000_000_000_000_000


class CountingWriter:
    """Counts traces by status and keeps none of them."""

    def __init__(self) -> None:
        self.by_status: dict[str, int] = {}

    def write(self, trace: Trace) -> None:
        self.by_status[trace.meta.status] = self.by_status.get(trace.meta.status, 0) + 1

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None


def _ctx(trace_id: int, span_id: int) -> SpanContext:
    return SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def _span(name: str, ctx: SpanContext, parent: SpanContext | None, attrs: dict[str, Any], t: int) -> ReadableSpan:
    return ReadableSpan(
        name=name,
        context=ctx,
        parent=parent,
        resource=RESOURCE,
        attributes=attrs,
        kind=SpanKind.CLIENT if name.startswith("chat") else SpanKind.INTERNAL,
        start_time=t,
        end_time=t + 1000,
    )


def _msgs(*pairs: tuple[str, dict[str, Any]]) -> str:
    return json.dumps([{"role": role, "parts": [part]} for role, part in pairs])


def run_spans(run: int) -> Iterator[tuple[SpanContext, ReadableSpan | None]]:
    """One agent run's spans in end order, each with the context it started with (``None``: it never ends)."""
    trace_id = run + 1
    root = _ctx(trace_id, 1)
    t = T0 + run * 10_000
    user = ("user", {"type": "text", "content": f"Weather in city {run}?"})
    call = ("assistant", {"type": "tool_call", "id": f"call_{run}", "name": "get_weather", "arguments": {"c": run}})
    result = ("tool", {"type": "tool_call_response", "id": f"call_{run}", "response": "sunny"})
    chat = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o"}
    yield _ctx(trace_id, 2), _span(
        "chat gpt-4o", _ctx(trace_id, 2), root,
        {**chat, "gen_ai.input.messages": _msgs(user), "gen_ai.output.messages": _msgs(call)}, t + 1,
    )  # fmt: skip
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": f"call_{run}",
    }
    yield _ctx(trace_id, 3), _span("execute_tool get_weather", _ctx(trace_id, 3), root, tool, t + 2)
    done = ("assistant", {"type": "text", "content": f"Sunny in city {run}."})
    yield _ctx(trace_id, 4), _span(
        "chat gpt-4o", _ctx(trace_id, 4), root,
        {**chat, "gen_ai.input.messages": _msgs(user, call, result), "gen_ai.output.messages": _msgs(done)}, t + 3,
    )  # fmt: skip
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bench"}
    yield root, None if run % STUCK_EVERY == STUCK_EVERY - 1 else _span("invoke_agent bench", root, None, agent, t)


@dataclass
class Result:
    spans: int
    peak_bytes: int
    writer: CountingWriter
    stats: dict[str, Any]


class _Started:
    """What ``on_start`` reads of a span: its context."""

    __slots__ = ("context",)

    def __init__(self, context: SpanContext) -> None:
        self.context = context


def measure(spans: int, **options: Any) -> Result:
    """Stream ``spans`` spans through a fresh processor; the traced peak memory while doing it."""
    counters.reset()
    writer = CountingWriter()
    cfg = config.load({"max_traces_in_flight": 500, "trace_timeout": 3600.0, **options})
    processor = FoldingSpanProcessor([writer], cfg)
    gc.collect()
    tracemalloc.start()
    try:
        fed = 0
        run = 0
        while fed < spans:
            for ctx, span in run_spans(run):
                processor.on_start(_Started(ctx))  # type: ignore[arg-type]
                if span is not None:
                    processor.on_end(span)
                fed += 1
            run += 1
            if fed % BATCH < SPANS_PER_RUN:
                processor.force_flush(60_000)
        processor.force_flush(60_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        processor.shutdown()
    return Result(fed, peak, writer, counters.snapshot())


def main(argv: list[str]) -> None:
    sizes = [int(a) for a in argv[1:]] or [100_000, 300_000, 1_000_000]
    first: int | None = None
    for n in sizes:
        result = measure(n)
        first = first or result.peak_bytes
        print(
            f"{result.spans:>9,} spans  peak {result.peak_bytes / 2**20:7.1f} MiB  x{result.peak_bytes / first:4.2f}  "
            f"traces {result.writer.by_status}  dropped {result.stats.get('dropped_spans', 0)}"
        )


if __name__ == "__main__":
    main(sys.argv)

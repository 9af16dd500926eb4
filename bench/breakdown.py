"""Where one call's overhead goes: spanfold's pieces timed alone, in one process (best of several repeats).

The peer table (``bench/overhead.py``) says how much a call costs; this says which piece costs it, for the same
workload (10-message history + 2 tools; a streamed call of 53 chunks). Best-of-N timings of small pieces are steady
even on a busy machine, so use them to compare before and after a change.

Calling thread (the user's call): the request and response attributes, the stream accumulator, the OTel SDK span
(start with the request attributes, end with the result attributes). Folding worker, per call (one trace of one model
span, stitched as an un-parented call): span -> record, record -> step (attribute parse), stitcher, fold, encode the
JSONL lines, write them; and the whole worker path (``Assembler.add`` + flush) to show what the pieces leave out.

    python bench/breakdown.py
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workload


def best_us(fn: Callable[[], Any], number: int, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def record_calls(kind: str, calls: int) -> list[Any]:
    """ReadableSpans of ``calls`` calls of the workload, recorded by spanfold's instrumentation."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from spanfold.instrumentation.openai import OpenAIInstrumentor
    from spanfold.instrumentation.spans import Settings

    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider, settings=Settings(capture_content=True))
    try:
        workload.run(kind, 10, calls, calls)
    finally:
        instrumentor.uninstrument()
    return list(memory.get_finished_spans())


def calling_thread() -> list[tuple[str, float]]:
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import SpanKind

    from spanfold.instrumentation import openai_chat
    from spanfold.instrumentation.spans import ModelSpan

    kwargs = {"model": workload.MODEL, "messages": workload.history(10), "tools": workload.TOOLS}
    response = ChatCompletion.model_validate(workload.COMPLETION)
    body = workload.STREAM_BODY.decode()
    chunks = [
        ChatCompletionChunk.model_validate(json.loads(e[6:])) for e in body.split("\n\n") if e.startswith("data: {")
    ]
    tracer = TracerProvider().get_tracer("bench")
    request = openai_chat.request_attributes(dict(kwargs), True)[1]
    result = openai_chat.response_attributes(response, True)

    def accumulate() -> Any:
        acc = openai_chat.ChatStreamAccumulator(True)
        for chunk in chunks:
            acc.add(chunk)
        return acc.attributes()

    def span() -> None:
        ModelSpan(tracer, "chat gpt-4o-mini", request, kind=SpanKind.CLIENT).finish(result)

    return [
        (
            "request attributes (10 messages, 2 tools; history cached)",
            best_us(lambda: openai_chat.request_attributes(dict(kwargs), True), 2000),
        ),
        ("response attributes", best_us(lambda: openai_chat.response_attributes(response, True), 2000)),
        ("stream: accumulate 53 chunks + result attributes", best_us(accumulate, 300)),
        ("OTel SDK span: start with request attributes, end with result", best_us(span, 2000)),
    ]


def worker(kind: str) -> list[tuple[str, float]]:
    from spanfold import config
    from spanfold.exporter import dialects
    from spanfold.exporter.assembler import Assembler, Policy
    from spanfold.exporter.fold import fold
    from spanfold.exporter.records import from_readable
    from spanfold.exporter.stitch import Stitcher, stitch_root
    from spanfold.exporter.writers import JsonlWriter
    from spanfold.trace import formats

    spans = record_calls(kind, 400)
    records = [from_readable(s) for s in spans]
    steps = [{r.span_id: dialects.safe_step(r)} for r in records]
    traces = [fold([r], trace_id="bench", steps=s) for r, s in zip(records, steps, strict=True)]
    n = len(records)

    def each(fn: Callable[[int], Any]) -> Callable[[], None]:
        def run() -> None:
            for i in range(n):
                fn(i)

        return run

    def stitch() -> None:
        stitcher = Stitcher()
        for i, r in enumerate(records):
            root = stitch_root([r], steps[i])
            if root is not None:
                stitcher.add(root, r.trace_id, [r], steps[i], "complete", 0.0)

    directory = tempfile.mkdtemp(prefix="spanfold-bench-")
    writer = JsonlWriter(directory, "invariant")
    assembler = Assembler([JsonlWriter(directory, "invariant")], config.load({"output": directory}), Policy())

    def assemble() -> None:
        for r in records:
            now = time.monotonic()
            assembler.started(r.trace_id, r.span_id, now)
            assembler.add(_fresh(r), now)
        assembler.flush(time.monotonic(), final=False)

    per = 1 / n
    rows = [
        ("span -> SpanRecord", best_us(each(lambda i: from_readable(spans[i])), 1) * per),
        (
            "record -> step (dialects: attribute parse)",
            best_us(each(lambda i: dialects.to_step(_fresh(records[i]))), 1) * per,
        ),
        ("stitcher: find / open the conversation", best_us(stitch, 1) * per),
        ("fold the trace", best_us(each(lambda i: fold([records[i]], trace_id="bench", steps=steps[i])), 1) * per),
        (
            "encode the JSONL lines (events + meta)",
            best_us(each(lambda i: (formats.encode_line(traces[i], "invariant"), formats.meta_line(traces[i]))), 1)
            * per,
        ),
        ("JsonlWriter.write (encode + append both lines)", best_us(each(lambda i: writer.write(traces[i])), 1) * per),
        ("whole worker path: Assembler.add + flush", best_us(assemble, 1) * per),
    ]
    writer.close()
    shutil.rmtree(directory, ignore_errors=True)
    return rows


def _fresh(record: Any) -> Any:
    """A copy of the record (the dialect may replace its attribute mapping by a plain dict)."""
    import copy

    return copy.copy(record)


def main() -> None:
    print(
        "machine: load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min), {} cores".format(*os.getloadavg(), os.cpu_count())
    )
    print("\nspanfold, per call: best of 7 repeats (µs)\n")
    print("| where | piece | sync | stream |")
    print("|---|---|---|---|")
    for label, us in calling_thread():
        print(f"| calling thread | {label} | {us:,.1f} | |")
    sync, stream = worker("sync"), worker("stream")
    for (label, a), (_, b) in zip(sync, stream, strict=True):
        print(f"| folding worker | {label} | {a:,.1f} | {b:,.1f} |")


if __name__ == "__main__":
    main()

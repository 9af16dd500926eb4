"""Where one call's overhead goes: spanfold's pieces timed alone, in one process (best of several repeats).

The peer table (``bench/overhead.py``) says how much a call costs; this says which piece costs it, for the same
workload (10-message history + 2 tools; a streamed call of 53 chunks). Best-of-N timings of small pieces are steady
even on a busy machine, so use them to compare before and after a change.

Calling thread (the user's call): the request and response attributes, the stream accumulator, the OTel SDK span
(start with the request attributes, end with the result attributes). Folding worker, per call (one trace of one model
span, stitched as an un-parented call): span -> record, record -> step (attribute parse), stitcher, fold, encode the
JSONL lines, write them; and the whole worker path (``Assembler.add`` + flush) to show what the pieces leave out, from
records (a copy of each) and from the SDK's spans (each read into a record, as the worker reads them).

Last, the calling thread's pieces again, timed inside the real process between the SDK's own calls (timers around
each piece, their own cost taken off): the same code costs several times more there than alone.

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
from spans import recorded

#: Rows of the pieces timed alone that the in-process table compares with.
REQUEST_ROW = "request attributes (10 messages, 2 tools; history cached)"
RESPONSE_ROW = "response attributes"
SPAN_ROW = "OTel SDK span: start with request attributes, end with result"
STITCH_ROW = "stitching at the source: find the conversation, open one, register the outputs"


def best_us(fn: Callable[[], Any], number: int, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def record_calls(kind: str, calls: int) -> list[Any]:
    """ReadableSpans of ``calls`` calls of the workload, recorded by spanfold's instrumentation."""
    with recorded() as memory:
        workload.run(kind, 10, calls, calls)
    return list(memory.get_finished_spans())


def calling_thread() -> list[tuple[str, float]]:
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import SpanKind

    from spanfold.content.runtime import Runtime
    from spanfold.instrumentation.providers.openai import chat as openai_chat
    from spanfold.instrumentation.toolkit import attributes
    from spanfold.instrumentation.toolkit.spans import ModelSpan
    from spanfold.stitching.conversations import Conversations

    rt = Runtime(capture_content=True)

    kwargs = {"model": workload.MODEL, "messages": workload.history(10), "tools": workload.TOOLS}
    response = ChatCompletion.model_validate(workload.COMPLETION)
    body = workload.STREAM_BODY.decode()
    chunks = [
        ChatCompletionChunk.model_validate(json.loads(e[6:])) for e in body.split("\n\n") if e.startswith("data: {")
    ]
    tracer = TracerProvider().get_tracer("bench")

    def request_attributes() -> dict[str, Any]:
        return attributes.request(openai_chat.request(dict(kwargs)), "openai", rt)

    def response_attributes() -> dict[str, Any]:
        return attributes.response(openai_chat.response(response), "openai", rt)

    request = request_attributes()
    result = response_attributes()

    def accumulate() -> Any:
        acc = openai_chat.ChatStreamAccumulator()
        for chunk in chunks:
            acc.add(chunk)
        return attributes.response(acc.result(), "openai", rt)

    def span() -> None:
        ModelSpan(tracer, "chat gpt-4o-mini", request, kind=SpanKind.CLIENT, rt=rt).finish(result)

    conversations = Conversations()
    first = tracer.start_span("first")

    def stitch() -> None:  # an un-parented call that extends nothing: look up, open, register its outputs
        turn = conversations.turn(request)
        turn.started(first)
        turn.done(result)

    return [
        (
            REQUEST_ROW,
            best_us(request_attributes, 2000),
        ),
        (RESPONSE_ROW, best_us(response_attributes, 2000)),
        ("stream: accumulate 53 chunks + result attributes", best_us(accumulate, 300)),
        (SPAN_ROW, best_us(span, 2000)),
        (STITCH_ROW, best_us(stitch, 2000)),
    ]


def in_process(calls: int) -> dict[str, float]:
    """The calling thread's pieces timed inside the real process (sync calls of the workload, spanfold set up as
    ``spanfold.init()`` does): CPU µs per call, the timers' own cost taken off. Patches spanfold: run it last."""
    from spanfold.instrumentation.providers.openai import patches as sf_openai
    from spanfold.instrumentation.toolkit.spans import ModelSpan
    from spanfold.stitching import conversations

    totals: dict[str, int] = {}

    def timed(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                totals[label] = totals.get(label, 0) + time.thread_time_ns() - start

        return run

    chat = sf_openai.CHAT  # the wrappers read the API's shape functions per call: time them in place
    for field in ("request", "server", "response"):
        object.__setattr__(chat, field, timed(field, getattr(chat, field)))
    conversations.Turn.done = timed("stitch: register", conversations.Turn.done)  # type: ignore[method-assign]
    conversations.Conversations.turn = timed("stitch: find", conversations.Conversations.turn)  # type: ignore[method-assign]
    ModelSpan.__init__ = timed("start", ModelSpan.__init__)  # type: ignore[method-assign]
    ModelSpan.finish = timed("finish", ModelSpan.finish)  # type: ignore[method-assign]
    workload.setup_spanfold()
    workload.run("sync", 10, 100, 50)  # warm-up
    totals.clear()
    workload.run("sync", 10, calls, 50)
    shim = timed("shim", lambda: None)
    for _ in range(calls):
        shim()
    cost = totals.pop("shim")
    return {label: max(0, ns - cost) / calls / 1000 for label, ns in totals.items()}


def worker(kind: str) -> list[tuple[str, float]]:
    from spanfold import config
    from spanfold.exporter.dialects import dispatch as dialects
    from spanfold.exporter.files.writers import JsonlWriter
    from spanfold.exporter.fold.folding import fold
    from spanfold.exporter.pipeline.assembler import Assembler, Policy
    from spanfold.exporter.records import from_readable
    from spanfold.exporter.runs.stitch import Stitcher, stitch_root
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
                stitcher.add(root[1], r.trace_id, [r], steps[i], "complete", 0.0)

    directory = tempfile.mkdtemp(prefix="spanfold-bench-")
    writer = JsonlWriter(directory, "invariant")
    assembler = Assembler([JsonlWriter(directory, "invariant")], config.load({"output": directory}), Policy())

    def assemble() -> None:
        for r in records:
            now = time.monotonic()
            assembler.started(r.trace_id, r.span_id, now)
            assembler.add(_fresh(r), now)
        assembler.flush(time.monotonic(), final=False)

    def from_sdk() -> None:  # what the worker does with the SDK's spans: each read, then the same way
        for span in spans:
            now = time.monotonic()
            assembler.started(span.context.trace_id, span.context.span_id, now)
            assembler.add(from_readable(span), now)
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
        ("the same from the SDK's spans: from_readable + Assembler.add + flush", best_us(from_sdk, 1) * per),
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
    calling = calling_thread()
    for label, us in calling:
        print(f"| calling thread | {label} | {us:,.1f} | |")
    sync, stream = worker("sync"), worker("stream")
    for (label, a), (_, b) in zip(sync, stream, strict=True):
        print(f"| folding worker | {label} | {a:,.1f} | {b:,.1f} |")
    alone = dict(calling)
    inside = in_process(2000)
    print(
        "\nThe calling thread's pieces inside the real process: sync calls of the workload, 2,000 calls, CPU µs per "
        "call (mean), each piece between two timers whose own cost is taken off; beside the same pieces timed alone\n"
    )
    print("| piece | alone (best of 7) | in the process | ratio |")
    print("|---|---|---|---|")
    rows = [
        ("request attributes", inside["request"], alone[REQUEST_ROW]),
        ("server address (cached per base_url)", inside["server"], None),
        ("OTel SDK span start (request attributes)", inside["start"], None),
        ("response attributes", inside["response"], alone[RESPONSE_ROW]),
        (
            "span end: result attributes set, span ended (processor's on_end included)",
            inside["finish"] - inside["stitch: register"],
            None,
        ),
        ("OTel SDK span start + end", inside["start"] + inside["finish"] - inside["stitch: register"], alone[SPAN_ROW]),
        ("stitching: find the conversation", inside["stitch: find"], None),
        ("stitching: register the outputs (when the span has ended)", inside["stitch: register"], None),
        ("stitching: both", inside["stitch: find"] + inside["stitch: register"], alone[STITCH_ROW]),
    ]
    for label, here, by_itself in rows:
        ratio = f"{here / by_itself:.1f}x" if by_itself else ""
        alone_cell = f"{by_itself:,.1f}" if by_itself else ""
        print(f"| {label} | {alone_cell} | {here:,.1f} | {ratio} |")
    total = sum(inside.values()) - inside["stitch: register"]  # timed inside the span's end too
    print(f"| all of the above | | {total:,.1f} | |")


if __name__ == "__main__":
    main()

"""One benchmark process: set up ONE configuration, run ONE workload, print its per-call medians as JSON.

Run by ``bench/overhead.py`` (fresh process per configuration and round); usable alone:

    python bench/workload.py --config spanfold --workload stream --history 10
    python bench/workload.py --config openinference --workload stream --verify   # what the config records

Workloads: ``sync``, ``stream`` (53 chunks), ``async``: the same call repeated, ``--history`` messages of history;
``agent``: each batch of calls is one agent run that starts from ``--history`` messages and adds the reply and a new
user message per call (history growth: work per call should follow what is new).

Each batch ends by draining the configuration (spanfold folds and writes what the batch left, a peer exports it),
so all the work the calls caused is inside the clock. Per batch it takes the wall time (``perf_counter``) and the
CPU time of the whole process (``process_time``: every thread, so spanfold's folding worker and the peers' batch
exporters are included). On a shared machine the CPU time is the steadier figure: time the process spent waiting
for a core is not in it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx2

MODEL = "gpt-4o-mini"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "convert_temperature",
            "description": "Convert a temperature",
            "parameters": {
                "type": "object",
                "properties": {"celsius": {"type": "number"}, "to": {"type": "string"}},
                "required": ["celsius", "to"],
            },
        },
    },
]


def history(n: int) -> list[dict[str, Any]]:
    """A realistic agent history of ``n`` messages: system, user, tool-call rounds, answers."""
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful weather assistant. Use the tools when needed."},
        {"role": "user", "content": "What is the weather in Paris and Tokyo, in fahrenheit?"},
    ]
    i = 0
    while len(msgs) < n:
        i += 1
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": json.dumps({"city": f"City {i}"})},
                    }
                ],
            }
        )
        msgs.append(
            {"role": "tool", "tool_call_id": f"call_{i}", "content": f"City {i}: 21 C, clear skies, light wind"}
        )
        msgs.append({"role": "assistant", "content": f"City {i} is 21 degrees celsius and clear."})
        msgs.append({"role": "user", "content": f"And what about the next city after city {i}?"})
    return msgs[:n]


COMPLETION = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 1,
    "model": MODEL,
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Paris is 70F and sunny; Tokyo is 64F with light rain."},
        }
    ],
    "usage": {"prompt_tokens": 412, "completion_tokens": 19, "total_tokens": 431},
}


def stream_body() -> bytes:
    """53 chat.completion.chunk events: two parallel tool calls with arguments split in fragments."""
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1, "model": MODEL}
    events: list[dict[str, Any]] = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}]}
    ]
    for index, city in enumerate(("Paris", "Tokyo")):
        events.append(
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": index,
                                    "id": f"call_{index}",
                                    "type": "function",
                                    "function": {"name": "get_weather", "arguments": ""},
                                }
                            ]
                        },
                        "finish_reason": None,
                    }
                ],
            }
        )
        args = json.dumps({"city": city, "unit": "fahrenheit", "detail": "hourly forecast"})
        step = max(1, len(args) // 24)
        pieces = [args[i : i + step] for i in range(0, len(args), step)][:24]
        pieces[-1] += args[24 * step :]
        for piece in pieces:
            events.append(
                {
                    **base,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"tool_calls": [{"index": index, "function": {"arguments": piece}}]},
                            "finish_reason": None,
                        }
                    ],
                }
            )
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    events.append(
        {**base, "choices": [], "usage": {"prompt_tokens": 412, "completion_tokens": 48, "total_tokens": 460}}
    )
    assert len(events) == 53, len(events)
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"


STREAM_BODY = stream_body()
COMPLETION_BODY = json.dumps(COMPLETION).encode()


def handler(request: httpx2.Request) -> httpx2.Response:
    if b'"stream":true' in request.content:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=STREAM_BODY)
    return httpx2.Response(200, headers={"content-type": "application/json"}, content=COMPLETION_BODY)


# --- configurations ------------------------------------------------------------------------------------


class _Discard:
    """A span exporter that drops everything (the peers' cost is in the instrumentation, not the backend)."""

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _nothing() -> None:
    pass


#: Finishes what a configuration's calls left to do, inside each timed batch: spanfold folds and writes, a peer's
#: batch processor exports (to nowhere). Without it spanfold's folding would happen after the clock stopped.
DRAIN: list[Callable[[], Any]] = [_nothing]


def _peer_provider() -> Any:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(_Discard()))  # type: ignore[arg-type]
    trace.set_tracer_provider(provider)
    DRAIN[0] = provider.force_flush
    return provider


def setup_baseline() -> None:
    pass


def setup_spanfold() -> None:
    import atexit

    import spanfold

    # The default configuration: fold on the background worker, write JSONL files (to a temporary directory).
    output = tempfile.mkdtemp(prefix="spanfold-bench-")
    spanfold.init(output=output, capture_content=True)
    atexit.register(shutil.rmtree, output, ignore_errors=True)
    atexit.register(spanfold.shutdown)  # runs first: the last traces are written before the directory goes
    DRAIN[0] = spanfold.flush


def setup_spanfold_context() -> None:
    """spanfold as :func:`setup_spanfold`, every call made inside an open ``spanfold.context`` (issue 49: what the
    context's values cost on every span)."""
    import spanfold

    setup_spanfold()
    spanfold.context(
        user_id="u-42", session_id="chat-7", tags=["beta", "eu"], metadata={"tenant": "acme"}, prompt=("support", "v3")
    ).__enter__()


def setup_otel_v2() -> None:
    # Content on span attributes (the latest-experimental mode), as spanfold records it; in its default mode
    # the official instrumentation sends content as log events, which without a LoggerProvider cost nothing.
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=_peer_provider())


def setup_openllmetry() -> None:
    os.environ["TRACELOOP_TRACE_CONTENT"] = "true"
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=_peer_provider())


def setup_openinference() -> None:
    for switch in (
        "OPENINFERENCE_HIDE_INPUTS",
        "OPENINFERENCE_HIDE_OUTPUTS",
        "OPENINFERENCE_HIDE_INPUT_MESSAGES",
        "OPENINFERENCE_HIDE_OUTPUT_MESSAGES",
        "OPENINFERENCE_HIDE_INPUT_TEXT",
        "OPENINFERENCE_HIDE_OUTPUT_TEXT",
    ):
        os.environ[switch] = "false"  # content on (the default, set explicitly)
    from openinference.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=_peer_provider())


#: Calling-thread CPU ns, all calls so far: each whole call as the user makes it (0: ``create``, and for a stream the
#: loop over its chunks, timed in :func:`run`) and the SDK's own work inside it (1: its ``create``, and the making of
#: each chunk). CPU, not wall: time the folding worker holds the GIL is not in it.
INSIDE = [0, 0]


def _timed(call: Callable[..., Any]) -> Callable[..., Any]:
    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.thread_time_ns()
        try:
            return call(self, *args, **kwargs)
        finally:
            INSIDE[1] += time.thread_time_ns() - start

    return timed


def _timed_async(call: Callable[..., Any]) -> Callable[..., Any]:
    """The same around a coroutine: the calls run one at a time on one thread, so the thread's CPU between the start
    and the end of the ``await`` is the call's own (the event loop's few steps in between included)."""

    async def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.thread_time_ns()
        try:
            return await call(self, *args, **kwargs)
        finally:
            INSIDE[1] += time.thread_time_ns() - start

    return timed


def _timed_chunks(make: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    """The same around each step of the SDK's chunk generator (parse an event, build the chunk object)."""

    def timed(self: Any) -> Iterator[Any]:
        chunks = make(self)
        while True:
            start = time.thread_time_ns()
            try:
                chunk = next(chunks)
            except StopIteration:
                return
            finally:
                INSIDE[1] += time.thread_time_ns() - start
            yield chunk

    return timed


def time_inside(setup: Callable[[], None]) -> None:
    """Put timers around the SDK's own work (sync and async ``create``, the stream's chunk generator), then run
    ``setup``: an instrumentation wraps the timed methods, so its work falls between :func:`run`'s timer around the
    whole call and these. The difference, less the baseline's (the timers and the loop themselves), is the time the
    instrumentation adds on the calling thread, free of the SDK's own variance."""
    from openai import Stream
    from openai.resources.chat.completions.completions import AsyncCompletions, Completions

    Completions.create = _timed(Completions.create)  # type: ignore[method-assign]
    AsyncCompletions.create = _timed_async(AsyncCompletions.create)  # type: ignore[method-assign]
    Stream.__stream__ = _timed_chunks(Stream.__stream__)  # type: ignore[method-assign]
    setup()


CONFIGS: dict[str, Callable[[], None]] = {
    "baseline": setup_baseline,
    "spanfold": setup_spanfold,
    "spanfold-context": setup_spanfold_context,
    "otel-v2": setup_otel_v2,
    "openllmetry": setup_openllmetry,
    "openinference": setup_openinference,
}


# --- as users run them: the standard OTLP/HTTP exporter to a collector in another process (bench/process_cpu.py) ---


def _otlp_endpoint() -> str:
    """The collector's traces URL (``BENCH_OTLP_ENDPOINT``, set by ``bench/process_cpu.py``: a sink process)."""
    return os.environ["BENCH_OTLP_ENDPOINT"]


def _otlp_provider() -> Any:
    """A provider as the peers' users run it: ``BatchSpanProcessor`` + ``OTLPSpanExporter`` (HTTP, protobuf)."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=_otlp_endpoint())))
    trace.set_tracer_provider(provider)
    DRAIN[0] = provider.force_flush  # the batch ends when every span is on the collector
    return provider


def _exporting(setup: Callable[[], None]) -> Callable[[], None]:
    """A peer's setup with its spans exported over OTLP to the collector instead of dropped."""

    def run() -> None:
        global _peer_provider
        dropping, _peer_provider = _peer_provider, _otlp_provider
        try:
            setup()
        finally:
            _peer_provider = dropping

    return run


def setup_spanfold_otlp() -> None:
    """spanfold's files, and the raw spans over OTLP too (``init(otlp=...)``)."""
    import atexit

    import spanfold

    output = tempfile.mkdtemp(prefix="spanfold-bench-")
    spanfold.init(output=output, capture_content=True, otlp=_otlp_endpoint())
    atexit.register(shutil.rmtree, output, ignore_errors=True)
    atexit.register(spanfold.shutdown)
    DRAIN[0] = spanfold.flush  # folded, written, and exported


def setup_spanfold_serve() -> None:
    """The out-of-process fold: spanfold's instrumentation in the app, spans exported over OTLP to ``spanfold serve``
    (which folds and writes; its CPU is not the app's)."""
    from spanfold.content.runtime import Runtime
    from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=_otlp_provider(), runtime=Runtime(capture_content=True))


CONFIGS.update(
    {
        "otel-v2+otlp": _exporting(setup_otel_v2),
        "openllmetry+otlp": _exporting(setup_openllmetry),
        "openinference+otlp": _exporting(setup_openinference),
        "spanfold+otlp": setup_spanfold_otlp,
        "spanfold-serve": setup_spanfold_serve,
    }
)


# --- workloads -----------------------------------------------------------------------------------------


#: µs per call over one batch: wall, process CPU, calling thread's CPU, calling-thread CPU outside the SDK's own work
#: (``--inside``: the instrumentation's, plus the timers' and the loop's own that the baseline measures)
Sample = tuple[float, float, float, float]


def _clock() -> tuple[int, int, int, int]:
    return time.perf_counter_ns(), time.process_time_ns(), time.thread_time_ns(), INSIDE[0] - INSIDE[1]


def _per_call(start: tuple[int, int, int, int], batch: int) -> Sample:
    now = _clock()
    wall, cpu, thread, inside = ((now[i] - start[i]) / batch / 1000 for i in range(4))
    return wall, cpu, thread, inside


#: Calling-thread CPU ns spent draining (a peer's ``force_flush`` exports on the caller's thread: protobuf and HTTP).
DRAINED = [0]


def _drain() -> None:
    start = time.thread_time_ns()
    DRAIN[0]()
    DRAINED[0] += time.thread_time_ns() - start


def run(workload: str, n_history: int, calls: int, batch: int) -> list[Sample]:
    """Per-call microseconds (wall, process CPU, calling thread CPU), one triple per batch of ``batch`` calls."""
    import openai

    msgs = history(n_history)
    if workload == "async":
        client_a = openai.AsyncOpenAI(
            api_key="sk-bench",
            base_url="http://bench.test/v1",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
        )

        async def go() -> list[Sample]:
            out = []
            for _ in range(calls // batch):
                t0 = _clock()
                for _ in range(batch):
                    start = time.thread_time_ns()
                    await client_a.chat.completions.create(model=MODEL, messages=msgs, tools=TOOLS)
                    INSIDE[0] += time.thread_time_ns() - start
                _drain()
                out.append(_per_call(t0, batch))
            return out

        return asyncio.run(go())

    client = openai.OpenAI(
        api_key="sk-bench",
        base_url="http://bench.test/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    out = []
    stream = workload == "stream"
    for _ in range(calls // batch):
        if workload == "agent":  # each batch one agent run: it starts from the history, each call adds 2 messages
            msgs = history(n_history)
        t0 = _clock()
        for i in range(batch):
            start = time.thread_time_ns()
            if stream:
                for _chunk in client.chat.completions.create(model=MODEL, messages=msgs, tools=TOOLS, stream=True):
                    pass
                INSIDE[0] += time.thread_time_ns() - start
            else:
                reply = client.chat.completions.create(model=MODEL, messages=msgs, tools=TOOLS)
                INSIDE[0] += time.thread_time_ns() - start
                if workload == "agent":
                    msgs.append({"role": "assistant", "content": reply.choices[0].message.content})
                    msgs.append({"role": "user", "content": f"Thanks. And the forecast for tomorrow, day {i}?"})
        _drain()
        out.append(_per_call(t0, batch))
    return out


def verify(workload: str, n_history: int) -> dict[str, Any]:
    """One call, its spans caught in memory: does the configuration record the history, the tools, the output?"""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        return {"spans": 0}
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    run(workload, n_history, 1, 1)
    spans = memory.get_finished_spans()
    text = json.dumps([dict(s.attributes or {}) for s in spans], default=str)
    return {
        "spans": len(spans),
        "attribute_bytes": len(text),
        "records_history": "21 C, clear skies" in text,  # a tool result deep in the history
        "records_tools": "get_weather" in text and "Current weather in a city" in text,
        "records_output": "Tokyo is 64F" in text or "hourly forecast" in text,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", choices=sorted(CONFIGS), required=True)
    parser.add_argument("--workload", choices=("sync", "stream", "async", "agent"), default="sync")
    parser.add_argument("--history", type=int, default=10)
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--verify", action="store_true", help="one call: report what the configuration records")
    parser.add_argument(
        "--inside", action="store_true", help="also time the calling thread's work outside the SDK's own"
    )
    args = parser.parse_args()
    if args.inside:
        time_inside(CONFIGS[args.config])
    else:
        CONFIGS[args.config]()
    result: dict[str, Any] = {"config": args.config, "workload": args.workload, "history": args.history}
    if args.verify:
        result.update(verify(args.workload, args.history))
    else:
        run(args.workload, args.history, args.warmup, args.warmup)
        drained = DRAINED[0]
        per_batch = run(args.workload, args.history, args.calls, args.batch)
        # CPU the drain spent on the calling thread (a batch exporter's force_flush exports there), per call
        result["drain_cpu_us_per_call"] = (DRAINED[0] - drained) / args.calls / 1000
        result["us_per_call"] = statistics.median(s[0] for s in per_batch)
        result["cpu_us_per_call"] = statistics.median(s[1] for s in per_batch)
        # The process's other threads (spanfold's folding worker, the peers' batch exporters): CPU per call.
        result["other_threads_cpu_us_per_call"] = statistics.median(s[1] - s[2] for s in per_batch)
        if args.inside:
            result["inside_us_per_call"] = statistics.median(s[3] for s in per_batch)
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()

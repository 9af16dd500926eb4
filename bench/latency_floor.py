"""How low the caller's added latency can go: the OTel span every instrumentation makes, alone, against spanfold and
the best peer, in the outside view's own driver.

The issue-30 target asks for spanfold's added p50 latency at half the best peer's. Part of what any of them adds is
not theirs to cut: the wrapper around the SDK's method and the OTel SDK span (started with the request's attributes,
current while the call runs, given the result's attributes, ended). This runs ``../shared/peerbench/bench.py`` (the
openai SDK over a mock transport, 10-message history with 2 tools, content on) in fresh interleaved processes pinned
to one CPU, for:

* ``wrapper``: a wrapt wrapper on ``Completions.create`` that only calls through;
* ``span``: the wrapper and the span, with the very attributes spanfold's span gets for this request (taken from a
  span spanfold records at set-up; a stream's span ends when the stream is exhausted, through a minimal proxy):
  nothing computed per call, nothing folded, nothing exported but by the driver's own in-memory exporter, which every
  configuration has;
* ``spanfold_unstitched``: spanfold with stitching off (``SPANFOLD_STITCH=0``);
* ``spanfold``: as installed; ``otel_v2_otlp``: openai-v2 with its BatchSpanProcessor and OTLP/HTTP export.

Medians over rounds of the added p50 latency and process CPU per call against the uninstrumented run, and each as a
ratio of the peer's.

    python bench/latency_floor.py [--rounds 5] [--calls 1500] [--workload nonstream|stream|async]
        [--python /tmp/peerbench-venvs/v2/bin/python] [--peerbench ../shared/peerbench]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peerdriver

CONFIGS = ("baseline", "wrapper", "span", "spanfold_unstitched", "spanfold", "otel_v2_otlp")

#: The set-ups, as a module the driver imports (``--setup peer_setups:NAME``).
SETUPS = r'''
import os
import wrapt
import setups
from openai.resources.chat.completions import AsyncCompletions, Completions

#: What a span's end sets (the rest is set when it starts).
RESULT_PREFIXES = ("gen_ai.response.", "gen_ai.output.", "gen_ai.usage.", "output.")


def _recorded(stream):
    """The attributes spanfold's span gets for the workload's request, split into start and end."""
    import mockapi
    import spans

    with spans.recorded() as memory:
        client = mockapi.make_sync_client()
        if stream:
            for _ in client.chat.completions.create(**mockapi.STREAM_KWARGS):
                pass
        else:
            client.chat.completions.create(**mockapi.CREATE_KWARGS)
    (span,) = memory.get_finished_spans()
    attrs = dict(span.attributes)
    end = {k: v for k, v in attrs.items() if k.startswith(RESULT_PREFIXES)}
    start = {k: v for k, v in attrs.items() if k not in end}
    return span.name, start, end


class _Stream(wrapt.ObjectProxy):
    """The least a stream's span needs: the chunks passed through, the span ended at the last."""

    def __init__(self, wrapped, finish):
        super().__init__(wrapped)
        self._self_finish = finish

    def __iter__(self):
        for chunk in self.__wrapped__:
            yield chunk
        self._self_finish()


def wrapper(tp):
    _recorded(os.environ.get("FLOOR_WORKLOAD") == "stream")  # the same imports and heap as ``span``

    def through(wrapped, instance, args, kwargs):
        return wrapped(*args, **kwargs)

    async def athrough(wrapped, instance, args, kwargs):
        return await wrapped(*args, **kwargs)

    wrapt.wrap_function_wrapper(Completions, "create", through)
    wrapt.wrap_function_wrapper(AsyncCompletions, "create", athrough)


def span(tp):
    from opentelemetry import context, trace
    from opentelemetry.trace import SpanKind

    tracer = tp.get_tracer("floor")
    name, start, end = _recorded(os.environ.get("FLOOR_WORKLOAD") == "stream")

    def begin():
        s = tracer.start_span(name, kind=SpanKind.CLIENT, attributes=start)
        return s, context.attach(trace.set_span_in_context(s))

    def finish(s):
        s.set_attributes(end)
        s.end()

    def call(wrapped, instance, args, kwargs):
        s, token = begin()
        try:
            result = wrapped(*args, **kwargs)
        finally:
            context.detach(token)
        if kwargs.get("stream"):
            return _Stream(result, lambda: finish(s))
        finish(s)
        return result

    async def acall(wrapped, instance, args, kwargs):
        s, token = begin()
        try:
            result = await wrapped(*args, **kwargs)
        finally:
            context.detach(token)
        finish(s)
        return result

    wrapt.wrap_function_wrapper(Completions, "create", call)
    wrapt.wrap_function_wrapper(AsyncCompletions, "create", acall)


def spanfold_unstitched(tp):
    os.environ["SPANFOLD_STITCH"] = "0"
    setups.setup_spanfold(tp)


baseline = lambda tp: None
spanfold = setups.setup_spanfold
otel_v2_otlp = setups.setup_otel_v2_otlp
'''


def main() -> None:
    args = peerdriver.parser(__doc__).parse_args()
    runs = peerdriver.interleaved(args, CONFIGS, SETUPS, {"FLOOR_WORKLOAD": args.workload})
    rows = {c: [{"cpu": r["cpu_per_call_us"], "p50": r["p50_us"]} for r, _ in done] for c, done in runs.items()}
    base = rows["baseline"]

    def added(config: str, key: str) -> float:
        return statistics.median(o[key] - b[key] for o, b in zip(rows[config], base, strict=True))

    peer_p50, peer_cpu = added("otel_v2_otlp", "p50"), added("otel_v2_otlp", "cpu")
    calls = peerdriver.calls_of(args)
    print(f"{args.workload}, {calls} calls, {args.rounds} rounds, pinned to one CPU; medians, µs per call\n")
    print("| configuration | added p50 | of the peer's | added process CPU | of the peer's |")
    print("|---|---|---|---|---|")
    for config in CONFIGS[1:]:
        p50, cpu = added(config, "p50"), added(config, "cpu")
        print(f"| {config} | {p50:+,.0f} | {p50 / peer_p50:.2f}x | {cpu:+,.0f} | {cpu / peer_cpu:.2f}x |")


if __name__ == "__main__":
    sys.exit(main())

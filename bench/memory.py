"""Peak memory with 100k and 1M spans streamed through ``FoldingSpanProcessor``: it must stay flat.

Each size runs in a fresh process (``--child``). The spans are agent runs recorded once by spanfold's own
instrumentation (``bench/spans.py``: an ``invoke_agent`` root, 20 model calls, 19 tool runs), replayed as SDK
``ReadableSpan`` s with a new trace id per run and fed to the processor's ``on_start`` / ``on_end`` as the SDK would;
every few thousand spans the feeder waits for the worker (``force_flush``) so no span is dropped. Each folded trace is
encoded as its JSONL line and discarded (no disk). Reported: peak RSS (``ru_maxrss``) of the process, and its growth
over the RSS before the first span.

    python bench/memory.py                    # 100k and 1M spans, two rounds, interleaved
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: Spans fed between two waits for the worker (the processor's queue holds 20k by default).
PACE = 5000


def rss_mb() -> float:
    """The current resident set size in MB (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6  # kB on Linux


class EncodeAndDrop:
    """A writer that encodes each trace as the JSONL writer would, then drops it."""

    def __init__(self) -> None:
        self.traces = 0

    def write(self, trace: Any) -> None:
        from spanfold.trace import formats

        formats.encode_line(trace, "invariant")
        self.traces += 1

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def child(n_spans: int) -> dict[str, float]:
    sys.path.insert(0, str(HERE))
    import spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode

    from spanfold import counters
    from spanfold.exporter.pipeline.processor import FoldingSpanProcessor

    template = spans.record_agent_run(20)
    per_run = len(template)
    writer = EncodeAndDrop()
    processor = FoldingSpanProcessor([writer], stitch=False)
    service = Resource({"service.name": "bench"})  # one resource, as a TracerProvider has

    def run_spans(run: int) -> list[ReadableSpan]:
        trace_id = (run << 64) | 0xBE4C
        out = []
        for r in template:
            ctx = SpanContext(trace_id, r.span_id, is_remote=False)
            parent = SpanContext(trace_id, r.parent_id, is_remote=False) if r.parent_id is not None else None
            out.append(
                ReadableSpan(
                    name=r.name,
                    context=ctx,
                    parent=parent,
                    attributes=r.attributes,
                    kind=SpanKind[r.kind],
                    status=Status(StatusCode[r.status_code]),
                    start_time=r.start_ns,
                    end_time=r.end_ns,
                    resource=service,
                )
            )
        return out

    processor.force_flush()
    before = rss_mb()
    start = time.perf_counter()
    fed = 0
    run = 0
    while fed < n_spans:
        batch = run_spans(run)
        run += 1
        for span in batch:
            processor.on_start(span)  # type: ignore[arg-type]
        for span in batch:  # template order is end order: children first, the root last
            processor.on_end(span)
        fed += per_run
        if fed % PACE < per_run:
            processor.force_flush()
    processor.shutdown()
    seconds = time.perf_counter() - start
    stats = counters.snapshot()
    return {
        "spans": fed,
        "traces_written": writer.traces,
        "dropped_spans": float(stats.get("dropped_spans", 0)),
        "rss_before_mb": before,
        "peak_rss_mb": peak_rss_mb(),
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    print(
        "machine at start: load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min), {} cores".format(
            *os.getloadavg(), os.cpu_count()
        )
    )
    results: dict[int, list[dict[str, float]]] = {n: [] for n in args.sizes}
    for r in range(args.rounds):
        for n in args.sizes if r % 2 == 0 else reversed(args.sizes):
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(n)], check=True, capture_output=True, text=True
            )
            results[n].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"round {r + 1}: {n:,} spans done", file=sys.stderr)
    print(
        f"\nPeak memory, spans streamed through FoldingSpanProcessor (fresh process per size; medians of "
        f"{args.rounds} rounds)\n"
    )
    print("| spans | traces written | dropped | RSS before MB | peak RSS MB | growth MB | seconds | spans/s |")
    print("|---|---|---|---|---|---|---|---|")
    peaks = {}
    for n, rows in results.items():
        med = {key: statistics.median(row[key] for row in rows) for key in rows[0]}
        peaks[n] = med["peak_rss_mb"]
        print(
            f"| {med['spans']:,.0f} | {med['traces_written']:,.0f} | {med['dropped_spans']:.0f} | "
            f"{med['rss_before_mb']:.1f} | {med['peak_rss_mb']:.1f} | {med['peak_rss_mb'] - med['rss_before_mb']:.1f}"
            f" | {med['seconds']:.1f} | {med['spans'] / med['seconds']:,.0f} |"
        )
    small, large = peaks[min(peaks)], peaks[max(peaks)]
    change = (large - small) / small
    print(
        f"\ntarget: constant peak memory (within 10%): {'met' if abs(change) <= 0.10 else 'NOT met'} "
        f"({change:+.1%} from {min(peaks):,} to {max(peaks):,} spans)"
    )
    print(
        f"TARGET | memory flat from {min(peaks):,} to {max(peaks):,} spans (peak RSS within 10%) | {change:+.1%} | "
        f"{'met' if abs(change) <= 0.10 else 'NOT met'}"
    )
    print("machine at end: load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min)".format(*os.getloadavg()))


if __name__ == "__main__":
    main()

"""Fold throughput: MB/s of span attribute JSON and spans/s, for short agent traces and a 200-step one.

The spans are real: spanfold's own instrumentation records an agent run once (``bench/spans.py``: the openai SDK over
the in-process mock transport, ``@spanfold.tool`` runs, one ``spanfold.agent`` root), then copies get fresh ids and a
prompt of their own, so no two traces share a history. Each trace's ``SpanRecord`` s go straight to
``spanfold.exporter.fold.folding.fold`` (attribute parsing included: every span goes through its dialect); the history
parse cache starts empty for every trace of the 200-step kind.

Two more rows take the short traces the whole way the worker takes them: ``Assembler.add`` (buffered until the root
ends), each span through its dialect, grouped into runs, folded, the metadata, handed to a writer that keeps nothing.
``zero-code`` is the same run without its agent span: every model call and tool run a trace of its own, un-parented,
so the runs stage stitches them into one conversation by the evidence rule (written at the round's flush).

    python bench/fold_throughput.py            # short: 3-step traces; long: 200-step traces; the worker's path
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spans

from spanfold import config
from spanfold.exporter.dialects import dispatch as dialects
from spanfold.exporter.fold.folding import fold
from spanfold.exporter.pipeline.assembler import Assembler, Policy


def fold_all(traces: list[list[object]], *, cold: bool) -> float:
    """CPU seconds (this thread's: steadier on a shared machine) to fold every trace (``cold``: the history parse
    cache emptied before each)."""
    total = 0.0
    for records in traces:
        if cold:
            dialects.HISTORIES.clear()
        start = time.thread_time()
        fold(records, trace_id="bench")  # type: ignore[arg-type]
        total += time.thread_time() - start
    return total


def measure(label: str, steps: int, copies: int, rounds: int, *, cold: bool) -> dict[str, float]:
    run = spans.record_agent_run(steps)
    traces = list(spans.replicate(run, copies * rounds))
    nbytes = spans.attribute_bytes(run)  # every copy has the same size, give or take the digits of its number
    seconds = []
    for r in range(rounds):
        seconds.append(fold_all(traces[r * copies : (r + 1) * copies], cold=cold))
    best, med = min(seconds), statistics.median(seconds)
    return {
        "label": label,  # type: ignore[dict-item]
        "spans": len(run),
        "bytes": nbytes,
        "ms_per_trace": med / copies * 1000,
        "ms_per_trace_best": best / copies * 1000,
        "mb_s": nbytes * copies / med / 1e6,
        "spans_s": len(run) * copies / med,
    }


class _Discard:
    """A writer that keeps nothing: the worker's path up to the writers."""

    def write(self, trace: object) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def zero_code(records: list[object], first_trace_id: int) -> list[object]:
    """The run without its agent span: each other span un-parented, in a trace of its own (in end order)."""
    out = []
    for record in records:
        if record.name.startswith("invoke_agent"):  # type: ignore[attr-defined]
            continue
        first_trace_id += 1
        out.append(dataclasses.replace(record, trace_id=first_trace_id, parent_id=None))  # type: ignore[call-overload]
    return out


def through_the_worker(traces: list[list[object]]) -> float:
    """CPU seconds to take every trace through an :class:`Assembler` (as the in-process processor's worker does,
    spans in end order) and flush it: buffering, dialects, runs, fold, metadata, a writer."""
    assembler = Assembler([_Discard()], config.load({}, environ={}), Policy())
    start = time.thread_time()
    now = 0.0
    for records in traces:
        for record in records:
            now += 1e-6
            assembler.add(record, now)  # type: ignore[arg-type]
    assembler.flush(now, final=False)
    return time.thread_time() - start


def measure_worker(label: str, copies: int, rounds: int, *, unparented: bool) -> dict[str, float]:
    run = spans.record_agent_run(3)
    traces = list(spans.replicate(run, copies * rounds))
    if unparented:
        traces = [zero_code(t, (i + 1) << 20) for i, t in enumerate(traces)]
    nbytes = spans.attribute_bytes(traces[0])
    seconds = [through_the_worker(traces[r * copies : (r + 1) * copies]) for r in range(rounds)]
    best, med = min(seconds), statistics.median(seconds)
    return {
        "label": label,  # type: ignore[dict-item]
        "spans": len(traces[0]),
        "bytes": nbytes,
        "ms_per_trace": med / copies * 1000,
        "ms_per_trace_best": best / copies * 1000,
        "mb_s": nbytes * copies / med / 1e6,
        "spans_s": len(traces[0]) * copies / med,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--short-copies", type=int, default=300)
    parser.add_argument("--long-copies", type=int, default=3)
    args = parser.parse_args()
    load = "load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min)".format(*os.getloadavg())
    print(f"machine: {load}, {os.cpu_count()} cores")
    rows = [
        measure("short (3 model calls, 2 tool runs, 1 agent)", 3, args.short_copies, args.rounds, cold=False),
        measure("200-step (200 model calls, 199 tool runs, 1 agent)", 200, args.long_copies, args.rounds, cold=True),
    ]
    workers = [
        measure_worker(
            "worker path, short (Assembler.add to writer)", args.short_copies, args.rounds, unparented=False
        ),
        measure_worker("worker path, short zero-code (stitched)", args.short_copies, args.rounds, unparented=True),
    ]
    print(
        f"\nFold throughput; medians of {args.rounds} rounds (each round folds {args.short_copies} short or "
        f"{args.long_copies} 200-step traces, every trace distinct)\n"
    )
    print("| trace | spans | attribute JSON per trace | ms per trace (median / best) | MB/s | spans/s |")
    print("|---|---|---|---|---|---|")
    for row in [*rows, *workers]:
        print(
            f"| {row['label']} | {row['spans']:.0f} | {row['bytes'] / 1e3:,.1f} kB | {row['ms_per_trace']:.3f} / "
            f"{row['ms_per_trace_best']:.3f} | {row['mb_s']:,.0f} | {row['spans_s']:,.0f} |"
        )
    long = rows[1]
    mb_s = min(row["mb_s"] for row in rows)
    print(
        f"\ntargets: fold >= 50 MB/s: {'met' if mb_s >= 50 else 'NOT met'} (lowest {mb_s:,.0f} MB/s); "
        f"200-step trace < 100 ms: {'met' if long['ms_per_trace'] < 100 else 'NOT met'} "
        f"({long['ms_per_trace']:.1f} ms)"
    )
    for row in rows:
        print(
            f"TARGET | fold >= 50 MB/s of attribute JSON, {row['label']} | {row['mb_s']:,.0f} MB/s | "
            f"{'met' if row['mb_s'] >= 50 else 'NOT met'}"
        )
    print(
        f"TARGET | a 200-step trace folds in < 100 ms | {long['ms_per_trace']:.1f} ms | "
        f"{'met' if long['ms_per_trace'] < 100 else 'NOT met'}"
    )
    print("machine: load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min)".format(*os.getloadavg()))


if __name__ == "__main__":
    main()

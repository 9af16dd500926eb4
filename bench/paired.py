"""The outside view's workloads measured in pairs inside each process: what the instrumentation adds, with the
baseline's own noise taken out.

``../shared/peerbench`` subtracts an uninstrumented process's figures from an instrumented one's. A streamed call
costs the openai SDK itself ~8 ms of CPU, and that cost moves by 10-15 % from one fresh process to the next (memory
layout, the collector's timing): more than everything an instrumentation adds to it, so one run's stream ratio can
say 0.7x or 1.7x. Here each process (the peerbench driver's set-up, pinned to one CPU) alternates batches of calls
with the instrumentation's wrapper on and bypassed: ``Completions.create`` (or ``AsyncCompletions.create``) is the
instrumentation's ``wrapt`` wrapper, or the SDK's own function it wraps, set on the class for the batch. Both batches
run in the same interpreter, heap and loaded modules; each ends by draining the configuration (spanfold folds and
writes what the batch left, a peer's batch processor exports it over OTLP to a sink process), so the work a batch's
calls caused is inside its clock and none is left for the next batch. Per pair, in a random order: the batch's median
call latency, the calling thread's CPU and the process's CPU (every thread) per call. The added figures are medians
over the pairs of a process, then over processes. ``baseline`` runs the same pairs with nothing to bypass: its added
figures show the method's own noise (they should read ~0).

    python bench/paired.py [--workload nonstream|stream|async] [--rounds 3] [--pairs 8] [--calls 400]
        [--configs baseline,spanfold,otel_v2_otlp] [--python /tmp/peerbench-venvs/v2/bin/python]

Configurations: peerbench's set-ups (``baseline``, ``spanfold``, ``otel_v2_otlp``, ...), and ``spanfold_serve_otlp``:
spanfold's instrumentation exporting OTLP to a sink process, as an application sending to ``spanfold serve`` runs.

``--calls`` is the batch size (a quarter of it for streams): 400 sync calls are ~1.2 s, under the batch processor's
5 s schedule, so a peer exports each batch in one or two requests when drained, as it would in a steady run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _batch_size(workload: str, calls: int) -> int:
    return calls if workload != "stream" else max(25, calls // 4)


def child(config: str, workload: str, pairs: int, calls: int) -> dict[str, Any]:
    """One process: the set-up, a warm-up, then ``pairs`` pairs of batches (wrapper on / bypassed)."""
    import bench as pb  # ../shared/peerbench/bench.py
    import peerdriver
    import setups
    from openai.resources.chat.completions import AsyncCompletions, Completions

    setups.SETUPS["spanfold_serve_otlp"] = peerdriver.spanfold_to_serve
    tp, _exporter, m = pb.init(config)
    cls: Any = AsyncCompletions if workload == "async" else Completions
    wrapped = cls.__dict__["create"]
    bare = getattr(wrapped, "__wrapped__", wrapped)  # the SDK's own function under the instrumentation's wrapper
    expected = pb._expected(m)
    n = _batch_size(workload, calls)
    if workload == "async":
        aclient = m.make_async_client()
    else:
        client = m.make_sync_client()
        call: Callable[[], Any] = (
            (lambda: pb.call_nonstream(client, m)) if workload == "nonstream" else (lambda: pb.call_stream(client, m))
        )

    def check(out: Any) -> None:
        tcs = out[1] if workload == "stream" else out
        if tcs != expected:
            raise SystemExit(f"{config}: the call returned {tcs!r}, not {expected!r}")

    async def abatch(count: int) -> list[int]:
        times = []
        for _ in range(count):
            start = time.perf_counter_ns()
            out = await pb.acall_nonstream(aclient, m)
            times.append(time.perf_counter_ns() - start)
        check(out)
        return times

    def batch(count: int) -> list[int]:
        if workload == "async":
            return asyncio.run(abatch(count))
        times = []
        for _ in range(count):
            start = time.perf_counter_ns()
            out = call()
            times.append(time.perf_counter_ns() - start)
        check(out)
        return times

    def measured(on: bool) -> dict[str, float]:
        cls.create = wrapped if on else bare
        thread0, process0 = time.thread_time_ns(), time.process_time_ns()
        times = batch(n)
        pb.flush_all(tp)  # what the batch's calls left: folded and written, or exported
        thread1, process1 = time.thread_time_ns(), time.process_time_ns()
        cls.create = wrapped
        return {
            "p50": statistics.median(times) / 1e3,
            "thread": (thread1 - thread0) / n / 1e3,
            "process": (process1 - process0) / n / 1e3,
        }

    batch(max(n // 2, 25))  # warm-up: imports, the first folds, the connection
    pb.flush_all(tp)
    diffs: dict[str, list[float]] = defaultdict(list)
    for _ in range(pairs):
        order = [True, False]
        random.shuffle(order)
        got = {on: measured(on) for on in order}
        for key in ("p50", "thread", "process"):
            diffs[key].append(got[True][key] - got[False][key])
        diffs["off_process"].append(got[False]["process"])
    return {"config": config, "pairs": dict(diffs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="nonstream", choices=["nonstream", "stream", "async"])
    ap.add_argument("--rounds", type=int, default=3, help="fresh processes per configuration")
    ap.add_argument("--pairs", type=int, default=8, help="pairs of batches per process")
    ap.add_argument("--calls", type=int, default=400, help="calls per batch (a quarter of it for streams)")
    ap.add_argument("--configs", default="baseline,spanfold,otel_v2_otlp")
    ap.add_argument("--python", default="/tmp/peerbench-venvs/v2/bin/python")
    ap.add_argument("--peerbench", type=Path, default=ROOT.parent / "shared" / "peerbench")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.workload, args.pairs, args.calls)))
        return
    configs = args.configs.split(",")
    rows: dict[str, list[dict[str, float]]] = defaultdict(list)
    path = [str(ROOT / "src"), str(ROOT / "bench"), str(args.peerbench)]  # bench/: peerdriver's set-ups
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    for _ in range(args.rounds):
        order = list(configs)
        random.shuffle(order)
        for config in order:
            command = ["taskset", "-c", "1", args.python, str(Path(__file__).resolve()), "--child", config]
            command += ["--workload", args.workload, "--pairs", str(args.pairs), "--calls", str(args.calls)]
            out = subprocess.run(command, capture_output=True, text=True, env=environ, cwd=tempfile.gettempdir())
            if out.returncode != 0:
                sys.exit(f"{config}: the process failed:\n{out.stderr[-2000:]}")
            pairs = json.loads(out.stdout.strip().splitlines()[-1])["pairs"]
            rows[config].append({key: statistics.median(values) for key, values in pairs.items()})
    n = _batch_size(args.workload, args.calls)
    print(f"{args.workload}: {args.rounds} processes per configuration, {args.pairs} pairs of {n}-call batches each;")
    print("added = wrapper on - bypassed, median over a process's pairs; each process, then their median (µs/call)\n")
    print("| configuration | added p50 latency | added calling-thread CPU | added process CPU | bypassed: CPU |")
    print("|---|---|---|---|---|")
    for config in configs:
        own = rows[config]

        def cell(key: str, own: list[dict[str, float]] = own) -> str:
            values = [r[key] for r in own]
            each = " / ".join(f"{v:+,.0f}" for v in values)
            return f"{statistics.median(values):+,.0f} ({each})"

        off = statistics.median(r["off_process"] for r in own)
        print(f"| {config} | {cell('p50')} | {cell('thread')} | {cell('process')} | {off:,.0f} |")
    peers = [c for c in configs if c not in ("baseline",) and not c.startswith("spanfold")]
    ours = [c for c in configs if c.startswith("spanfold")]
    if peers and ours:
        print("\nspanfold / the best peer (medians):\n")
        for key, label in (("p50", "latency"), ("process", "process CPU")):
            best = min(statistics.median(r[key] for r in rows[p]) for p in peers)
            for config in ours:
                mine = statistics.median(r[key] for r in rows[config])
                ratio = f"{mine / best:.2f}x" if best > 0 else "n/a"
                print(f"* {config} {label}: {mine:+,.0f} / {best:+,.0f} = {ratio}")


if __name__ == "__main__":
    main()

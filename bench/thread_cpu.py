"""Where the outside view's process CPU goes, thread by thread: the calling thread against the uninstrumented run's,
and the instrumentation's own threads (spanfold's folding worker, a peer's batch exporter).

``../shared/peerbench`` gives one figure per configuration: the process CPU per call less the baseline's. This runs
the same driver (``peerbench/bench.py``: the openai SDK over a mock transport, 10-message history with 2 tools,
content on) in fresh interleaved processes pinned to one CPU, and reads each thread's CPU from ``/proc`` when the
process exits. The background threads' figure needs no baseline, so it is steady where the whole-process
difference (two runs of a ~2.5 ms call) is noisy; the calling thread's share is the rest. Medians over rounds, µs
per call; the thread figures cover the driver's own timed window (its final flush included, the warm-up calls and the
one-time imports of the first fold not).

    python bench/thread_cpu.py [--rounds 5] [--calls 1500] [--workload nonstream|stream|async]
        [--python /tmp/peerbench-venvs/v2/bin/python] [--peerbench ../shared/peerbench]

The interpreter must have openai, the OTel SDK, the openai-v2 instrumentation and the OTLP exporter (the venv
``peerbench/compare.sh`` builds); spanfold is taken from this checkout's ``src``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ("baseline", "spanfold", "otel_v2_otlp")

#: Setups that wrap peerbench's and print, at exit, the CPU seconds of each thread by its Python name.
SETUPS = r"""
import atexit, json, os, sys, threading, time
import setups

def _threads():
    names = {t.native_id: t.name for t in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        name = names.get(int(tid), "other")
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out

# Each thread's CPU over the driver's timed window: the driver reads time.process_time_ns exactly when its window
# opens (after the warm-up calls and their flush: one-time imports are not the calls' work) and when it closes (after
# the final flush).
def _measured(setup):
    def run(tp):
        setup(tp)
        marks = []
        clock = time.process_time_ns

        def marked():
            marks.append(_threads())
            return clock()

        time.process_time_ns = marked

        def report():
            start, end = marks[0], marks[1]
            print("THREADS " + json.dumps({k: v - start.get(k, 0.0) for k, v in end.items()}), file=sys.stderr)
        atexit.register(report)
    return run

baseline = _measured(lambda tp: None)
spanfold = _measured(setups.setup_spanfold)
otel_v2_otlp = _measured(setups.setup_otel_v2_otlp)
"""


def run(python: str, peerbench: Path, helpers: Path, config: str, workload: str, calls: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(helpers), str(peerbench)])}
    command = ["taskset", "-c", "1", python, str(peerbench / "bench.py"), "--setup", f"thread_setups:{config}"]
    command += ["--workload", workload, "--calls", str(calls), "--warmup", "100"]
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    result = json.loads(out.stdout.strip().splitlines()[-1])
    threads = next(json.loads(line[8:]) for line in out.stderr.splitlines() if line.startswith("THREADS "))
    threads.pop("MainThread", None)
    return {
        "cpu": result["cpu_per_call_us"],
        "p50": result["p50_us"],
        "background": sum(threads.values()) / calls * 1e6,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=1500)
    ap.add_argument("--workload", default="nonstream", choices=["nonstream", "stream", "async"])
    ap.add_argument("--python", default="/tmp/peerbench-venvs/v2/bin/python")
    ap.add_argument("--peerbench", type=Path, default=ROOT.parent / "shared" / "peerbench")
    args = ap.parse_args()
    calls = args.calls if args.workload != "stream" else max(100, args.calls // 4)
    rows: dict[str, list[dict[str, float]]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as helpers:
        (Path(helpers) / "thread_setups.py").write_text(SETUPS)
        for _ in range(args.rounds):
            order = list(CONFIGS)
            random.shuffle(order)
            for config in order:
                rows[config].append(run(args.python, args.peerbench, Path(helpers), config, args.workload, calls))
    base = rows["baseline"]
    print(f"{args.workload}, {calls} calls, {args.rounds} rounds, pinned to one CPU; medians, µs per call\n")
    print("| configuration | added p50 | added process CPU | of which background threads | calling thread (the rest) |")
    print("|---|---|---|---|---|")
    for config in CONFIGS[1:]:
        own = rows[config]
        p50 = statistics.median(o["p50"] - b["p50"] for o, b in zip(own, base, strict=True))
        cpu = statistics.median(o["cpu"] - b["cpu"] for o, b in zip(own, base, strict=True))
        background = statistics.median(o["background"] for o in own)
        print(f"| {config} | {p50:+,.0f} | {cpu:+,.0f} | {background:,.0f} | {cpu - background:+,.0f} |")


if __name__ == "__main__":
    sys.exit(main())

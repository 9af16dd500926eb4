"""Where the outside view's process CPU goes, thread by thread: the calling thread against the uninstrumented run's,
and the instrumentation's own threads (spanfold's folding worker, a peer's batch exporter).

``../shared/peerbench`` gives one figure per configuration: the process CPU per call less the baseline's. This runs
the same driver (``peerbench/bench.py``: the openai SDK over a mock transport, 10-message history with 2 tools,
content on) in fresh interleaved processes pinned to one CPU (:mod:`peerdriver`), and reads each thread's CPU from
``/proc`` when the driver opens and closes its timed window (its final flush included; the warm-up calls and the
one-time imports of the first fold not). The background threads' figure needs no baseline, so it is steady where the
whole-process difference (two runs of a ~2.5 ms call) is noisy; the calling thread's share is the rest. Medians over
rounds, µs per call.

    python bench/thread_cpu.py [--rounds 5] [--calls 1500] [--workload nonstream|stream|async]
        [--python /tmp/peerbench-venvs/v2/bin/python] [--peerbench ../shared/peerbench]
        [--configs spanfold_unstitched,spanfold_serve_otlp]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peerdriver

CONFIGS = ("baseline", "spanfold", "otel_v2_otlp")
#: Configurations ``--configs`` may add: spanfold with stitching off (``SPANFOLD_STITCH=false``: what stitching at the
#: source costs), and spanfold's instrumentation exporting OTLP like the peers, to the sink process where
#: ``spanfold serve`` would fold (the receiver deployment: its CPU, like the peers' collector's, is not the app's).
MORE = ("spanfold_unstitched", "spanfold_serve_otlp")

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

def _unstitched(tp):
    os.environ["SPANFOLD_STITCH"] = "false"
    setups.setup_spanfold(tp)

import peerdriver
spanfold_unstitched = _measured(_unstitched)
spanfold_serve_otlp = _measured(peerdriver.spanfold_to_serve)
"""


def _figures(result: dict[str, Any], stderr: str, calls: int) -> dict[str, float]:
    threads = next(json.loads(line[8:]) for line in stderr.splitlines() if line.startswith("THREADS "))
    threads.pop("MainThread", None)
    return {
        "cpu": result["cpu_per_call_us"],
        "p50": result["p50_us"],
        "background": sum(threads.values()) / calls * 1e6,
    }


def main() -> None:
    ap = peerdriver.parser(__doc__)
    ap.add_argument("--configs", default="", help=f"more configurations, comma-separated: {', '.join(MORE)}")
    args = ap.parse_args()
    calls = peerdriver.calls_of(args)
    configs = CONFIGS + tuple(c for c in args.configs.split(",") if c)
    unknown = set(configs) - set(CONFIGS) - set(MORE)
    if unknown:
        ap.error(f"unknown configurations: {', '.join(sorted(unknown))}")
    runs = peerdriver.interleaved(args, configs, SETUPS)
    rows = {config: [_figures(result, stderr, calls) for result, stderr in done] for config, done in runs.items()}
    base = rows["baseline"]
    print(f"{args.workload}, {calls} calls, {args.rounds} rounds, pinned to one CPU; medians, µs per call\n")
    print("| configuration | added p50 | added process CPU | of which background threads | calling thread (the rest) |")
    print("|---|---|---|---|---|")
    for config in configs[1:]:
        own = rows[config]
        p50 = statistics.median(o["p50"] - b["p50"] for o, b in zip(own, base, strict=True))
        cpu = statistics.median(o["cpu"] - b["cpu"] for o, b in zip(own, base, strict=True))
        background = statistics.median(o["background"] for o in own)
        print(f"| {config} | {p50:+,.0f} | {cpu:+,.0f} | {background:,.0f} | {cpu - background:+,.0f} |")


if __name__ == "__main__":
    sys.exit(main())

"""Per-call overhead of spanfold and its peers, side by side, measured in one run.

Every (configuration, workload) is measured in a fresh process (``bench/workload.py``); the processes are
interleaved round by round in a shuffled order so machine noise hits them alike; the tables quote medians over
rounds of each process's median per-call time. Overhead is the configuration's time minus the uninstrumented
SDK's time measured in the same run; the ratio divides that by the uninstrumented time.

    python bench/overhead.py                  # the peer table (needs bench/requirements.txt installed)
    python bench/overhead.py --history-growth # spanfold's overhead at 10, 50 and 200 messages of history

Two clocks: wall time, and the CPU time of the whole process (all threads: spanfold's folding worker and the
peers' batch exporters included). On a quiet machine they agree; on a loaded one the CPU time is the steadier.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEERS = ("otel-v2", "openllmetry", "openinference")
PEER_MODULES = {
    "otel-v2": "opentelemetry.instrumentation.openai_v2",
    "openllmetry": "opentelemetry.instrumentation.openai",
    "openinference": "openinference.instrumentation.openai",
}
CLOCKS = {"wall": "us_per_call", "cpu": "cpu_us_per_call"}
#: Also kept: CPU per call of the process's other threads (spanfold's folding worker), free of the baseline's noise.
WORKER = "other_threads_cpu_us_per_call"
#: A streamed call costs several times a plain one, an agent run's call with its long history more: fewer of them
#: keep each process short.
CALLS_SCALE = {"sync": 1.0, "async": 1.0, "stream": 0.5, "agent": 0.2}
#: Also kept (``workload.py --inside``): calling-thread CPU outside the SDK's own work (its ``create``, the making of
#: each chunk). Less the baseline's, it is what the instrumentation adds on the calling thread; with the other
#: threads' CPU, the instrumentation's own cost, measured without subtracting two noisy processes.
INSIDE = "inside_us_per_call"
INSIDE_WORKLOADS = ("sync", "stream", "async", "agent")
#: Those whose work falls outside the SDK's timers. OpenInference wraps the client's ``request`` method, which runs
#: inside ``create``: its own work would count as the SDK's.
MEASURED_INSIDE = ("spanfold", "otel-v2", "openllmetry")

Case = tuple[str, int]  # (workload, history length)
Medians = dict[tuple[str, str, int], dict[str, float]]


def workload(config: str, workload: str, history: int, *extra: str) -> dict[str, object]:
    out = subprocess.run(
        [
            sys.executable,
            str(HERE / "workload.py"),
            "--config",
            config,
            "--workload",
            workload,
            "--history",
            str(history),
            *extra,
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def available(config: str) -> bool:
    module = PEER_MODULES.get(config)
    if module is None:
        return True
    probe = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
    return probe.returncode == 0


def load() -> str:
    return "load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min), {} cores".format(*os.getloadavg(), os.cpu_count())


def run_matrix(configs: list[str], cases: list[Case], rounds: int, calls: int) -> Medians:
    samples: dict[tuple[str, str, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in range(rounds):
        jobs = [(c, w, h) for c in configs for (w, h) in cases]
        random.shuffle(jobs)
        for config, work, history in jobs:
            n = max(100, int(calls * CALLS_SCALE[work]))
            extra = ["--inside"] if work in INSIDE_WORKLOADS else []
            result = workload(config, work, history, "--calls", str(n), "--warmup", str(min(100, n // 2)), *extra)
            for clock, key in (*CLOCKS.items(), ("worker", WORKER), ("inside", INSIDE)):
                if key in result:
                    samples[(config, work, history)][clock].append(float(result[key]))  # type: ignore[arg-type]
        print(f"round {r + 1}/{rounds} done; {load()}", file=sys.stderr)
    return {key: {clock: statistics.median(v) for clock, v in by_clock.items()} for key, by_clock in samples.items()}


def verify_table(configs: list[str], workloads: list[str]) -> None:
    """One call per configuration and workload, spans caught in memory: everyone records the same content."""
    print("What each configuration records for one call (content capture switched on for everyone):\n")
    print("| config | workload | spans | attribute JSON bytes | history | tool definitions | output |")
    print("|---|---|---|---|---|---|---|")
    for config in configs[1:]:
        for work in workloads:
            v = workload(config, work, 10, "--verify")
            yes = {True: "yes", False: "no"}
            print(
                f"| {config} | {work} | {v['spans']} | {v['attribute_bytes']:,} | {yes[bool(v['records_history'])]} "
                f"| {yes[bool(v['records_tools'])]} | {yes[bool(v['records_output'])]} |"
            )
    print()


def peer_table(rounds: int, calls: int) -> None:
    configs = ["baseline", "spanfold", *[p for p in PEERS if available(p)]]
    workloads = ["sync", "stream", "async"]
    print(f"machine at start: {load()}\n")
    verify_table(configs, workloads)
    cases = [(w, 10) for w in workloads]
    med = run_matrix(configs, cases, rounds, calls)
    print(f"\nmachine at end: {load()}")
    for clock in CLOCKS:
        print(
            f"\nPer-call overhead ({clock} time), 10-message history + 2 tools, content capture on; medians of "
            f"{rounds} interleaved rounds (a fresh process per configuration and round, median of 50-call batches)\n"
        )
        header = "| workload | baseline µs | " + " | ".join(f"{c} overhead" for c in configs[1:])
        print(header + " | spanfold / best peer | target <= 0.50 |")
        print("|" + "---|" * (len(configs) + 3))
        for work, history in cases:
            base = med[("baseline", work, history)][clock]
            over = {c: med[(c, work, history)][clock] - base for c in configs[1:]}
            cells = [f"{over[c]:+,.0f} µs ({over[c] / base:+.1%})" for c in configs[1:]]
            peers = [over[c] for c in configs if c in PEERS]
            best = min(peers) if peers else float("nan")
            ratio = over["spanfold"] / best if peers and best > 0 else float("nan")
            verdict = "met" if ratio <= 0.5 else "NOT met"
            print(f"| {work} | {base:,.0f} | " + " | ".join(cells) + f" | {ratio:.2f}x | {verdict} |")
    own_cost_table(med, configs, cases)


def own_cost_table(med: Medians, configs: list[str], cases: list[Case]) -> None:
    """The instrumentation's own CPU per call, measured from inside the process: no baseline subtracted."""
    print(
        "\nInstrumentation CPU per call, measured inside the process: the calling thread's CPU outside the SDK's own "
        "work (timers around the whole call and around the SDK's create and chunk making; the baseline's difference, "
        "the timers' and the loop's own, taken off), plus the CPU of the process's other threads (spanfold's folding "
        "worker; the peers' batch exporters). n/a: OpenInference wraps the SDK client's request method, inside create, "
        "so its work cannot be told from the SDK's this way\n"
    )
    print("| workload | config | calling thread µs | other threads µs | total µs | / best peer |")
    print("|---|---|---|---|---|---|")
    targets = []
    for work, history in cases:
        shim = med[("baseline", work, history)]["inside"]
        calling = {c: med[(c, work, history)]["inside"] - shim for c in configs[1:]}
        measured = [c for c in configs[1:] if c in MEASURED_INSIDE]
        total = {c: calling[c] + med[(c, work, history)]["worker"] for c in measured}
        best = min((total[c] for c in measured if c in PEERS), default=float("nan"))
        for c in configs[1:]:
            if c not in measured:
                print(f"| {work} | {c} | n/a | | | |")
                continue
            print(
                f"| {work} | {c} | {calling[c]:,.0f} | {med[(c, work, history)]['worker']:,.0f} | {total[c]:,.0f} | "
                f"{total[c] / best:.2f}x |"
            )
        peers = [c for c in measured if c in PEERS]
        if "spanfold" in measured and peers:
            best_peer = min(peers, key=lambda c: calling[c])
            ratio = calling["spanfold"] / calling[best_peer]
            targets.append(
                f"TARGET | calling-thread overhead <= 0.5x the best peer's, {work} (p50) | "
                f"{calling['spanfold']:,.0f} µs vs {best_peer} {calling[best_peer]:,.0f} µs: {ratio:.2f}x | "
                f"{'met' if ratio <= 0.5 else 'NOT met'}"
            )
    print()
    for line in targets:
        print(line)


GROWTH_WORKLOADS = {
    "agent": "an agent run per batch of 50 calls: the history starts at H messages, each call adds the reply and a "
    "user message (H..H+98); only what is new needs work",
    "sync": "the same call repeated with H messages of history: every call is a new conversation, so its trace (all "
    "H messages) is folded and written each time",
}


def growth_table(rounds: int, calls: int) -> None:
    histories = [10, 50, 200]
    cases = [(w, h) for w in GROWTH_WORKLOADS for h in histories]
    print(f"machine at start: {load()}")
    med = run_matrix(["baseline", "spanfold"], cases, rounds, calls)
    print(f"machine at end: {load()}")
    for work, what in GROWTH_WORKLOADS.items():
        print(f"\n### {work}: {what}\n")
        print(
            f"spanfold's own CPU per call (calling thread inside create, shim-calibrated, + folding worker); medians "
            f"of {rounds} interleaved rounds\n"
        )
        print("| H | calling thread µs | worker µs | total µs | total / at 10 | target <= 3x |")
        print("|---|---|---|---|---|---|")
        own = {}
        for h in histories:
            row = med[("spanfold", work, h)]
            calling = row["inside"] - med[("baseline", work, h)]["inside"]
            own[h] = calling + row["worker"]
            growth = own[h] / own[histories[0]]
            verdict = "met" if growth <= 3 else "NOT met"
            print(f"| {h} | {calling:,.0f} | {row['worker']:,.0f} | {own[h]:,.0f} | {growth:.2f}x | {verdict} |")
        for clock in CLOCKS:
            print(
                f"\nThe same by subtraction ({clock} time: spanfold's process minus the uninstrumented one; the SDK's "
                f"own cost grows with H and its noise with it)\n"
            )
            print("| H | baseline µs | spanfold µs | overhead µs |")
            print("|---|---|---|---|")
            for h in histories:
                base, ours = med[("baseline", work, h)][clock], med[("spanfold", work, h)][clock]
                print(f"| {h} | {base:,.0f} | {ours:,.0f} | {ours - base:+,.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=600, help="calls per process (streamed: half as many)")
    parser.add_argument("--history-growth", action="store_true")
    args = parser.parse_args()
    if args.history_growth:
        growth_table(args.rounds, args.calls // 2)
    else:
        peer_table(args.rounds, args.calls)


if __name__ == "__main__":
    main()

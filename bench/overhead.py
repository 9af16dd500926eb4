"""Per-call overhead of spanfold and its peers, side by side, measured in one run.

Every (configuration, workload) is measured in a fresh process; configurations are interleaved round by
round in a shuffled order so machine noise hits them alike; the table quotes medians over rounds.

    python bench/overhead.py                  # the peer table (needs bench/requirements.txt installed)
    python bench/overhead.py --history-growth # spanfold's overhead at 10, 50 and 200 messages of history
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEERS = ("otel-v2", "openllmetry", "openinference")


def measure(config: str, workload: str, history: int, calls: int) -> float:
    out = subprocess.run(
        [sys.executable, str(HERE / "workload.py"), "--config", config, "--workload", workload,
         "--history", str(history), "--calls", str(calls)],
        check=True, capture_output=True, text=True,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["us_per_call"])


def available(config: str) -> bool:
    module = {"otel-v2": "opentelemetry.instrumentation.openai_v2", "openllmetry": "opentelemetry.instrumentation.openai",
              "openinference": "openinference.instrumentation.openai"}.get(config)
    if module is None:
        return True
    probe = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
    return probe.returncode == 0


def run_matrix(configs: list[str], cases: list[tuple[str, int]], rounds: int, calls: int) -> dict[tuple[str, str, int], float]:
    samples: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for r in range(rounds):
        jobs = [(c, w, h) for c in configs for (w, h) in cases]
        random.shuffle(jobs)
        for config, workload, history in jobs:
            samples[(config, workload, history)].append(measure(config, workload, history, calls))
        print(f"round {r + 1}/{rounds} done", file=sys.stderr)
    return {key: statistics.median(values) for key, values in samples.items()}


def peer_table(rounds: int, calls: int) -> None:
    configs = ["baseline", "spanfold", *[p for p in PEERS if available(p)]]
    cases = [("sync", 10), ("stream", 10), ("async", 10)]
    med = run_matrix(configs, cases, rounds, calls)
    print(f"\nPer-call overhead, 10-message history + 2 tools, content capture on; medians of {rounds} interleaved rounds")
    print(f"(each round: a fresh process per configuration, {calls} calls, per-call median of 50-call batches)\n")
    header = "| workload | baseline µs | " + " | ".join(f"{c} overhead" for c in configs[1:]) + " | spanfold / best peer |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for workload, history in cases:
        base = med[("baseline", workload, history)]
        cells, peers = [], []
        for c in configs[1:]:
            over = med[(c, workload, history)] - base
            cells.append(f"+{over:,.0f} µs ({over / base:+.1%})")
            if c in PEERS:
                peers.append(over)
        ours = med[("spanfold", workload, history)] - base
        best = min(peers) if peers else float("nan")
        ratio = ours / best if peers and best > 0 else float("nan")
        print(f"| {workload} | {base:,.0f} | " + " | ".join(cells) + f" | {ratio:.2f}x |")


def growth_table(rounds: int, calls: int) -> None:
    histories = [10, 50, 200]
    cases = [("sync", h) for h in histories]
    med = run_matrix(["baseline", "spanfold"], cases, rounds, calls)
    print(f"\nspanfold overhead by history length (sync, content on); medians of {rounds} interleaved rounds\n")
    print("| history | baseline µs | spanfold µs | overhead µs | overhead / overhead at 10 |")
    print("|---|---|---|---|---|")
    first = med[("spanfold", "sync", 10)] - med[("baseline", "sync", 10)]
    for h in histories:
        base, ours = med[("baseline", "sync", h)], med[("spanfold", "sync", h)]
        print(f"| {h} | {base:,.0f} | {ours:,.0f} | +{ours - base:,.0f} | {(ours - base) / first:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--history-growth", action="store_true")
    args = parser.parse_args()
    if args.history_growth:
        growth_table(args.rounds, args.calls)
    else:
        peer_table(args.rounds, args.calls)


if __name__ == "__main__":
    main()

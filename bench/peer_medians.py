"""The outside view decided on several runs: ``../shared/peerbench/compare.sh`` run N times (fresh processes,
interleaved rounds, as it does), then each run's ratios, their medians, and the ratios of all runs' rounds pooled.

One run's stream ratio swings with the baseline's noise (a 53-chunk stream's p50 moves 5-10 % between fresh
processes, as much as spanfold adds); the pooled figure is the median of the paired differences over every round of
every run (N x ROUNDS pairs), which one noisy run cannot move much. Run from the checkout, on a quiet machine:

    python bench/peer_medians.py                      # 3 runs of 5 rounds: ~30 minutes on 2 cores
    python bench/peer_medians.py --runs 3 --rounds 5 --keep /tmp/peer   # keep each run's raw file

Prints the machine's load before and after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEERBENCH = HERE.parent.parent / "shared" / "peerbench"
PEERS = ("otel_v2_otlp", "genai_openai_otlp")
WORKLOADS = ("nonstream", "async", "stream")


def ratios(rows: list[dict[str, object]]) -> dict[str, tuple[float, float, float, float]]:
    """Per workload: spanfold's added p50 and CPU (median of per-round paired differences against the baseline),
    and each as a ratio to the best peer's."""
    by: dict[tuple[str, str], dict[object, dict[str, object]]] = {}
    for r in rows:
        by.setdefault((str(r["setup"]), str(r["workload"])), {})[r["round"]] = r
    out = {}
    for w in WORKLOADS:
        base = by.get(("baseline", w), {})
        if not base:
            continue
        s50, scpu = _added(by, base, "spanfold", w, "p50_us"), _added(by, base, "spanfold", w, "cpu_per_call_us")
        p50 = min(_added(by, base, p, w, "p50_us") for p in PEERS)
        pcpu = min(_added(by, base, p, w, "cpu_per_call_us") for p in PEERS)
        out[w] = (s50, scpu, s50 / p50, scpu / pcpu)
    return out


def _added(
    by: dict[tuple[str, str], dict[object, dict[str, object]]],
    base: dict[object, dict[str, object]],
    setup: str,
    workload: str,
    key: str,
) -> float:
    """The median over rounds of ``setup``'s figure less the baseline's of the same round."""
    pairs = by.get((setup, workload), {})
    return statistics.median(float(pairs[k][key]) - float(base[k][key]) for k in pairs if k in base)  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keep", help="a directory for each run's raw file")
    args = parser.parse_args()
    keep = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="peer-medians-"))
    keep.mkdir(parents=True, exist_ok=True)
    pooled: list[dict[str, object]] = []
    per_run = []
    for run in range(args.runs):
        raw = keep / f"run{run + 1}.jsonl"
        raw.unlink(missing_ok=True)
        load_before = os.getloadavg()[0]
        env = dict(os.environ, RAW=str(raw), WORKLOADS=",".join(WORKLOADS), ROUNDS=str(args.rounds))
        subprocess.run(["bash", str(PEERBENCH / "compare.sh")], env=env, capture_output=True, text=True)
        rows = [json.loads(line) for line in raw.read_text().splitlines() if line.strip()]
        if not rows:
            sys.exit(f"peer_medians: run {run + 1} wrote no rows (run compare.sh by hand to see why)")
        for r in rows:
            r["round"] = (run, r["round"])
        pooled.extend(rows)
        figures = ratios(rows)
        per_run.append(figures)
        print(
            f"run {run + 1} (load {load_before:.2f} -> {os.getloadavg()[0]:.2f}): "
            + "; ".join(
                f"{w} {s50:+.0f} us {r50:.2f}x / cpu {scpu:+.0f} us {rcpu:.2f}x"
                for w, (s50, scpu, r50, rcpu) in figures.items()
            ),
            flush=True,
        )
    print(
        "\n| workload | latency ratio, each run | median | CPU ratio, each run | median "
        "| pooled rounds: latency / CPU |"
    )
    print("|---|---|---|---|---|---|")
    pooled_figures = ratios(pooled)
    for w in WORKLOADS:
        r50s = [run[w][2] for run in per_run if w in run]
        rcpus = [run[w][3] for run in per_run if w in run]
        if not r50s:
            continue
        s50, scpu, p50, pcpu = pooled_figures[w]
        print(
            f"| {w} | {' / '.join(f'{r:.2f}' for r in r50s)} | {statistics.median(r50s):.2f}x "
            f"| {' / '.join(f'{r:.2f}' for r in rcpus)} | {statistics.median(rcpus):.2f}x "
            f"| {p50:.2f}x ({s50:+.0f} us) / {pcpu:.2f}x ({scpu:+.0f} us) |"
        )
    print(f"\nraw files: {keep}")


if __name__ == "__main__":
    main()

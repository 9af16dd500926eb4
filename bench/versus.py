"""spanfold at another commit against this checkout: the calling thread's cost, sync / async / stream.

For a change that must not make the user's call slower (issue 29: no more than 10 %). The other commit's ``src`` and
``bench`` are exported to a temporary directory (``git archive``: nothing in the repository changes); each round runs,
in a shuffled order, a fresh process per (checkout, workload) of ``bench/workload.py --config spanfold --inside`` with
that checkout's sources first on ``sys.path``, and the uninstrumented baseline once per workload. Quoted: medians over
rounds of the calling thread's CPU outside the SDK's own work (``inside``, the instrumentation's share), of the process
CPU per call less the baseline's (``cpu``), and their ratio new / old.

    python bench/versus.py --base 36fb6ea [--rounds 7] [--calls 600]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections import defaultdict
from io import BytesIO
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORKLOADS = ("sync", "async", "stream")
CALLS_SCALE = {"sync": 1.0, "async": 1.0, "stream": 0.5}


def export(rev: str, into: Path) -> Path:
    """``rev``'s src/ and bench/ under ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src", "bench"], check=True, capture_output=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def measure(root: Path, config: str, work: str, calls: int) -> dict[str, float]:
    n = max(100, int(calls * CALLS_SCALE[work]))
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    command = [sys.executable, str(root / "bench" / "workload.py"), "--config", config, "--workload", work]
    command += ["--history", "10", "--calls", str(n), "--warmup", str(min(100, n // 2))]
    if config == "spanfold":
        command.append("--inside")
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env, cwd=root)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=600)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="spanfold-versus-") as tmp:
        roots = {"old": export(args.base, Path(tmp)), "new": ROOT}
        samples: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for r in range(args.rounds):
            jobs = [(side, work) for side in ("old", "new", "baseline") for work in WORKLOADS]
            random.shuffle(jobs)
            for side, work in jobs:
                root = roots["new"] if side == "baseline" else roots[side]
                result = measure(root, "baseline" if side == "baseline" else "spanfold", work, args.calls)
                samples[(side, work)]["cpu"].append(result["cpu_us_per_call"])
                if "inside_us_per_call" in result:
                    samples[(side, work)]["inside"].append(result["inside_us_per_call"])
            print(f"round {r + 1}/{args.rounds} done; load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    med = {key: {clock: statistics.median(v) for clock, v in by.items()} for key, by in samples.items()}
    print(f"spanfold at {args.base} (old) against this checkout (new); medians of {args.rounds} interleaved rounds\n")
    print("| workload | inside µs old | inside µs new | new / old | CPU overhead µs old | new | new / old |")
    print("|---|---|---|---|---|---|---|")
    for work in WORKLOADS:
        base = med[("baseline", work)]["cpu"]
        old, new = med[("old", work)], med[("new", work)]
        cpu_old, cpu_new = old["cpu"] - base, new["cpu"] - base
        print(
            f"| {work} | {old['inside']:.1f} | {new['inside']:.1f} | {new['inside'] / old['inside']:.2f}x "
            f"| {cpu_old:.1f} | {cpu_new:.1f} | {cpu_new / cpu_old:.2f}x |"
        )


if __name__ == "__main__":
    main()

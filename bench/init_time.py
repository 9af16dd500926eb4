"""What ``spanfold.init()`` adds to the start of an application that imports only openai.

Three cases, each in a fresh interpreter, timed from inside (interpreter start-up is not counted):

* ``openai``: ``import openai`` (the baseline: what the application pays anyway);
* ``init+openai``: ``import spanfold; spanfold.init()`` then ``import openai`` (openai is patched as it is imported);
* ``init``: ``import spanfold; spanfold.init()`` alone.

As installed: every module's bytecode cached (``PYTHONDONTWRITEBYTECODE`` is dropped and each case runs once,
uncounted, before the rounds; a source checkout compiled on every start would count the compiler, 40-50 ms here).
Rounds interleave the cases in a shuffled order; the table quotes medians over rounds and the delta against the
baseline of the same rounds. ``--src DIR`` measures another checkout's ``src`` (say, the commit before lazy patching)
with the same interpreter and packages.

    python bench/init_time.py [--rounds 9] [--src ../old/src]
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

CASES = {
    "openai": "import openai",
    "init+openai": "import spanfold; spanfold.init(output=OUT); import openai",
    "init": "import spanfold; spanfold.init(output=OUT)",
}

CHILD = """
import time, sys, json
OUT = sys.argv[1]
t0, c0 = time.perf_counter(), time.process_time()
exec(sys.argv[2])
t1, c1 = time.perf_counter(), time.process_time()
imported = "anthropic" in sys.modules
print(json.dumps({"ms": (t1 - t0) * 1000, "cpu_ms": (c1 - c0) * 1000, "anthropic_imported": imported}))
"""


def run(case: str, src: str | None, out: str) -> dict[str, float]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: pip writes every module's bytecode
    if src:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, out, CASES[case]], capture_output=True, text=True, env=env, check=True
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--src", help="a checkout's src directory to measure instead of the installed spanfold")
    args = parser.parse_args()
    times: dict[str, list[float]] = {case: [] for case in CASES}
    cpu: dict[str, list[float]] = {case: [] for case in CASES}
    anthropic_imported = False
    with tempfile.TemporaryDirectory() as out:
        for case in CASES:  # a warm-up run each, not counted: the bytecode of a source checkout gets written
            run(case, args.src, out)
        for _ in range(args.rounds):
            order = list(CASES)
            random.shuffle(order)
            for case in order:
                result = run(case, args.src, out)
                times[case].append(result["ms"])
                cpu[case].append(result["cpu_ms"])
                anthropic_imported |= bool(result["anthropic_imported"]) and case != "openai"
    load = "load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min)".format(*os.getloadavg())
    print(f"machine: {load}, {os.cpu_count()} cores")
    added = 0.0
    for clock, table in (("wall", times), ("CPU (process_time: steadier on a shared machine)", cpu)):
        base = statistics.median(table["openai"])
        print(f"\n{clock}, medians of {args.rounds} rounds")
        print(f"{'case':<14}{'median ms':>11}{'min ms':>9}{'max ms':>9}{'vs openai':>12}")
        for case, values in table.items():
            median = statistics.median(values)
            delta = "" if case == "openai" else f"{median - base:+.0f} ms"
            print(f"{case:<14}{median:>11.0f}{min(values):>9.0f}{max(values):>9.0f}{delta:>12}")
        added = statistics.median(table["init+openai"]) - base
    verdict = "met" if added <= 100 else "NOT met"
    print(f"\ntarget: init() adds <= 100 ms CPU to an openai app: {verdict} ({added:+.0f} ms)")
    print(f"TARGET | init() adds <= 100 ms to an app that imports only openai (CPU) | {added:+.0f} ms | {verdict}")
    print(f"anthropic imported by spanfold: {'yes' if anthropic_imported else 'no'} ({args.rounds} rounds)")


if __name__ == "__main__":
    main()

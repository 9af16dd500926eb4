"""What compiling the fold would buy: the fold's modules built with mypyc, against the same source as Python.

Issue 21's short-trace and receiver targets need the fold's per-span cost cut about in half; one way is a compiled
fold. This measures that way before anyone decides on it: ``src`` is copied to a temporary directory, the modules the
fold runs (:data:`MODULES`) are compiled there with mypyc (no code changes: spanfold is ``mypy --strict`` clean), and
``bench/fold_throughput.py`` runs against both checkouts in interleaved fresh processes. Nothing here changes how
spanfold is built or installed.

Two modules are left as Python because mypyc changes their behaviour: ``pairing.py`` (a slotted generic dataclass,
which mypyc cannot build) and ``exporter/dialects/genai_events.py`` (it registers a bound method for fork safety through
``weakref.WeakMethod``, which a compiled method is not).

    python bench/compiled_fold.py [--rounds 3]     # needs mypy (mypyc) and a C compiler
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
SRC = BENCH.parent / "src"

#: The fold's modules: the fold itself, its history matching and events, the dialects that turn spans into steps (the
#: two common foreign ones included), the trace model, the JSON helpers and the prefix cache.
MODULES = [
    "spanfold/exporter/fold/folding.py",
    "spanfold/exporter/fold/history.py",
    "spanfold/exporter/fold/events.py",
    "spanfold/exporter/dialects/dispatch.py",
    "spanfold/exporter/fold/meta.py",
    "spanfold/exporter/fold/nested_tools.py",
    "spanfold/exporter/steps.py",
    "spanfold/exporter/dialects/openllmetry.py",
    "spanfold/exporter/dialects/openinference.py",
    "spanfold/codecs/json_prefix.py",
    "spanfold/codecs/jsonio.py",
    "spanfold/semconv/shapes.py",
    "spanfold/trace/model.py",
]

ROW = re.compile(r"^\| (short|200-step)[^|]*\| \d+ \| [^|]+\| ([\d.]+) / [\d.]+ \| ([\d,]+) \|")


def compiled_copy(into: Path) -> Path:
    """``src`` copied into ``into`` with :data:`MODULES` compiled next to their sources (the compiled ones load
    first)."""
    src = into / "src"
    shutil.copytree(SRC, src, ignore=shutil.ignore_patterns("__pycache__"))
    mypyc = [sys.executable, "-m", "mypyc", *MODULES]
    done = subprocess.run(mypyc, cwd=src, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"mypyc failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return src


def throughput(src: Path, rounds: int) -> dict[str, tuple[float, float]]:
    """fold_throughput.py's short and 200-step rows against ``src``: (ms per trace, MB/s)."""
    env = dict(os.environ, PYTHONPATH=str(src))
    out = subprocess.run(
        [sys.executable, str(BENCH / "fold_throughput.py"), "--rounds", str(rounds)],
        env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    rows = {}
    for line in out.splitlines():
        match = ROW.match(line)
        if match:
            rows[match.group(1)] = (float(match.group(2)), float(match.group(3).replace(",", "")))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved fresh-process pairs")
    parser.add_argument("--fold-rounds", type=int, default=5, help="fold_throughput.py's own --rounds")
    args = parser.parse_args()
    load = "load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min)".format(*os.getloadavg())
    print(f"machine: {load}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="spanfold-mypyc-") as tmp:
        compiled = compiled_copy(Path(tmp))
        samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.rounds):
            for label, src in (("python", SRC), ("mypyc", compiled)):
                for kind, value in throughput(src, args.fold_rounds).items():
                    samples.setdefault((label, kind), []).append(value)
    print(f"\nFold throughput, the fold as Python and compiled with mypyc ({len(MODULES)} modules); medians of "
          f"{args.rounds} interleaved fresh-process pairs\n")  # fmt: skip
    print("| trace | Python: ms per trace / MB/s | mypyc: ms per trace / MB/s | speed-up |")
    print("|---|---|---|---|")
    for kind in ("short", "200-step"):
        py = [statistics.median(v) for v in zip(*samples[("python", kind)], strict=True)]
        cc = [statistics.median(v) for v in zip(*samples[("mypyc", kind)], strict=True)]
        print(f"| {kind} | {py[0]:.3f} / {py[1]:,.0f} | {cc[0]:.3f} / {cc[1]:,.0f} | {py[0] / cc[0]:.2f}x |")
    print("machine: load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min)".format(*os.getloadavg()))


if __name__ == "__main__":
    main()

"""Issue 21's targets, met or not: one table from the figures' own commands.

Every figure's command prints its targets as ``TARGET | target | result | verdict`` lines. This runs each command
(or, with ``--logs DIR``, reads their saved outputs: ``DIR/<name>.txt``) and prints the lines as one table, with the
command that measured each.

    python bench/targets.py                 # runs everything (about half an hour on the 2-core VM)
    python bench/targets.py --logs /tmp/logs   # the table from saved outputs
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: name -> the command (arguments of ``python``) that measures the figure.
COMMANDS: dict[str, list[str]] = {
    "overhead": ["bench/overhead.py", "--rounds", "3", "--calls", "300"],
    "process_cpu": ["bench/process_cpu.py", "--rounds", "3", "--calls", "300"],
    "fold_throughput": ["bench/fold_throughput.py", "--rounds", "5"],
    "receiver_ingest": ["bench/receiver_ingest.py"],
    "init_time": ["bench/init_time.py", "--rounds", "5"],
    "memory": ["bench/memory.py", "--rounds", "1"],
}


def output_of(name: str, logs: Path | None) -> str:
    if logs is not None:
        path = logs / f"{name}.txt"
        return path.read_text(encoding="utf-8") if path.exists() else ""
    done = subprocess.run([sys.executable, *COMMANDS[name]], cwd=HERE.parent, capture_output=True, text=True)
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=Path, help="read DIR/<name>.txt instead of running the commands")
    parser.add_argument("--only", help="comma-separated names: " + ", ".join(COMMANDS))
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(COMMANDS)
    print("| target | result | verdict | command |")
    print("|---|---|---|---|")
    for name in names:
        command = "python " + " ".join(COMMANDS[name])
        lines = [line for line in output_of(name, args.logs).splitlines() if line.startswith("TARGET |")]
        if not lines:
            print(f"| ({name}) | not measured | n/a | `{command}` |")
        for line in lines:
            _, target, result, verdict = (cell.strip() for cell in line.split("|", 3))
            print(f"| {target} | {result} | **{verdict}** | `{command}` |")


if __name__ == "__main__":
    main()

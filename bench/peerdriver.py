"""The outside view's driver (``../shared/peerbench/bench.py``) run by a bench script with set-ups of its own: fresh
processes pinned to one CPU, the configurations in a shuffled order each round, spanfold from this checkout's ``src``
(and ``bench/`` importable: the set-ups may record with :func:`spans.recorded`).

The interpreter must have openai, the OTel SDK, the openai-v2 instrumentation and the OTLP exporter (the venv
``peerbench/compare.sh`` builds)."""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import tempfile
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def parser(doc: str | None) -> argparse.ArgumentParser:
    """The options every such script takes: rounds, calls, workload, the interpreter and where peerbench is."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=1500, help="calls per process (a quarter of it for streams)")
    ap.add_argument("--workload", default="nonstream", choices=["nonstream", "stream", "async"])
    ap.add_argument("--python", default="/tmp/peerbench-venvs/v2/bin/python")
    ap.add_argument("--peerbench", type=Path, default=ROOT.parent / "shared" / "peerbench")
    return ap


def spanfold_to_serve(tp: Any) -> None:
    """A peerbench set-up (in the driver's process): spanfold's instrumentation exporting OTLP as the peers do, to the
    sink process where ``spanfold serve`` would fold (the receiver deployment: like the peers' collector, its CPU is
    not the application's). Its configuration's name must end in ``_otlp``, for the driver to start the sink."""
    import setups  # ../shared/peerbench/setups.py

    from spanfold.content.runtime import Runtime
    from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor

    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    OpenAIInstrumentor().instrument(tracer_provider=tp, runtime=Runtime(capture_content=True))
    setups._otlp_export(tp)


def calls_of(args: argparse.Namespace) -> int:
    return int(args.calls if args.workload != "stream" else max(100, args.calls // 4))


def interleaved(
    args: argparse.Namespace, configs: Sequence[str], setups: str, env: Mapping[str, str] | None = None
) -> dict[str, list[tuple[dict[str, Any], str]]]:
    """Each configuration (a function of the ``setups`` module source) once per round, in fresh processes: per
    configuration, each run's result line and its stderr. A run whose calls did not return what they should stops
    the script."""
    rows: dict[str, list[tuple[dict[str, Any], str]]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as helpers:
        (Path(helpers) / "peer_setups.py").write_text(setups)
        path = os.pathsep.join([str(ROOT / "src"), str(ROOT / "bench"), helpers, str(args.peerbench)])
        environ = {**os.environ, **(env or {}), "PYTHONPATH": path}
        for _ in range(args.rounds):
            order = list(configs)
            random.shuffle(order)
            for config in order:
                command = ["taskset", "-c", "1", args.python, str(args.peerbench / "bench.py")]
                command += ["--setup", f"peer_setups:{config}", "--workload", args.workload]
                command += ["--calls", str(calls_of(args))]
                out = subprocess.run(
                    command, check=True, capture_output=True, text=True, env=environ, cwd=tempfile.gettempdir()
                )
                result = json.loads(out.stdout.strip().splitlines()[-1])
                if result.get("problems"):
                    raise SystemExit(f"{config}: the calls did not return what they should: {result['problems']}")
                rows[config].append((result, out.stderr))
    return rows

"""stdlib ``json`` against orjson and msgspec on spanfold's own JSON workloads (CPU time, best of rounds).

* decode (the folding worker): every JSON attribute of a recorded 3-step agent run and of a 200-step one
  (``gen_ai.input.messages``, ``gen_ai.output.messages``, tool definitions, tool arguments), parsed one by one;
* encode, calling thread: the converted messages of the same run (each message on its own, as the history cache
  converts them), with the options spanfold uses (compact separators, non-ASCII kept);
* encode, writers: each folded trace's JSONL lines (Invariant events, AgentV document, metadata record).

Every library's output is checked against the stdlib's first (bytes for encode, values for decode).

    python bench/json_libs.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import msgspec
import orjson
import spans

from spanfold.exporter.fold.folding import fold
from spanfold.trace import formats

STD = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
MSGSPEC_ENC = msgspec.json.Encoder()
MSGSPEC_DEC = msgspec.json.Decoder()


def cpu(fn: Callable[[], Any], rounds: int, repeat: int) -> float:
    """Best CPU seconds per ``fn()`` call over ``rounds`` (each ``repeat`` calls)."""
    best = float("inf")
    for _ in range(rounds):
        start = time.thread_time()
        for _ in range(repeat):
            fn()
        best = min(best, (time.thread_time() - start) / repeat)
    return best


def workloads(
    texts: list[str], messages: list[Any], docs: list[Any], nbytes: int, steps: int
) -> dict[str, dict[str, Callable[[], Any]]]:
    return {
        f"decode {len(texts)} attributes ({nbytes / 1e3:,.0f} kB), {steps}-step run": {
            "json": lambda: [json.loads(t) for t in texts],
            "orjson": lambda: [orjson.loads(t) for t in texts],
            "msgspec": lambda: [MSGSPEC_DEC.decode(t) for t in texts],
        },
        f"encode {len(messages)} messages one by one (calling thread), {steps}-step run": {
            "json": lambda: [STD.encode(m) for m in messages],
            "orjson": lambda: [orjson.dumps(m).decode() for m in messages],
            "msgspec": lambda: [MSGSPEC_ENC.encode(m).decode() for m in messages],
        },
        f"encode the trace's 3 JSONL documents (writers), {steps}-step run": {
            "json": lambda: [STD.encode(d) for d in docs],
            "orjson": lambda: [orjson.dumps(d) for d in docs],
            "msgspec": lambda: [MSGSPEC_ENC.encode(d) for d in docs],
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print(
        "machine: load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min), {} cores".format(*os.getloadavg(), os.cpu_count())
    )
    rows = []
    for steps in (3, 200):
        run = spans.record_agent_run(steps)
        texts = [v for r in run for v in r.attributes.values() if isinstance(v, str) and v[:1] in "[{"]
        values = [json.loads(t) for t in texts]
        messages = [m for v in values if isinstance(v, list) for m in v if isinstance(m, dict)]
        trace = fold(run, trace_id="bench")
        docs = [trace.to_invariant(), formats.agentv_document(trace), formats.meta_record(trace)]
        nbytes = sum(len(t.encode()) for t in texts)
        repeat = 200 if steps == 3 else 1
        work = workloads(texts, messages, docs, nbytes, steps)
        for label, fns in work.items():
            reference = fns["json"]()
            for lib, fn in fns.items():
                out = fn()
                if label.startswith("decode"):
                    same = out == reference
                else:
                    same = [o if isinstance(o, str) else o.decode() for o in out] == reference
                rows.append((label, lib, cpu(fn, args.rounds, repeat) * 1e6, same))
    print("\n| workload | library | CPU µs (best of rounds) | vs json | same output |")
    print("|---|---|---|---|---|")
    base = 0.0
    for label, lib, us, same in rows:
        base = us if lib == "json" else base
        print(f"| {label} | {lib} | {us:,.1f} | {us / base:.2f}x | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()

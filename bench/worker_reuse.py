"""What the worker's reuse of the calling thread's structures saves: record -> step per span, taken back vs parsed.

Real spans (``bench/spans.py``: a 3-step and a 50-step agent run recorded by spanfold's instrumentation). For the
"taken back" rows each message attribute's text is put in ``jsonio.SHARED`` with its structure first, as the calling
thread does when it encodes it (outside the clock); the "parsed" rows fold copies whose texts were rebuilt (other
``str`` objects: what a foreign producer's or a wire-decoded span looks like). CPU time of this thread, medians of 7
rounds, and the reuse counters.

    python bench/worker_reuse.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spans
from spanfold.exporter.json_prefix import ArrayPrefixCache

from spanfold import jsonio
from spanfold.exporter import dialects

KEYS = ("gen_ai.input.messages", "gen_ai.output.messages")


def rebuilt(records: list[Any]) -> list[Any]:
    """Copies whose attribute texts are new ``str`` objects (equal text)."""
    return [
        spans.dataclasses.replace(
            r, attributes={k: "".join(list(v)) if isinstance(v, str) else v for k, v in r.attributes.items()}
        )
        for r in records
    ]


def main() -> None:
    jsonio.SHARED.enabled = True
    jsonio.SHARED.max_items = 1 << 20  # every text of a round kept (a real worker takes each back soon after its put)
    jsonio.SHARED.max_chars = 1 << 31
    print("| run | spans | record -> step, parsed (µs per span) | taken back (µs per span) | saved |")
    print("|---|---|---|---|---|")
    for steps in (3, 50):
        run = spans.record_agent_run(steps)
        parsed_t, shared_t = [], []
        for _ in range(7):
            copies = [rebuilt(run) for _ in range(20)]
            dialects.HISTORIES.clear()
            start = time.thread_time()
            for records in copies:
                for r in records:
                    dialects.to_step(r)
            parsed_t.append((time.thread_time() - start) / (20 * len(run)) * 1e6)
            copies = [rebuilt(run) for _ in range(20)]
            for records in copies:  # the calling thread's puts (outside the clock), its messages shared from call to
                history = ArrayPrefixCache()  # call as its history cache shares them
                for r in records:
                    for key in KEYS:
                        text = r.attributes.get(key)
                        if isinstance(text, str):
                            jsonio.SHARED.put(text, history.loads(text))
            hits = jsonio.SHARED.hits
            start = time.thread_time()
            for records in copies:
                for r in records:
                    dialects.to_step(r)
            shared_t.append((time.thread_time() - start) / (20 * len(run)) * 1e6)
            taken = jsonio.SHARED.hits - hits
        p, s = statistics.median(parsed_t), statistics.median(shared_t)
        print(
            f"| {steps}-step | {len(run)} | {p:.1f} | {s:.1f} | {1 - s / p:.0%} ({taken} texts taken back per round) |"
        )


if __name__ == "__main__":
    main()

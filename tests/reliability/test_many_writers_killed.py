"""Several processes append to one output directory at once while some are killed with SIGKILL mid-write (issue 45):
every complete line on disk parses, the metadata file describes the events file line by line once the next writer
has repaired a torn tail, and every run a process had acknowledged (flushed) before the kill is on disk exactly once.
"""

from __future__ import annotations

import json
import random
import signal
import time
from collections import Counter
from pathlib import Path

from .test_crash_safety import spawn, split, wait_for

WRITERS = 4
KILLED = 2


def test_writers_killed_among_writers_lose_nothing_they_acknowledged(tmp_path: Path) -> None:
    out = tmp_path / "traces"
    rng = random.Random(45)
    children = [spawn("loop", out, 0, -200_000) for _ in range(WRITERS)]  # traces of up to 200 kB, varied
    try:
        for child in children:
            wait_for(child, "ready")  # its first run flushed: acknowledged
        time.sleep(rng.uniform(0.2, 0.5))  # all of them appending at once
        for child in children[:KILLED]:
            child.send_signal(signal.SIGKILL)
            time.sleep(rng.uniform(0.0, 0.1))
        for child in children[KILLED:]:
            child.send_signal(signal.SIGTERM)  # the survivors flush what they finished and stop
    finally:
        for child in children:
            if child.poll() is None:
                time.sleep(5)
            if child.poll() is None:
                child.kill()
            child.wait()
    finisher = spawn("count", out, 1, 10)  # the next writer repairs a torn tail before its own line
    wait_for(finisher, "done")
    assert finisher.wait() == 0
    whos = _check(out)
    counts = Counter(whos)
    assert [who for who, n in counts.items() if n > 1] == []  # no run written twice
    for child in children:
        assert counts[f"{child.pid}:0"] == 1, f"writer {child.pid}'s acknowledged run is not on disk once"
    assert counts[f"{finisher.pid}:0"] == 1
    for child in children:
        written = sorted(int(who.split(":")[1]) for who in counts if who.startswith(f"{child.pid}:"))
        assert written == list(range(len(written))), f"writer {child.pid} lost a run between two it wrote"


def _check(out: Path) -> list[str]:
    """Every line of both files parses, line for line, each trace whole (or the run a SIGTERM stopped, written
    incomplete as it ended); the ``<pid>:<k>`` of every trace, in file order."""
    events, tail = split(out / "traces.jsonl")
    metas, meta_tail = split(out / "traces.meta.jsonl")
    assert tail == meta_tail == b""
    assert len(events) == len(metas)
    whos = []
    for line, meta_line in zip(events, metas, strict=True):
        trace, meta = json.loads(line), json.loads(meta_line)["metadata"]
        if meta.get("meta_lost"):  # a metadata line a crash lost, restored as a placeholder
            continue
        who = meta["name"].removeprefix("crash-child ")
        if meta["status"] == "incomplete":  # stopped by SIGTERM inside the run (in its tool, or before it)
            assert meta["error"]["type"] == "SIGTERM"
            assert all(event["error"]["type"] == "SIGTERM" for event in trace)
            continue
        (event,) = trace
        written, payload = event["content"].split("|", 1)
        assert written == who and payload == "x" * len(payload)
        whos.append(who)
    return whos

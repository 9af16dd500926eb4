"""The context carried into threads and thread pools (spanfold.instrumentation.threads), beside OpenTelemetry's own
threading instrumentation: each case in a fresh interpreter (the patches are process-wide)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

CHILD = textwrap.dedent(
    """
    import json, sys, threading
    from concurrent.futures import ThreadPoolExecutor
    from opentelemetry import context, trace

    if sys.argv[2] == "otel-first":
        from opentelemetry.instrumentation.threading import ThreadingInstrumentor
        ThreadingInstrumentor().instrument()
    import spanfold
    handle = spanfold.init(output=sys.argv[1], threads=sys.argv[2] != "off")
    key = context.create_key("probe")
    seen = {}

    def look(where):
        seen[where] = context.get_value(key)

    class Late(threading.Timer):
        pass

    pool = ThreadPoolExecutor(1)
    pool.submit(look, "warm").result()  # its thread started outside any context: what it runs has the submitter's
    token = context.attach(context.set_value(key, "asked"))
    thread = threading.Thread(target=look, args=("thread",))
    thread.start()
    timer = Late(0.01, look, args=("timer",))
    timer.start()
    pool.submit(look, "pool").result()
    list(pool.map(look, ["map"]))
    context.detach(token)
    thread.join()
    timer.join()
    pool.submit(look, "outside").result()  # submitted outside the context: none
    pool.shutdown()
    patched, carried = hasattr(threading.Thread.start, "__wrapped__"), handle.threads
    spanfold.shutdown()
    print(json.dumps({"seen": seen, "carried_by_spanfold": carried, "patched": patched,
                      "after_shutdown": hasattr(threading.Thread.start, "__wrapped__"),
                      "imported": "opentelemetry.instrumentation.threading" in sys.modules}))
    """
)


#: What each place saw with the context carried: the warm-up and what was submitted outside ran with none.
CARRIED = {"warm": None, "thread": "asked", "timer": "asked", "pool": "asked", "map": "asked", "outside": None}


def run(tmp_path: Path, mode: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "traces"), mode], capture_output=True, text=True, check=True
    )
    got: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def test_threads_timers_and_pools_run_in_the_context_they_were_started_or_submitted_in(tmp_path: Path) -> None:
    got = run(tmp_path, "on")
    assert got["seen"] == CARRIED
    assert got["carried_by_spanfold"] is True and got["patched"] is True
    assert got["after_shutdown"] is False  # shutdown() puts threads back as they were
    assert got["imported"] is False  # OpenTelemetry's threading instrumentation is not needed for it


def test_off_carries_nothing(tmp_path: Path) -> None:
    got = run(tmp_path, "off")
    assert got["seen"] == {"warm": None, "thread": None, "timer": None, "pool": None, "map": None, "outside": None}
    assert got["patched"] is False


def test_opentelemetrys_threading_instrumentation_on_already_is_left_to_do_it(tmp_path: Path) -> None:
    got = run(tmp_path, "otel-first")
    assert got["seen"] == CARRIED
    assert got["carried_by_spanfold"] is False  # not done twice

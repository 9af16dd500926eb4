"""A child process for the crash-safety tests: ``python crash_child.py MODE OUTPUT [N] [SIZE]``.

Each trace is one ``spanfold.agent`` run (named ``crash-child <pid>:<k>``) around one ``@spanfold.tool`` call whose
result, the trace's one event, is ``"<pid>:<k>|" + "x" * SIZE``, so a test can tell every trace apart, check it whole,
and match it with its metadata line. A negative SIZE varies the payload below ``-SIZE``.
No LLM client is instrumented (the writer is under test, not the SDKs; it keeps the child's start fast).

Modes:
* ``loop``: write traces until killed (prints ``ready`` after the first is on disk).
* ``count``: write N traces, print ``done``, and exit normally (atexit must flush them).
* ``term``: write N traces, print ``ready``, then wait for SIGTERM (the handler must flush them).
* ``term_handler``: like ``term`` with the app's own SIGTERM handler installed first (it must still run).
* ``fork``: N ``multiprocessing`` workers (fork start method) write one trace each, then the parent one; prints the
  parent's and the workers' pids.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from typing import Any

import spanfold
from spanfold.instrumentation import registry


@spanfold.tool
def store(who: str, payload: str) -> str:
    return f"{who}|{payload}"


def one(k: int, size: int) -> None:
    who = f"{os.getpid()}:{k}"
    with spanfold.agent(f"crash-child {who}"):
        store(who, "x" * (size if size >= 0 else (k * 7919) % -size))


def main(argv: list[str]) -> None:
    mode, output = argv[1], argv[2]
    n = int(argv[3]) if len(argv) > 3 else 10
    size = int(argv[4]) if len(argv) > 4 else 100
    if mode == "term_handler":

        def app_handler(signum: int, frame: Any) -> None:
            print("app-handler", flush=True)
            sys.exit(3)

        signal.signal(signal.SIGTERM, app_handler)
    registry.INSTRUMENTORS.clear()
    spanfold.init(output=output)
    if mode == "loop":
        k = 0
        while True:
            one(k, size)
            k += 1
            if k == 1:
                spanfold.flush(timeout=30)
                print("ready", flush=True)
    if mode == "fork":
        workers = [multiprocessing.get_context("fork").Process(target=one, args=(0, size)) for _ in range(n)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        one(0, size)
        print(os.getpid(), *(w.pid for w in workers), flush=True)
        return
    for k in range(n):
        one(k, size)
    if mode == "count":
        print("done", flush=True)
        return
    print("ready", flush=True)
    while True:
        time.sleep(0.05)


if __name__ == "__main__":
    main(sys.argv)

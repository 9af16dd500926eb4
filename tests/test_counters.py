"""spanfold.stats() counters: fork-safe, and a fault is logged once per kind."""

from __future__ import annotations

import logging
import os
import signal
import threading

import pytest

from spanfold import counters


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_counts_while_a_parent_thread_held_the_lock() -> None:
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with counters._lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    pid = os.fork()
    if pid == 0:  # the child: the parent's holder thread does not exist here
        signal.alarm(5)  # without a fresh lock the child would wait for ever: let it die instead
        counters.incr("in_child")
        os._exit(0 if counters.snapshot()["in_child"] == 1 else 1)
    release.set()
    holder.join()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_fault_is_logged_once_per_kind(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="spanfold"):
        for _ in range(5):
            counters.fault("writer.io", OSError("disk full"))
        counters.fault("openai.output")
    assert counters.snapshot()["fault.writer.io"] == 5
    assert [r.getMessage() for r in caplog.records] == [
        "spanfold: internal fault (writer.io); your program is not affected",
        "spanfold: internal fault (openai.output); your program is not affected",
    ]

"""A user's own thread, fed one step at a time: its context (and so spanfold's execution-context evidence, an open
``spanfold.agent``) persists from step to step, as in a request handler's thread. A plain thread, not an executor:
an executor may run each work item in a copy of the submitter's context (OpenTelemetry's threading instrumentation
does), which no user's own thread does."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class UserThread:
    def __init__(self) -> None:
        self._steps: queue.Queue[Callable[[], Any] | None] = queue.Queue()
        self._results: queue.Queue[tuple[bool, Any]] = queue.Queue()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (step := self._steps.get()) is not None:
            try:
                self._results.put((True, step()))
            except BaseException as exc:  # handed back to the caller
                self._results.put((False, exc))

    def do(self, step: Callable[[], T], timeout: float = 30) -> T:
        """Run ``step`` in this thread; its result, or its exception raised here."""
        self._steps.put(step)
        ok, value = self._results.get(timeout=timeout)
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def close(self) -> None:
        self._steps.put(None)
        self._thread.join(timeout=30)

"""Traces captured in memory during a test: what the ``spanfold_traces`` fixture hands over.

Every read flushes spanfold first, so traces still being folded are in before the test looks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, overload

from spanfold.checks.result import CheckResult
from spanfold.trace.model import Trace

#: Seconds a read waits for pending traces.
FLUSH_TIMEOUT_S = 30.0


class NoTraceError(AssertionError, IndexError):
    """Asked for a trace when none was captured (a test failure, and an IndexError for code that expects one)."""


def open_capture() -> AbstractContextManager[Sequence[Trace]]:
    """spanfold's in-memory capture (imported here, on first use, so loading the pytest plugin stays cheap)."""
    from spanfold.setup import capture_traces

    return capture_traces()


def flush_traces() -> None:
    import spanfold

    spanfold.flush(timeout=FLUSH_TIMEOUT_S)


class CapturedTraces(Sequence[Trace]):
    """The traces completed so far in this test, oldest first; ``last`` is the newest."""

    def __init__(self, sink: Sequence[Trace], flush: Callable[[], None] = flush_traces) -> None:
        self._sink = sink
        self._flush = flush

    def flush(self) -> None:
        self._flush()

    @property
    def traces(self) -> list[Trace]:
        self._flush()
        return list(self._sink)

    @property
    def last(self) -> Trace:
        traces = self.traces
        if not traces:
            raise NoTraceError("spanfold captured no traces in this test (was an instrumented client called?)")
        return traces[-1]

    def one(self) -> Trace:
        """The only trace; AssertionError when there are none or several."""
        traces = self.traces
        if len(traces) != 1:
            raise NoTraceError(f"expected exactly one captured trace, got {len(traces)}")
        return traces[0]

    def record(
        self, *results: CheckResult, trace: Trace | None = None, logger_provider: Any = None, explanation: bool = True
    ) -> int:
        """Record each check result as a ``gen_ai.evaluation.result`` event on the run it evaluated (``trace``, by
        default the last), through the application's ``LoggerProvider`` (or ``logger_provider``), so a backend shows
        the verdict beside the run (:mod:`spanfold.checks.evaluation`). ``explanation=False`` leaves the reasons out
        (they quote the trace). Returns how many events were emitted."""
        from spanfold.checks import evaluation

        run = trace if trace is not None else self.last
        return evaluation.record(((run, r) for r in results), logger_provider, explanation=explanation)

    def invariant(self) -> list[list[dict[str, Any]]]:
        """Every trace as an Invariant event list."""
        return [t.to_invariant() for t in self.traces]

    def __len__(self) -> int:
        return len(self.traces)

    def __iter__(self) -> Iterator[Trace]:
        return iter(self.traces)

    @overload
    def __getitem__(self, index: int) -> Trace: ...

    @overload
    def __getitem__(self, index: slice) -> list[Trace]: ...

    def __getitem__(self, index: int | slice) -> Trace | list[Trace]:
        return self.traces[index]

    def __repr__(self) -> str:
        return f"CapturedTraces({len(self._sink)} traces)"

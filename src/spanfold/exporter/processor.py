"""``FoldingSpanProcessor``: fold every trace on a background worker and hand it to the writers. Modelled on the OTel
SDK's ``BatchSpanProcessor``:

* ``on_start`` / ``on_end`` only append to a bounded deque (a start marker, then the span); over the limit a span is
  dropped and counted (``dropped_spans``);
* the worker wakes every ``poll_interval`` (0.5 s), or as soon as :data:`WAKE_AT` items wait, and handles
  everything queued in one go: traces are folded and written in batches, never one thread switch per call;
* a :class:`FoldWorker` thread feeds the shared :class:`~spanfold.exporter.assembler.Assembler`, which groups spans by
  trace id and folds a trace once its local root and every span it saw start have ended, stitches un-parented calls
  and bounds memory;
* fork-safe: a forked child drops what it inherited and starts its own worker.

:class:`FoldWorker` is the thread, queue and flush machinery alone; the ``FoldingSpanExporter`` and the OTLP receiver
feed one too.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from spanfold import config as config_module
from spanfold import counters
from spanfold.config import Config
from spanfold.exporter.assembler import Assembler, Policy
from spanfold.exporter.forks import reinit_in_child
from spanfold.exporter.meta import trace_hex
from spanfold.exporter.records import SpanRecord, from_readable
from spanfold.exporter.writers import Writer

__all__ = ["POLL_INTERVAL_S", "WAKE_AT", "FoldWorker", "FoldingSpanProcessor", "trace_hex"]

#: Longest the worker sleeps between looks at the queue and the idle timers.
POLL_INTERVAL_S = 0.5
#: Queue length (start markers and spans) at which ``on_end`` wakes the worker before its poll interval is up.
WAKE_AT = 512
#: Spans handled between two looks at the idle timers while the queue stays busy.
_EXPIRE_EVERY = 4096


class _Flush:
    """A marker in the queue: everything before it is handled when the worker reaches it."""

    __slots__ = ("done", "final")

    def __init__(self, final: bool) -> None:
        self.final = final
        self.done = threading.Event()


class FoldWorker:
    """A daemon thread that feeds an :class:`Assembler` from a deque.

    Items in :attr:`queue`: ``(trace_id, span_id)`` start markers, an SDK ``ReadableSpan`` or a :class:`SpanRecord`
    (one ended span), a ``list`` of either (a batch), flush markers. Producers append to :attr:`queue` and set
    :attr:`wake`; :meth:`submit` does both for a batch and keeps :attr:`pending` (spans queued, not yet handled).
    """

    def __init__(
        self,
        writers: Iterable[Writer] = (),
        config: Config | None = None,
        policy: Policy | None = None,
        *,
        poll_interval: float = POLL_INTERVAL_S,
        name: str = "spanfold-fold",
    ) -> None:
        self.config = config if config is not None else config_module.load()
        self._initial_writers = tuple(writers)
        self._policy = policy
        self._poll = poll_interval
        self._name = name
        self.shut = False
        self.closed = False
        self._lifecycle = threading.Lock()
        self._reset_state(self._initial_writers)
        self._start()
        reinit_in_child(self._at_fork_reinit)

    # --- state -------------------------------------------------------------------------------------------

    def _reset_state(self, writers: tuple[Writer, ...]) -> None:
        self.queue: deque[Any] = deque()
        self.wake = threading.Event()
        self.pending = 0
        self._pending_lock = threading.Lock()
        self._writers_lock = threading.Lock()
        self.assembler = Assembler(writers, self.config, self._policy)

    def _start(self) -> None:
        self.thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self.thread.start()

    def _at_fork_reinit(self) -> None:
        """In a forked child: drop the parent's buffers (the parent writes them) and start a fresh worker."""
        self._lifecycle = threading.Lock()
        self._reset_state(self.assembler.writers)
        if not self.shut:
            self._start()

    # --- producers ---------------------------------------------------------------------------------------

    def submit(self, spans: Sequence[ReadableSpan | SpanRecord]) -> None:
        """Queue a batch of ended spans (not the hot path: the exporter and the receiver)."""
        if not spans:
            return
        with self._pending_lock:
            self.pending += len(spans)
        self.queue.append(list(spans))
        self.wake.set()

    def flush(self, timeout_s: float, *, final: bool = False) -> bool:
        """Block until everything queued before the call is folded and written (open conversations included) and
        the writers flushed (``final``: closed, and the worker stops). False when ``timeout_s`` passed first, or when
        a writer still holds traces it could not write (disk full, directory gone: they wait in its retry buffer)."""
        if threading.current_thread() is self.thread:
            return False
        with self._lifecycle:
            if self.shut:  # a final flush is under way or done: wait for it
                self.thread.join(max(timeout_s, 0))
                return self.closed
            self.shut = final
        marker = _Flush(final=final)
        self.queue.append(marker)
        self.wake.set()
        done = marker.done.wait(max(timeout_s, 0))
        if final:
            self.thread.join(max(timeout_s, 0))
        return done and not any(getattr(w, "pending", 0) for w in self.assembler.writers)

    # --- writers -----------------------------------------------------------------------------------------

    def add_writer(self, writer: Writer) -> None:
        with self._writers_lock:
            self.assembler.writers = (*self.assembler.writers, writer)

    def remove_writer(self, writer: Writer) -> None:
        with self._writers_lock:
            self.assembler.writers = tuple(w for w in self.assembler.writers if w is not writer)

    def stats(self) -> dict[str, int]:
        """Queue depth, traces in flight and open stitched conversations (approximate, read without locks)."""
        return {"queue_depth": len(self.queue), **self.assembler.stats()}

    # --- the thread --------------------------------------------------------------------------------------

    def _run(self) -> None:
        wake, queue = self.wake, self.queue
        while True:
            wake.wait(self._next_wait())
            wake.clear()
            try:
                if self._drain(queue):
                    return
                self.assembler.expire(time.monotonic())
                self.assembler.commit()
            except Exception as exc:  # the worker never dies
                counters.fault("processor.worker", exc)

    def _next_wait(self) -> float:
        deadline = self.assembler.next_deadline()
        wait = self._poll if deadline is None else min(self._poll, deadline - time.monotonic())
        return max(wait, 0.001)

    def _drain(self, queue: deque[Any]) -> bool:
        """Handle everything queued; True when the final flush marker was reached."""
        assembler = self.assembler
        received = 0
        try:
            while True:
                try:
                    item = queue.popleft()
                except IndexError:
                    return False
                now = time.monotonic()
                if isinstance(item, tuple):
                    assembler.started(item[0], item[1], now)
                    continue
                if isinstance(item, _Flush):
                    if self._flush(item, now):
                        return True
                    continue
                batch = item if isinstance(item, list) else (item,)
                for span in batch:
                    self._ended(span, now)
                received += len(batch)
                if isinstance(item, list):
                    with self._pending_lock:
                        self.pending -= len(batch)
                if received >= _EXPIRE_EVERY:
                    counters.incr("spans_received", received)
                    received = 0
                    assembler.expire(now)
        finally:
            if received:
                counters.incr("spans_received", received)

    def _ended(self, span: ReadableSpan | SpanRecord, now: float) -> None:
        try:
            record = span if isinstance(span, SpanRecord) else from_readable(span)
        except Exception as exc:
            counters.fault("processor.span", exc)
            return
        self.assembler.add(record, now)

    def _flush(self, marker: _Flush, now: float) -> bool:
        try:
            self.assembler.flush(now, final=marker.final)
            if marker.final:
                self.closed = True
        finally:
            marker.done.set()
        return marker.final


class FoldingSpanProcessor(SpanProcessor):
    """Folds every trace into a flat :class:`~spanfold.trace.model.Trace` and hands it to each writer."""

    def __init__(
        self,
        writers: Iterable[Writer] = (),
        config: Config | None = None,
        *,
        stitch: bool = True,
        poll_interval: float = POLL_INTERVAL_S,
    ) -> None:
        self._fold = FoldWorker(writers, config, Policy(stitch=stitch), poll_interval=poll_interval)
        self.config = self._fold.config
        self._queue_limit = 2 * self.config.max_queue_size  # start markers and spans
        self._wake_at = min(WAKE_AT, self._queue_limit // 2)

    # --- SpanProcessor (hot path: append only) -----------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        fold = self._fold
        if fold.shut or len(fold.queue) >= self._queue_limit:
            return
        ctx = span.context
        if ctx is not None:
            fold.queue.append((ctx.trace_id, ctx.span_id))

    def on_end(self, span: ReadableSpan) -> None:
        fold = self._fold
        if fold.shut:
            return
        queue = fold.queue
        if len(queue) >= self._queue_limit:
            counters.incr("dropped_spans")
            return
        queue.append(span)
        if len(queue) >= self._wake_at and not fold.wake.is_set():
            fold.wake.set()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Block until every span ended before the call is folded and written (open conversations included) and
        the writers flushed. False when ``timeout_millis`` passed first."""
        return self._fold.flush(timeout_millis / 1000)

    def shutdown(self, timeout_millis: int = 30000) -> None:
        """Flush everything (traces still open are written as incomplete), close the writers, stop the worker."""
        self._fold.flush(timeout_millis / 1000, final=True)

    # --- writers -----------------------------------------------------------------------------------------

    def add_writer(self, writer: Writer) -> None:
        self._fold.add_writer(writer)

    def remove_writer(self, writer: Writer) -> None:
        self._fold.remove_writer(writer)

    @property
    def writers(self) -> tuple[Writer, ...]:
        return self._fold.assembler.writers

    def stats(self) -> dict[str, int]:
        """Queue depth, traces in flight and open stitched conversations (approximate, read without locks)."""
        return self._fold.stats()

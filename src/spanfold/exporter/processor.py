"""``FoldingSpanProcessor``: buffer spans per trace on a background worker, fold each finished trace, hand it to the
writers. Modelled on the OTel SDK's ``BatchSpanProcessor``:

* ``on_start`` / ``on_end`` only append to a bounded deque (a start marker, then the span); over the limit a span is
  dropped and counted (``dropped_spans``);
* one daemon worker groups spans by trace id and folds a trace once its local root and every span it saw start have
  ended; limits on traces in flight, spans per trace and idle time bound memory (``traces_incomplete``,
  ``traces_truncated``);
* un-parented model calls and tool runs are stitched into conversations (:mod:`spanfold.exporter.stitch`), written
  after ``stitch_idle`` seconds without activity, at ``force_flush`` and at ``shutdown``;
* fork-safe: a forked child drops what it inherited and starts its own worker.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from spanfold import config as config_module
from spanfold import counters
from spanfold.config import Config
from spanfold.exporter.dialects import Step, safe_step
from spanfold.exporter.fold import fold
from spanfold.exporter.records import SpanRecord, from_readable
from spanfold.exporter.stitch import Conversation, Stitcher, stitch_root
from spanfold.exporter.writers import Writer
from spanfold.trace.model import Trace, TraceStatus

#: Longest the worker sleeps between looks at the queue and the idle timers.
POLL_INTERVAL_S = 0.5
#: Spans handled between two looks at the idle timers while the queue stays busy.
_EXPIRE_EVERY = 4096


def trace_hex(trace_id: int) -> str:
    return format(trace_id, "032x")


@dataclass(slots=True, eq=False)
class _Buffer:
    """The spans of one trace seen so far."""

    trace_id: int
    records: list[SpanRecord] = field(default_factory=list)
    open: set[int] = field(default_factory=set)  # started, not yet ended
    root_ended: bool = False
    truncated: bool = False
    touched: float = 0.0


class _Flush:
    """A marker in the queue: everything before it is handled when the worker reaches it."""

    __slots__ = ("done", "final")

    def __init__(self, final: bool) -> None:
        self.final = final
        self.done = threading.Event()


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
        self.config = config if config is not None else config_module.load()
        self._writers: tuple[Writer, ...] = tuple(writers)
        self._writers_lock = threading.Lock()
        self._stitch = stitch
        self._poll = poll_interval
        self._queue_limit = 2 * self.config.max_queue_size  # start markers and spans
        self._shutdown = False
        self._closed = False
        self._lifecycle = threading.Lock()
        self._reset_state()
        self._start_worker()
        if hasattr(os, "register_at_fork"):
            weak = weakref.WeakMethod(self._at_fork_reinit)

            def after_in_child() -> None:
                reinit = weak()
                if reinit is not None:
                    reinit()

            os.register_at_fork(after_in_child=after_in_child)

    # --- state -------------------------------------------------------------------------------------------

    def _reset_state(self) -> None:
        self._queue: deque[Any] = deque()
        self._wake = threading.Event()
        self._traces: OrderedDict[int, _Buffer] = OrderedDict()  # least recently active first
        self._stitcher = Stitcher()

    def _start_worker(self) -> None:
        self._worker = threading.Thread(target=self._run, name="spanfold-fold", daemon=True)
        self._worker.start()

    def _at_fork_reinit(self) -> None:
        """In a forked child: drop the parent's buffers (the parent writes them) and start a fresh worker."""
        self._lifecycle = threading.Lock()
        self._writers_lock = threading.Lock()
        self._reset_state()
        if not self._shutdown:
            self._start_worker()

    # --- SpanProcessor (hot path: append only) -----------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self._shutdown or len(self._queue) >= self._queue_limit:
            return
        ctx = span.context
        if ctx is not None:
            self._queue.append((ctx.trace_id, ctx.span_id))

    def on_end(self, span: ReadableSpan) -> None:
        if self._shutdown:
            return
        queue = self._queue
        if len(queue) >= self._queue_limit:
            counters.incr("dropped_spans")
            return
        queue.append(span)
        parent = span.parent
        if (parent is None or parent.is_remote or len(queue) > self._queue_limit // 2) and not self._wake.is_set():
            self._wake.set()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Block until every span ended before the call is folded and written (open conversations included) and
        the writers flushed. False when ``timeout_millis`` passed first."""
        if threading.current_thread() is self._worker:
            return False
        if self._shutdown:  # shutdown flushes everything; wait for it
            self._worker.join(max(timeout_millis, 0) / 1000)
            return self._closed
        marker = _Flush(final=False)
        self._queue.append(marker)
        self._wake.set()
        return marker.done.wait(max(timeout_millis, 0) / 1000)

    def shutdown(self, timeout_millis: int = 30000) -> None:
        """Flush everything (traces still open are written as incomplete), close the writers, stop the worker."""
        with self._lifecycle:
            if self._shutdown:
                return
            self._shutdown = True
        marker = _Flush(final=True)
        self._queue.append(marker)
        self._wake.set()
        if threading.current_thread() is not self._worker:
            marker.done.wait(timeout_millis / 1000)
            self._worker.join(timeout_millis / 1000)

    # --- writers -----------------------------------------------------------------------------------------

    def add_writer(self, writer: Writer) -> None:
        with self._writers_lock:
            self._writers = (*self._writers, writer)

    def remove_writer(self, writer: Writer) -> None:
        with self._writers_lock:
            self._writers = tuple(w for w in self._writers if w is not writer)

    @property
    def writers(self) -> tuple[Writer, ...]:
        return self._writers

    def stats(self) -> dict[str, int]:
        """Queue depth, traces in flight and open stitched conversations (approximate, read without locks)."""
        return {
            "queue_depth": len(self._queue),
            "traces_in_flight": len(self._traces),
            "conversations_open": len(self._stitcher),
        }

    # --- worker ------------------------------------------------------------------------------------------

    def _run(self) -> None:
        wake, queue = self._wake, self._queue
        while True:
            wake.wait(self._next_wait())
            wake.clear()
            try:
                if self._drain(queue):
                    return
                self._expire()
            except Exception as exc:  # the worker never dies
                counters.fault("processor.worker", exc)

    def _next_wait(self) -> float:
        deadlines = []
        if self._traces:
            deadlines.append(next(iter(self._traces.values())).touched + self.config.trace_timeout)
        conv = self._stitcher.oldest_touch()
        if conv is not None:
            deadlines.append(conv + self.config.stitch_idle)
        wait = self._poll
        if deadlines:
            wait = min(wait, min(deadlines) - time.monotonic())
        return max(wait, 0.001)

    def _drain(self, queue: deque[Any]) -> bool:
        """Handle everything queued; True when the shutdown marker was reached."""
        received = 0
        try:
            while True:
                try:
                    item = queue.popleft()
                except IndexError:
                    return False
                if isinstance(item, tuple):
                    self._started(item[0], item[1])
                elif isinstance(item, _Flush):
                    if self._flush(item):
                        return True
                else:
                    received += 1
                    self._ended(item)
                    if received % _EXPIRE_EVERY == 0:
                        self._expire()
        finally:
            if received:
                counters.incr("spans_received", received)

    def _buffer(self, trace_id: int) -> _Buffer:
        buf = self._traces.get(trace_id)
        if buf is None:
            buf = self._traces[trace_id] = _Buffer(trace_id)
            while len(self._traces) > self.config.max_traces_in_flight:
                oldest = next(iter(self._traces.values()))
                self._finish(oldest, incomplete=True)
        else:
            self._traces.move_to_end(trace_id)
        buf.touched = time.monotonic()
        return buf

    def _started(self, trace_id: int, span_id: int) -> None:
        self._buffer(trace_id).open.add(span_id)

    def _ended(self, span: ReadableSpan) -> None:
        try:
            record = from_readable(span)
        except Exception as exc:
            counters.fault("processor.span", exc)
            return
        buf = self._buffer(record.trace_id)
        buf.open.discard(record.span_id)
        if record.is_local_root:
            buf.root_ended = True
            buf.records.append(record)
        elif len(buf.records) >= self.config.max_spans_per_trace:
            if not buf.truncated:
                buf.truncated = True
                counters.incr("traces_truncated")
            counters.incr("dropped_spans")
        else:
            buf.records.append(record)
        if buf.root_ended and not buf.open:
            self._finish(buf, incomplete=False)

    def _expire(self) -> None:
        now = time.monotonic()
        limit = now - self.config.trace_timeout
        while self._traces:
            buf = next(iter(self._traces.values()))
            if buf.touched > limit:
                break
            self._finish(buf, incomplete=True)
        for conv in self._stitcher.idle(now - self.config.stitch_idle):
            self._write_conversation(conv)

    def _flush(self, marker: _Flush) -> bool:
        try:
            for buf in list(self._traces.values()):
                if marker.final or buf.root_ended:
                    self._finish(buf, incomplete=True)
            for conv in self._stitcher.close_all():
                self._write_conversation(conv)
            for writer in self._writers:
                self._call(writer, "flush")
            if marker.final:
                for writer in self._writers:
                    self._call(writer, "close")
                self._closed = True
        finally:
            marker.done.set()
        return marker.final

    # --- fold and write ----------------------------------------------------------------------------------

    def _finish(self, buf: _Buffer, *, incomplete: bool) -> None:
        """Fold a trace (or hand it to the stitcher) and forget its buffer."""
        self._traces.pop(buf.trace_id, None)
        status: TraceStatus = "truncated" if buf.truncated else ("incomplete" if incomplete else "complete")
        try:
            steps: dict[int, Step | None] = {r.span_id: safe_step(r) for r in buf.records}
            if not any(s is not None for s in steps.values()):
                counters.incr("traces_skipped")  # no GenAI span: nothing to write
                return
            if incomplete:
                counters.incr("traces_incomplete")
            root = stitch_root(buf.records, steps) if self._stitch else None
            if root is not None:
                conv = self._stitcher.add(root, buf.trace_id, buf.records, steps, status, time.monotonic())
                while len(self._stitcher) > self.config.max_traces_in_flight:
                    oldest = next(iter(self._stitcher.open.values()))
                    if oldest is conv:
                        break
                    self._write_conversation(self._stitcher.close(oldest))
                return
            trace = fold(buf.records, trace_id=trace_hex(buf.trace_id), steps=steps)
            trace.meta.status = status
        except Exception as exc:
            counters.fault("processor.fold", exc)
            return
        self._write(trace)

    def _write_conversation(self, conv: Conversation) -> None:
        try:
            trace = fold(conv.records, trace_id=trace_hex(conv.trace_ids[0]), steps=conv.steps)
            trace.meta.status = conv.status
            trace.meta.extra["otel_trace_ids"] = [trace_hex(t) for t in conv.trace_ids]
        except Exception as exc:
            counters.fault("processor.fold", exc)
            return
        self._write(trace)

    def _write(self, trace: Trace) -> None:
        for writer in self._writers:
            self._call(writer, "write", trace)
        counters.incr("traces_written")

    @staticmethod
    def _call(writer: Writer, method: str, *args: Any) -> None:
        try:
            getattr(writer, method)(*args)
        except Exception as exc:
            counters.fault(f"writer.{method}", exc, detail=type(writer).__name__)

"""``FoldWorker``: the background thread that folds, fed through one bounded queue (DESIGN "Hot path is cheap").

Every span path has one: the in-process ``FoldingSpanProcessor``, the ``FoldingSpanExporter`` and the OTLP receiver.
Producers call a method; the worker's own thread takes the queue in order and feeds an
:class:`~spanfold.exporter.pipeline.assembler.Assembler`, which groups spans by trace, folds and writes:

* :meth:`FoldWorker.start` / :meth:`FoldWorker.end`: one span started / ended (the processor's ``on_start`` /
  ``on_end``, the hot path: an append, nothing else). Over :attr:`FoldWorker.max_depth` the item is dropped and
  counted (``dropped_span_starts`` / ``dropped_spans``);
* :meth:`FoldWorker.offer`: a batch of ended spans, dropped whole and counted over the limit (the exporter);
  :meth:`FoldWorker.submit`: a batch the caller bounds itself (the receiver answers 503 first);
* :meth:`FoldWorker.flush`: everything queued before it folded and written, the writers flushed (``final``: closed,
  and the thread ends).

With the ``media`` option (and content capture on), each ended span's blobs are stored before the assembler sees it
(:meth:`~spanfold.content.media.MediaStore.attributes`: other producers' blob parts and ``data:`` URLs become uris in
the trace files and the spans the ``otlp-json`` format writes; spanfold's own spans already carry theirs).

Queue items are typed (``_Item``): an ended span as it is, or a tagged tuple, ``(_START, trace_id, span_id)`` /
``(_FLUSH, marker)``. (An ended span is not wrapped: a tuple per span, made on the app's thread and freed on the
worker's, cost the hot path ~0.3 µs per span while the worker was busy.) One measure of the backlog,
:attr:`FoldWorker.depth`: the items queued (each start, each ended span, each flush). The
worker wakes every ``poll_interval`` (0.5 s), or as soon as :data:`WAKE_AT` items wait, and handles everything queued
in one go: traces are folded and written in batches, never one thread switch per call. Fork-safe: a forked child
drops what it inherited and starts its own thread.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from opentelemetry.sdk.trace import ReadableSpan

from spanfold import config as config_module
from spanfold import counters
from spanfold.config import Config
from spanfold.content import media
from spanfold.exporter.files.writers import Writer
from spanfold.exporter.forks import reinit_in_child
from spanfold.exporter.pipeline.assembler import Assembler, Policy
from spanfold.exporter.records import SpanEvent, SpanRecord, from_readable
from spanfold.sampling.decision import Sampler

if TYPE_CHECKING:  # the trace model loads with the fold, not at init()
    from spanfold.trace.model import Trace

#: Longest the worker sleeps between looks at the queue and the idle timers.
POLL_INTERVAL_S = 0.5
#: Queue depth at which :meth:`FoldWorker.end` wakes the worker before its poll interval is up.
WAKE_AT = 512
#: How long the application makes no span before the worker loads the fold's later stages (the first fold), and how
#: long it waits for such a moment at most (:meth:`FoldWorker._await_quiet`).
QUIET_S = 0.02
PREPARE_WITHIN_S = 2.0
#: Spans handled between two looks at the idle timers while the queue stays busy.
_EXPIRE_EVERY = 4096


class _Flush:
    """What a flush waits on: set once everything queued before it is handled."""

    __slots__ = ("done", "final")

    def __init__(self, final: bool) -> None:
        self.final = final
        self.done = threading.Event()


# Queue items: an ended span as it is (the hot path allocates nothing), else a tag and what it carries.
_START: Final = 0
_FLUSH: Final = 1
_BYTES: Final = 2  # after a submitted batch: the attribute bytes its submitter measured, released once it is handled
_ENDED: Final = 3  # a sending process is gone (the receiver saw it): its resource
_CALL: Final = 4  # work the calling thread hands off (a model call's metric points): run in queue order
_Span: TypeAlias = "ReadableSpan | SpanRecord"
_Item: TypeAlias = (
    "_Span | tuple[Literal[0], int, int] | tuple[Literal[1], _Flush] | tuple[Literal[2], int]"
    " | tuple[Literal[3], Mapping[str, Any]] | tuple[Literal[4], Callable[[], object]]"
)


class FoldWorker:
    """A daemon thread that feeds an :class:`Assembler` from a bounded queue (see the module docstring)."""

    def __init__(
        self,
        writers: Iterable[Writer] = (),
        config: Config | None = None,
        policy: Policy | None = None,
        *,
        poll_interval: float = POLL_INTERVAL_S,
        name: str = "spanfold-fold",
        max_depth: int | None = None,
        prepare: bool = False,
        sampler: Sampler | None = None,
        forward: Callable[[ReadableSpan], None] | None = None,
        folded: Callable[[Trace], None] | None = None,
    ) -> None:
        self.config = config if config is not None else config_module.load()
        #: Where the blobs of the spans folded go (the ``media`` option; None: they stay as they came).
        self._media = media.for_config(self.config)
        #: Items the queue holds at most (:meth:`start`, :meth:`end` and :meth:`offer` drop beyond it).
        self.max_depth = max_depth if max_depth is not None else self.config.max_queue_size
        self._wake_at = max(min(WAKE_AT, self.max_depth // 2), 1)
        self._policy = policy
        #: Which runs are kept (``sample``), and where a kept run's SDK spans go (spanfold's OTLP export when
        #: sampling: each record keeps its span, ``SpanRecord.origin``, until its run is decided).
        self._sampler = sampler
        self._forward = forward
        #: Told every run folded (the cost counter, when metrics are on).
        self._folded = folded
        self._poll = poll_interval
        self._name = name
        #: Load the assembler's later stages soon after the first span ended (an application's process, which may
        #: end at any time), in quiet moments (:meth:`Assembler.preparation`, :meth:`_await_quiet`); a receiver loads
        #: them with its first done trace.
        self._prepare = prepare
        self.shut = False
        self.closed = False
        self._lifecycle = threading.Lock()
        self._reset_state(tuple(writers))
        self._start()
        reinit_in_child(self._at_fork_reinit)

    # --- state -------------------------------------------------------------------------------------------

    def _reset_state(self, writers: tuple[Writer, ...]) -> None:
        self._queue: deque[_Item] = deque()
        self._wake = threading.Event()
        #: Attribute bytes of the submitted batches not yet handled, as :meth:`submit` was told (the receiver's bound).
        self.pending_bytes = 0
        self._bytes_lock = threading.Lock()
        self._writers_lock = threading.Lock()
        self.assembler = Assembler(
            writers, self.config, self._policy, sampler=self._sampler, forward=self._forward, folded=self._folded
        )
        #: No span has ended yet (with ``prepare``, the first wakes the worker to load the later stages).
        self._cold = self._prepare
        #: A flush was asked for (the first fold then loads its stages at once).
        self._flush_asked = False

    def _start(self) -> None:
        self.thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self.thread.start()

    def _at_fork_reinit(self) -> None:
        """In a forked child: drop the parent's buffers (the parent writes them) and start a fresh worker."""
        self._lifecycle = threading.Lock()
        self._reset_state(self.assembler.writers)
        if not self.shut:
            self._start()

    @property
    def depth(self) -> int:
        """Items queued, not yet handled (approximate, read without a lock)."""
        return len(self._queue)

    @property
    def pending(self) -> int:
        """:attr:`depth`, by the name the receiver reads."""
        return len(self._queue)

    # --- producers ---------------------------------------------------------------------------------------

    def start(self, trace_id: int, span_id: int) -> None:
        """A span started (its trace waits for it to end). Hot path."""
        if self.shut:
            return
        queue = self._queue
        if len(queue) >= self.max_depth:
            counters.incr("dropped_span_starts")
            return
        queue.append((_START, trace_id, span_id))

    def end(self, span: ReadableSpan | SpanRecord) -> None:
        """A span ended. Hot path."""
        if self.shut:
            return
        queue = self._queue
        if len(queue) >= self.max_depth:
            counters.incr("dropped_spans")
            return
        queue.append(span)
        if self._cold:  # the first span wakes the worker: it loads the later stages soon (quietly), not at exit
            self._cold = False
            self._wake.set()
        elif len(queue) >= self._wake_at and not self._wake.is_set():
            self._wake.set()

    def offer(self, spans: Sequence[ReadableSpan | SpanRecord]) -> bool:
        """Queue a batch of ended spans unless the queue is at :attr:`max_depth` (then the batch is dropped and
        counted) or the worker is shut. True when queued."""
        if self.shut:
            return False
        if len(self._queue) >= self.max_depth:  # the fold is behind
            counters.incr("dropped_spans", len(spans))
            return False
        self.submit(spans)
        return True

    def submit(self, spans: Sequence[ReadableSpan | SpanRecord], attribute_bytes: int = 0) -> None:
        """Queue a batch of ended spans, whatever the depth (the caller bounds it: the receiver answers 503).
        ``attribute_bytes``, when the caller measured them, count in :attr:`pending_bytes` until the batch is
        handled."""
        if not spans:
            return
        self._queue.extend(spans)
        if attribute_bytes:
            with self._bytes_lock:
                self.pending_bytes += attribute_bytes
            self._queue.append((_BYTES, attribute_bytes))
        self._wake.set()

    def call(self, work: Callable[[], object]) -> None:
        """Run ``work`` on the worker, in queue order (what the calling thread hands off: a model call's metric points,
        recorded from its ended span). Hot path: an append; over :attr:`max_depth` dropped and counted
        (``dropped_calls``)."""
        if self.shut:
            return
        queue = self._queue
        if len(queue) >= self.max_depth:
            counters.incr("dropped_calls")
            return
        queue.append((_CALL, work))

    def process_ended(self, resource: Mapping[str, Any]) -> None:
        """The process that sent spans with ``resource`` is gone: once what it sent before is handled, its traces
        are folded and its conversations written (:meth:`Assembler.process_ended`)."""
        if self.shut:
            return
        self._queue.append((_ENDED, resource))
        self._wake.set()

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
        self._flush_asked = True
        self._queue.append((_FLUSH, marker))
        self._wake.set()
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
        return {"queue_depth": self.depth, **self.assembler.stats()}

    # --- the thread --------------------------------------------------------------------------------------

    def _run(self) -> None:
        wake, queue = self._wake, self._queue
        while True:
            wake.wait(self._next_wait())
            wake.clear()
            try:
                if self._prepare and not self._cold:
                    self._prepare = False
                    deadline = time.monotonic() + PREPARE_WITHIN_S
                    for step in self.assembler.preparation():
                        self._await_quiet(queue, deadline)
                        step()
                if self._drain(queue):
                    return
                self.assembler.expire(time.monotonic())
                self.assembler.commit()
            except Exception as exc:  # the worker never dies
                counters.fault("processor.worker", exc)

    def _await_quiet(self, queue: deque[_Item], deadline: float) -> None:
        """Before the first fold loads the later stages (imports that hold the GIL the application's calls need, ~100
        ms, and often the collection of the oldest objects they set off): wait for a moment the application starts
        and ends no span for :data:`QUIET_S` (a model call waiting on its provider, a tool at work), at most until
        ``deadline``, or until a flush or a queue of :data:`WAKE_AT` items asks for the fold."""
        seen = len(queue)
        while seen < self._wake_at and not self._flush_asked and time.monotonic() < deadline:
            time.sleep(QUIET_S)
            now = len(queue)
            if now == seen:
                return
            seen = now

    def _next_wait(self) -> float:
        deadline = self.assembler.next_deadline()
        wait = self._poll if deadline is None else min(self._poll, deadline - time.monotonic())
        return max(wait, 0.001)

    def _drain(self, queue: deque[_Item]) -> bool:
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
                if not isinstance(item, tuple):
                    self._ended(item, now)
                    received += 1
                    if received >= _EXPIRE_EVERY:
                        counters.incr("spans_received", received)
                        received = 0
                        assembler.expire(now)
                elif item[0] == _START:
                    assembler.started(item[1], item[2], now)
                elif item[0] == _BYTES:
                    with self._bytes_lock:
                        self.pending_bytes -= item[1]
                elif item[0] == _ENDED:
                    assembler.process_ended(item[1], now)
                elif item[0] == _CALL:
                    try:
                        item[1]()
                    except Exception as exc:
                        counters.fault("worker.call", exc)
                elif self._flush(item[1], now):
                    return True
        finally:
            if received:
                counters.incr("spans_received", received)

    def _ended(self, span: ReadableSpan | SpanRecord, now: float) -> None:
        try:
            if isinstance(span, SpanRecord):
                record = span
            else:
                record = from_readable(span)
                if self._forward is not None:
                    record.origin = span
        except Exception as exc:
            counters.fault("processor.span", exc)
            return
        if self._media is not None:
            _store_media(self._media, record)
        self.assembler.add(record, now)

    def _flush(self, marker: _Flush, now: float) -> bool:
        try:
            self.assembler.flush(now, final=marker.final)
            if marker.final:
                self.closed = True
        finally:
            marker.done.set()
        return marker.final


def _store_media(store: media.MediaStore, record: SpanRecord) -> None:
    """``record``'s blobs stored, uris in their place (in its attributes and its events'); as it came on a fault."""
    try:
        attributes = store.attributes(record.attributes)
        if attributes is not None:
            record.attributes = attributes
        if record.events:
            record.events = tuple(_event_stored(store, event) for event in record.events)
    except Exception as exc:
        counters.fault("media.spans", exc)


def _event_stored(store: media.MediaStore, event: SpanEvent) -> SpanEvent:
    attributes = store.attributes(event.attributes)
    return event if attributes is None else SpanEvent(event.name, event.timestamp, attributes)

"""The per-trace core every span path shares: buffer :class:`SpanRecord` s by trace id, decide when a trace is done,
fold it (or stitch it into a conversation) and hand the flat trace to the writers.

One :class:`Assembler` serves the in-process ``FoldingSpanProcessor``, the ``FoldingSpanExporter``, the OTLP receiver
and ``spanfold fold``. It is single-threaded bookkeeping: the caller owns the thread (a :class:`FoldWorker
<spanfold.exporter.pipeline.processor.FoldWorker>`, or the CLI's loop) and the clock (``now`` is ``time.monotonic()``).

When is a trace done? (:class:`Policy`)

* ``quiet=None``: its root has ended and every span seen starting (:meth:`Assembler.started`) has ended: the SDK
  processor, which sees spans start.
* ``quiet=S``: its root has arrived and no span of it came for ``S`` seconds (checked by :meth:`Assembler.expire`):
  the exporter (``S=0``: everything that ended before the root was exported before it) and the receiver (``--wait``).

Which span is the root is the policy's ``root`` rule: the local root in one process (no parent, or a remote one), the
trace's own root (no parent at all) for a receiver that gathers the parts of a trace from many processes.

Bounded: ``max_traces_in_flight`` (the least recently active trace is cut, counted ``traces_incomplete``),
``max_spans_per_trace`` and ``max_attribute_bytes_per_trace`` (``traces_truncated``, ``dropped_spans``; the root
span is always kept) and ``trace_timeout`` for traces whose root never comes. A span added twice to a trace that is
still buffered (a retried export, two copies of one file) counts once (``duplicate_spans``). Un-parented calls are
stitched (:mod:`spanfold.exporter.fold.stitch`) within the process they came from (as far as the resource tells: one
stitcher per resource) and closed after ``stitch_idle`` seconds, or earlier for a receiver (``Policy.final_idle``):
``final_idle`` seconds after a final answer (no tool call) while nothing more of that process waits to be folded, and
at once when the receiver learns that the sending process is gone (:meth:`Assembler.process_ended`).
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spanfold import counters
from spanfold.config import ASKING_IDLE_FACTOR, Config
from spanfold.exporter.files.writers import Writer
from spanfold.exporter.fold.meta import status as trace_status
from spanfold.exporter.fold.meta import trace_hex as trace_hex  # part of the assembler's surface
from spanfold.exporter.fold.meta import worst
from spanfold.exporter.records import SpanRecord

if TYPE_CHECKING:  # the fold's modules load when the first trace is folded, not at init() (start-up time)
    from spanfold.exporter.fold.stitch import Conversation, Stitcher
    from spanfold.exporter.steps import Step
    from spanfold.trace.model import Trace, TraceStatus


def local_root(record: SpanRecord) -> bool:
    """The root of one process's part of a trace: no parent, or a parent in another process."""
    return record.is_local_root


def trace_root(record: SpanRecord) -> bool:
    """The root of the whole trace: no parent at all."""
    return record.parent_id is None


class SenderResource(dict[str, Any]):
    """A resource that names no process (no ``service.instance.id``: opentelemetry-sdk before 1.43 and many other
    SDKs by default, so every process of a service sends the same one), as a receiver hands it to the fold: the same
    attributes, and ``sender``, the connection that carried it. Two such processes are never one sender."""

    __slots__ = ("sender",)

    def __init__(self, attributes: Mapping[str, Any], sender: int) -> None:
        super().__init__(attributes)
        self.sender = sender


def process_key(resource: Mapping[str, Any]) -> Hashable:
    """Which process a span came from, as far as its resource tells (one SDK: one resource), and for a
    :class:`SenderResource` the connection too: stitching never joins the calls of two processes (a receiver hears
    many)."""
    try:
        key: Hashable = frozenset(resource.items())
    except TypeError:  # an unhashable value (a key-value list)
        key = repr(sorted(resource.items(), key=lambda kv: kv[0]))
    return (key, resource.sender) if isinstance(resource, SenderResource) else key


def attribute_bytes(record: SpanRecord) -> int:
    """The characters of a span's text attributes (message histories dominate a trace's memory)."""
    return sum(len(value) for value in record.attributes.values() if isinstance(value, str))


@dataclass(slots=True)
class Held:
    """What an :class:`Assembler` holds, for its bounds and a receiver's admission: the attribute bytes of every
    buffered trace and open stitched conversation, and the spans and bytes of the traces whose root has not arrived
    (what :meth:`Assembler.shed` may cut to make room)."""

    bytes: int = 0
    rootless_spans: int = 0
    rootless_bytes: int = 0

    def add(self, size: int, *, rootless: bool) -> None:
        self.bytes += size
        if rootless:
            self.rootless_spans += 1
            self.rootless_bytes += size

    def rooted(self, buf: _Buffer) -> None:
        """``buf``'s root arrived (before the root itself is added)."""
        self.rootless_spans -= len(buf.records)
        self.rootless_bytes -= buf.attribute_bytes

    def release(self, buf: _Buffer) -> None:
        self.bytes -= buf.attribute_bytes
        if not buf.root_seen:
            self.rooted(buf)


@dataclass(frozen=True, slots=True)
class Policy:
    """When a trace is done (see the module docstring) and whether un-parented calls are stitched."""

    quiet: float | None = None
    root: Callable[[SpanRecord], bool] = local_root
    stitch: bool = True
    #: Spans held, all traces together, before :meth:`Assembler.shed` cuts traces whose root has not arrived.
    max_spans: int = sys.maxsize
    #: Seconds after a stitched conversation's final answer (no tool call) before it is written, when no other
    #: trace of its process came meanwhile (None: only after ``stitch_idle``, or at a flush).
    final_idle: float | None = None


@dataclass(slots=True, eq=False)
class _Buffer:
    """The spans of one trace seen so far."""

    trace_id: int
    records: list[SpanRecord] = field(default_factory=list)
    open: set[int] = field(default_factory=set)  # started, not yet ended
    ended: set[int] = field(default_factory=set)  # span ids added: a span sent twice counts once
    root_seen: bool = False
    truncated: bool = False
    touched: float = 0.0
    attribute_bytes: int = 0
    resource: Mapping[str, Any] | None = None  # of its first span: which process it came from (process_key)


class Assembler:
    """Spans in, flat traces out to the writers."""

    def __init__(self, writers: Iterable[Writer], config: Config, policy: Policy | None = None) -> None:
        self.config = config
        self.policy = policy if policy is not None else Policy()
        self.writers: tuple[Writer, ...] = tuple(writers)
        self.spans = 0  # records buffered, all traces together
        self._traces: OrderedDict[int, _Buffer] = OrderedDict()  # least recently active first
        self._rooted: OrderedDict[int, _Buffer] = OrderedDict()  # those whose root arrived (quiet policy)
        self._rootless: OrderedDict[int, _Buffer] = OrderedDict()  # those whose root has not (yet), cut first
        self.held = Held()  # attribute bytes held, and how much of it (and of spans) waits for a root
        self._stitchers: dict[Hashable, Stitcher] = {}  # one per process: calls are stitched within a process
        self._written = False  # traces handed to the writers since they were last flushed

    # --- input -------------------------------------------------------------------------------------------

    def _buffer(self, trace_id: int, now: float) -> _Buffer:
        buf = self._traces.get(trace_id)
        if buf is None:
            buf = self._traces[trace_id] = self._rootless[trace_id] = _Buffer(trace_id)
            while len(self._traces) > self.config.max_traces_in_flight:
                self._finish(next(iter(self._traces.values())), incomplete=True)
        else:
            self._traces.move_to_end(trace_id)
            if not buf.root_seen:
                self._rootless.move_to_end(trace_id)
            elif trace_id in self._rooted:
                self._rooted.move_to_end(trace_id)
        buf.touched = now
        return buf

    def started(self, trace_id: int, span_id: int, now: float) -> None:
        """A span of the trace started (the SDK processor's ``on_start``): the trace waits for it to end."""
        self._buffer(trace_id, now).open.add(span_id)

    def add(self, record: SpanRecord, now: float) -> None:
        """An ended span."""
        if self.policy.stitch and record.trace_id not in self._traces and self._join(record, now):
            return
        buf = self._buffer(record.trace_id, now)
        if self._duplicate(buf, record):
            return
        if buf.resource is None:
            buf.resource = record.resource
        buf.open.discard(record.span_id)
        size = attribute_bytes(record)
        if self.policy.root(record):  # always kept
            if not buf.root_seen:
                buf.root_seen = True
                self._rootless.pop(buf.trace_id, None)
                self.held.rooted(buf)
                if self.policy.quiet is not None:
                    self._rooted[buf.trace_id] = buf
        elif (
            len(buf.records) >= self.config.max_spans_per_trace
            or buf.attribute_bytes + size > self.config.max_attribute_bytes_per_trace
        ):
            if not buf.truncated:
                buf.truncated = True
                counters.incr("traces_truncated")
            counters.incr("dropped_spans")
            return
        buf.attribute_bytes += size
        buf.records.append(record)
        self.spans += 1
        self.held.add(size, rootless=not buf.root_seen)
        if self.policy.quiet is None and buf.root_seen and not buf.open:
            self._finish(buf, incomplete=False)
        self.shed()

    def _join(self, record: SpanRecord, now: float) -> bool:
        """A span of a trace an open stitched conversation holds goes straight to it (a receiver hears the calls of a
        run stitched at the source one by one, each with its parent in an earlier part)."""
        stitcher = self._stitchers.get(process_key(record.resource))
        conv = stitcher.member(record.trace_id) if stitcher is not None else None
        if stitcher is None or conv is None:
            return False
        from spanfold.exporter.dialects.dispatch import safe_step  # loaded with the first trace (a stitcher exists)

        size = attribute_bytes(record)
        stitcher.join(conv, record, safe_step(record), size, now)
        self.held.bytes += size
        self._bound(stitcher, conv)
        return True

    def shed(self) -> None:
        """Past ``max_buffered_bytes`` (or the policy's ``max_spans``): close the least recently active stitched
        conversations (they are written whole, nothing is lost), then cut the least recently active traces whose root
        has not arrived (the likeliest never to complete; ``traces_shed``), until back under."""
        held, bytes_bound, spans_bound = self.held, self.config.max_buffered_bytes, self.policy.max_spans
        while held.bytes > bytes_bound or self.spans > spans_bound:
            if held.bytes > bytes_bound and self._close_oldest_conversation():
                continue
            if not self._rootless:
                return
            counters.incr("traces_shed")
            self._finish(next(iter(self._rootless.values())), incomplete=True)

    def _close_oldest_conversation(self) -> bool:
        touched = [(t, key) for key, st in self._stitchers.items() if (t := st.oldest_touch()) is not None]
        if not touched:
            return False
        stitcher = self._stitchers[min(touched, key=lambda tk: tk[0])[1]]
        self._write_conversation(stitcher.close(next(iter(stitcher.open.values()))))
        return True

    @staticmethod
    def _duplicate(buf: _Buffer, record: SpanRecord) -> bool:
        """The span was added already (a retried export, two copies of one file): counted ``duplicate_spans``."""
        if record.span_id in buf.ended:
            counters.incr("duplicate_spans")
            return True
        buf.ended.add(record.span_id)
        return False

    # --- time --------------------------------------------------------------------------------------------

    def expire(self, now: float) -> None:
        """Fold the traces that are done by now (quiet policy), cut those past ``trace_timeout``, close idle
        conversations."""
        quiet = self.policy.quiet
        if quiet is not None:
            settled = now - quiet
            while self._rooted:
                buf = next(iter(self._rooted.values()))
                if buf.touched > settled:
                    break
                self._finish(buf, incomplete=bool(buf.open))
        limit = now - self.config.trace_timeout
        while self._traces:
            buf = next(iter(self._traces.values()))
            if buf.touched > limit:
                break
            self._finish(buf, incomplete=True)
        for key, stitcher in list(self._stitchers.items()):
            idle = self.config.stitch_idle
            for conv in stitcher.idle(now - idle, self._running, now, now - idle * ASKING_IDLE_FACTOR):
                self._write_conversation(conv)
            if self.policy.final_idle is not None:
                self._write_answered(key, stitcher, now, self.policy.final_idle)
            if not stitcher.open:
                del self._stitchers[key]

    def _running(self, conv: Conversation) -> bool:
        """Whether a span of one of the conversation's traces started and has not ended (a tool still running)."""
        for trace_id in conv.trace_ids:
            buf = self._traces.get(trace_id)
            if buf is not None and buf.open:
                return True
        return False

    def _write_answered(self, key: Hashable, stitcher: Stitcher, now: float, final_idle: float) -> None:
        """Write the conversations whose final answer is ``final_idle`` seconds old, unless a later trace of their
        process still waits to be folded (it may continue them: looked at again in ``final_idle`` seconds)."""
        for conv in stitcher.answered_before(now - final_idle):
            if self._sending(key, conv.touched):
                stitcher.seen_again(conv, now)
                continue
            counters.incr("conversations_answered")
            self._write_conversation(stitcher.close(conv))

    def _sending(self, key: Hashable, since: float) -> bool:
        """Whether a trace of process ``key`` touched after ``since`` is still buffered (most recent first)."""
        for buf in reversed(self._traces.values()):
            if buf.touched <= since:
                return False
            if buf.resource is not None and process_key(buf.resource) == key:
                return True
        return False

    def process_ended(self, resource: Mapping[str, Any], now: float) -> None:
        """The process that sent spans with ``resource`` is gone (a receiver saw its connection close): fold its traces
        whose root arrived without waiting for them to be quiet, and write its stitched conversations."""
        key = process_key(resource)
        for buf in [b for b in self._rooted.values() if b.resource is not None and process_key(b.resource) == key]:
            self._finish(buf, incomplete=bool(buf.open))
        stitcher = self._stitchers.pop(key, None)
        if stitcher is not None:
            for conv in stitcher.close_all():
                counters.incr("conversations_process_ended")
                self._write_conversation(conv)

    def next_deadline(self) -> float | None:
        """The earliest ``now`` at which :meth:`expire` has something to do (None: nothing is waiting)."""
        deadlines = []
        if self._traces:
            deadlines.append(next(iter(self._traces.values())).touched + self.config.trace_timeout)
        if self._rooted and self.policy.quiet is not None:
            deadlines.append(next(iter(self._rooted.values())).touched + self.policy.quiet)
        for stitcher in self._stitchers.values():
            idle = self.config.stitch_idle
            deadline = stitcher.idle_deadline(idle, idle * ASKING_IDLE_FACTOR)
            if deadline is not None:
                deadlines.append(deadline)
            answered = stitcher.oldest_answer()
            if answered is not None and self.policy.final_idle is not None:
                deadlines.append(answered + self.policy.final_idle)
        return min(deadlines) if deadlines else None

    def flush(self, now: float, *, final: bool) -> None:
        """Fold every trace whose root arrived (``final``: every trace), close every conversation, flush the
        writers (``final``: close them)."""
        for buf in list(self._traces.values()):
            if final or buf.root_seen:
                self._finish(buf, incomplete=not buf.root_seen or bool(buf.open))
        stitchers, self._stitchers = self._stitchers, {}
        for stitcher in stitchers.values():
            for conv in stitcher.close_all():
                self._write_conversation(conv)
        self._flush_writers()  # also what a writer still holds from a failed write
        if final:
            for writer in self.writers:
                self._call(writer, "close")

    def commit(self) -> None:
        """Flush the writers when traces were handed to them since the last time (writers may hold traces to write
        them together: the worker commits after each batch it folds)."""
        if self._written:
            self._flush_writers()

    def _flush_writers(self) -> None:
        self._written = False
        for writer in self.writers:
            self._call(writer, "flush")

    def stats(self) -> dict[str, int]:
        open_conversations = sum(len(s) for s in self._stitchers.values())
        return {"traces_in_flight": len(self._traces), "conversations_open": open_conversations}

    # --- fold and write ----------------------------------------------------------------------------------

    def _finish(self, buf: _Buffer, *, incomplete: bool) -> None:
        """Fold a trace (or hand it to the stitcher) and forget its buffer."""
        self._traces.pop(buf.trace_id, None)
        self._rooted.pop(buf.trace_id, None)
        self._rootless.pop(buf.trace_id, None)
        self.spans -= len(buf.records)
        self.held.release(buf)
        status = trace_status(truncated=buf.truncated, incomplete=incomplete)
        try:
            from spanfold.exporter.dialects.dispatch import safe_step
            from spanfold.exporter.fold.folding import fold
            from spanfold.exporter.fold.stitch import placed_at_source, stitch_root

            steps: dict[int, Step | None] = {r.span_id: safe_step(r) for r in buf.records}
            if not any(s is not None for s in steps.values()):
                counters.incr("traces_skipped")  # no GenAI span: nothing to write
                return
            if incomplete:
                counters.incr("traces_incomplete")
            root = stitch_root(buf.records, steps) if self.policy.stitch else None
            if root is not None:
                self._stitch(root[1], buf, steps, status, placed=placed_at_source(root[0]))
                return
            trace = fold(buf.records, trace_id=trace_hex(buf.trace_id), steps=steps)
            trace.meta.status = worst(trace.meta.status, status)  # an error the fold found is kept
        except Exception as exc:
            counters.fault("processor.fold", exc)
            return
        self._write(trace, buf.records)

    def _stitch(
        self, root: Any, buf: _Buffer, steps: dict[int, Step | None], status: TraceStatus, *, placed: bool
    ) -> None:
        key = process_key(buf.records[0].resource)
        stitcher = self._stitchers.get(key)
        if stitcher is None:
            from spanfold.exporter.fold.stitch import Stitcher

            stitcher = self._stitchers[key] = Stitcher()
        conv = stitcher.add(
            root,
            buf.trace_id,
            buf.records,
            steps,
            status,
            buf.touched,
            attribute_bytes=buf.attribute_bytes,
            placed=placed,
        )
        self.held.bytes += buf.attribute_bytes  # now the conversation's
        if self._bound(stitcher, conv):
            return
        while len(stitcher) > self.config.max_traces_in_flight:
            oldest = next(iter(stitcher.open.values()))
            if oldest is conv:
                break
            self._write_conversation(stitcher.close(oldest))

    def _bound(self, stitcher: Stitcher, conv: Conversation) -> bool:
        """A stitched run is bounded like any trace: past the bounds it is written now, marked truncated (what follows
        starts anew). True when it was."""
        if (
            len(conv.records) > self.config.max_spans_per_trace
            or conv.attribute_bytes > self.config.max_attribute_bytes_per_trace
        ):
            conv.status = "truncated"
            counters.incr("traces_truncated")
            self._write_conversation(stitcher.close(conv))
            return True
        return False

    def _write_conversation(self, conv: Conversation) -> None:
        self.held.bytes -= conv.attribute_bytes
        try:
            from spanfold.exporter.fold.folding import fold

            trace = fold(conv.records, trace_id=trace_hex(conv.trace_ids[0]), steps=conv.steps)
            trace.meta.status = worst(trace.meta.status, conv.status)
            trace.meta.extra["otel_trace_ids"] = [trace_hex(t) for t in conv.trace_ids]
        except Exception as exc:
            counters.fault("processor.fold", exc)
            return
        self._write(trace, conv.records)

    def _write(self, trace: Trace, records: list[SpanRecord]) -> None:
        counted = False
        for writer in self.writers:
            if getattr(writer, "wants_spans", False):  # otlp-json: the spans the trace was folded from
                self._call(writer, "write_spans", trace, records)
            else:
                self._call(writer, "write", trace)
            counted = counted or getattr(writer, "counts_written", False)
        self._written = True
        if not counted:  # a file writer counts the trace once it is on disk; else handed over is written
            counters.incr("traces_written")

    @staticmethod
    def _call(writer: Writer, method: str, *args: Any) -> None:
        try:
            getattr(writer, method)(*args)
        except Exception as exc:
            counters.fault(f"writer.{method}", exc, detail=type(writer).__name__)

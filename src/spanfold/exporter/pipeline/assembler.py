"""The per-trace core every span path shares: span records in, flat traces out to the writers, one way.

One :class:`Assembler` serves the in-process ``FoldingSpanProcessor``, the ``FoldingSpanExporter``, the OTLP receiver
and ``spanfold fold``. It is single-threaded bookkeeping: the caller owns the thread (a :class:`FoldWorker
<spanfold.exporter.pipeline.processor.FoldWorker>`, or the CLI's loop) and the clock (``now`` is ``time.monotonic()``).

The way through: the assembler buffers :class:`SpanRecord` s by trace id and decides when a trace is done; it hands
each done trace to the runs stage (:class:`~spanfold.exporter.runs.grouping.Runs`: the spans read into steps by their
dialects, then a run of its own or a member of a stitched conversation), which returns the runs it finished; each run
goes to the fold (:func:`~spanfold.exporter.fold.folding.fold_run`: events, then metadata) and the trace it makes to
the writers. No stage calls back: what a later stage needs of the buffers (which traces still run a span, which
process still sends) is handed to it as data.

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
still buffered (a retried export, two copies of one file) counts once (``duplicate_spans``). Stitched conversations
(within the process they came from, as far as the resource tells) close after ``stitch_idle`` seconds, or earlier for
a receiver (``Policy.final_idle``): ``final_idle`` seconds after a final answer while nothing more of that process
waits to be folded, and at once when the receiver learns that the sending process is gone
(:meth:`Assembler.process_ended`).

Sampled (``sampler``, the ``sample`` option): each folded run is kept or dropped as a whole before any writer sees it
(:class:`~spanfold.sampling.decision.Sampler`). With ``forward`` (spanfold's own OTLP export when sampling), a kept
run's SDK spans (``SpanRecord.origin``) leave together once it is decided; a trace that makes no run (no GenAI span)
leaves as it is, and a run the fold fails on is kept.
"""

from __future__ import annotations

import importlib
import sys
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spanfold import counters
from spanfold.config import Config
from spanfold.exporter.files.writers import Writer
from spanfold.exporter.records import SpanRecord, attribute_bytes, process_key
from spanfold.exporter.runs.run import status as trace_status
from spanfold.sampling.decision import Sampler

if TYPE_CHECKING:  # the later stages load when the first trace is done, not at init() (start-up time)
    from opentelemetry.sdk.trace import ReadableSpan

    from spanfold.exporter.runs.grouping import Runs
    from spanfold.exporter.runs.run import Run
    from spanfold.trace.model import Trace


def local_root(record: SpanRecord) -> bool:
    """The root of one process's part of a trace: no parent, or a parent in another process."""
    return record.is_local_root


def trace_root(record: SpanRecord) -> bool:
    """The root of the whole trace: no parent at all."""
    return record.parent_id is None


#: The fold's largest modules, each a step of :meth:`Assembler.preparation` of its own (~15-30 ms of CPU to import).
_DIALECTS = "spanfold.exporter.dialects.dispatch"
_METADATA = "spanfold.exporter.fold.meta"


@dataclass(slots=True)
class Held:
    """What an :class:`Assembler` holds, for its bounds and a receiver's admission: the attribute bytes of every
    buffered trace and open stitched conversation, and the spans and bytes of the traces whose root has not arrived
    (what :meth:`Assembler.shed` may cut to make room)."""

    traces: int = 0  # attribute bytes of the buffered traces
    runs: int = 0  # ... of the open stitched conversations, as the runs stage last said
    rootless_spans: int = 0
    rootless_bytes: int = 0

    @property
    def bytes(self) -> int:
        return self.traces + self.runs

    def add(self, size: int, *, rootless: bool) -> None:
        self.traces += size
        if rootless:
            self.rootless_spans += 1
            self.rootless_bytes += size

    def rooted(self, buf: _Buffer) -> None:
        """``buf``'s root arrived (before the root itself is added)."""
        self.rootless_spans -= len(buf.records)
        self.rootless_bytes -= buf.attribute_bytes

    def release(self, buf: _Buffer) -> None:
        self.traces -= buf.attribute_bytes
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

    def __init__(
        self,
        writers: Iterable[Writer],
        config: Config,
        policy: Policy | None = None,
        *,
        sampler: Sampler | None = None,
        forward: Callable[[ReadableSpan], None] | None = None,
        folded: Callable[[Trace], None] | None = None,
    ) -> None:
        self.config = config
        #: Told every run folded, before sampling (the cost counter).
        self.folded = folded
        #: Which runs are kept (None: all).
        self.sampler = sampler
        #: Where a kept run's SDK spans go (spanfold's OTLP export when sampling; None: nowhere).
        self.forward = forward
        self.policy = policy if policy is not None else Policy()
        self.writers: tuple[Writer, ...] = tuple(writers)
        self.spans = 0  # records buffered, all traces together
        self._traces: OrderedDict[int, _Buffer] = OrderedDict()  # least recently active first
        self._rooted: OrderedDict[int, _Buffer] = OrderedDict()  # those whose root arrived (quiet policy)
        self._rootless: OrderedDict[int, _Buffer] = OrderedDict()  # those whose root has not (yet), cut first
        self.held = Held()  # attribute bytes held, and how much of it (and of spans) waits for a root
        self._runs: Runs | None = None  # the runs stage, made when the first trace is done
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
        if self._runs is not None and record.trace_id not in self._traces:
            joined = self._runs.span(record, now)  # a trace an open conversation holds: no buffer
            if joined is not None:
                self._hand_on(joined)
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

    def shed(self) -> None:
        """Past ``max_buffered_bytes`` (or the policy's ``max_spans``): close the least recently active stitched
        conversations (they are written whole, nothing is lost), then cut the least recently active traces whose root
        has not arrived (the likeliest never to complete; ``traces_shed``), until back under."""
        held, bytes_bound, spans_bound = self.held, self.config.max_buffered_bytes, self.policy.max_spans
        while held.bytes > bytes_bound or self.spans > spans_bound:
            if held.bytes > bytes_bound and self._runs is not None:
                closed = self._runs.close_oldest()
                if closed:
                    self._hand_on(closed)
                    continue
            if not self._rootless:
                return
            counters.incr("traces_shed")
            self._finish(next(iter(self._rootless.values())), incomplete=True)

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
        if self._runs is not None:  # what the buffers still hold, as data: running spans, processes still sending
            self._hand_on(self._runs.expire(now, self._traces, self._traces.values()))

    def process_ended(self, resource: Mapping[str, Any], now: float) -> None:
        """The process that sent spans with ``resource`` is gone (a receiver saw its connection close): fold its traces
        whose root arrived without waiting for them to be quiet, and write its stitched conversations."""
        key = process_key(resource)
        for buf in [b for b in self._rooted.values() if b.resource is not None and process_key(b.resource) == key]:
            self._finish(buf, incomplete=bool(buf.open))
        if self._runs is not None:
            self._hand_on(self._runs.process_ended(key))

    def next_deadline(self) -> float | None:
        """The earliest ``now`` at which :meth:`expire` has something to do (None: nothing is waiting)."""
        deadlines = []
        if self._traces:
            deadlines.append(next(iter(self._traces.values())).touched + self.config.trace_timeout)
        if self._rooted and self.policy.quiet is not None:
            deadlines.append(next(iter(self._rooted.values())).touched + self.policy.quiet)
        runs = self._runs.next_deadline() if self._runs is not None else None
        if runs is not None:
            deadlines.append(runs)
        return min(deadlines) if deadlines else None

    def flush(self, now: float, *, final: bool) -> None:
        """Fold every trace whose root arrived (``final``: every trace), close every conversation, flush the
        writers (``final``: close them)."""
        for buf in list(self._traces.values()):
            if final or buf.root_seen:
                self._finish(buf, incomplete=not buf.root_seen or bool(buf.open))
        if self._runs is not None:
            self._hand_on(self._runs.close_all())
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
        open_conversations = len(self._runs) if self._runs is not None else 0
        return {"traces_in_flight": len(self._traces), "conversations_open": open_conversations}

    # --- the way on: runs, fold, writers ------------------------------------------------------------------

    def _finish(self, buf: _Buffer, *, incomplete: bool) -> None:
        """Forget a done trace's buffer and hand the trace to the runs stage."""
        self._traces.pop(buf.trace_id, None)
        self._rooted.pop(buf.trace_id, None)
        self._rootless.pop(buf.trace_id, None)
        self.spans -= len(buf.records)
        self.held.release(buf)
        status = trace_status(truncated=buf.truncated, incomplete=incomplete)
        try:
            finished = self._runs_stage().add(
                buf.trace_id,
                buf.records,
                status=status,
                incomplete=incomplete,
                touched=buf.touched,
                attribute_bytes=buf.attribute_bytes,
            )
        except Exception as exc:
            counters.fault("processor.fold", exc)
            self._forward(buf.records)  # not decided: kept
            return
        if self.forward is not None and self._runs is not None and self._runs.skipped:
            skipped, self._runs.skipped = self._runs.skipped, []
            for records in skipped:  # no run to decide on: they leave as they are
                self._forward(records)
        self._hand_on(finished)

    def preparation(self) -> tuple[Callable[[], object], ...]:
        """Loading the later stages, in steps an application's process takes early (with its first spans, so that
        they are not loaded as late as its exit, where defining their dataclasses, ``exec`` of source text, would make
        CPython forget that an uncaught KeyboardInterrupt is ending the process: it would exit 1, not by SIGINT), each
        when the application is quiet (:meth:`FoldWorker._await_quiet`): the fold's own modules, in steps of under
        ~30 ms of CPU each (so that a step fits in one model call's wait on its provider), then the price table (the
        memo of the last process's lookups, or genai-prices' data: 150-400 ms of CPU)."""
        from spanfold.codecs import jsonio

        def load(module: str) -> Callable[[], object]:
            return lambda: importlib.import_module(module)

        def prices() -> None:  # the pricing modules too load in their step, not when the steps are listed
            from spanfold.pricing import table

            table.load()

        return (jsonio.warm, load(_DIALECTS), load(_METADATA), self._runs_stage, prices)

    def _runs_stage(self) -> Runs:
        """The runs stage, with the dialects, the stitcher and the fold: loaded when the first trace is done (or by
        :meth:`preparation`), not at ``init()`` (start-up time); the price table is loaded by the first price asked
        for when :meth:`preparation` has not loaded it."""
        if self._runs is None:
            from spanfold.codecs import jsonio
            from spanfold.exporter.fold import folding  # noqa: F401
            from spanfold.exporter.runs.grouping import Runs
            from spanfold.pricing import table

            jsonio.warm()
            table.remember_in(self.config.price_cache)
            self._runs = Runs(self.config, stitch=self.policy.stitch, final_idle=self.policy.final_idle)
            self._runs.keep_skipped = self.forward is not None
        return self._runs

    def _hand_on(self, finished: list[Run]) -> None:
        """The runs the runs stage finished, each folded and written in turn; what it still holds counts as held."""
        if self._runs is not None:
            self.held.runs = self._runs.attribute_bytes
        for run in finished:
            self._write(run)

    def _write(self, run: Run) -> None:
        try:
            from spanfold.exporter.fold.folding import fold_run  # loaded with the first trace, not at init()

            trace = fold_run(run, self.config.prices)
        except Exception as exc:
            counters.fault("processor.fold", exc)
            self._forward(run.records)  # not decided: kept
            return
        if self.folded is not None:
            try:
                self.folded(trace)
            except Exception as exc:
                counters.fault("metrics.cost", exc)
        if self.sampler is not None and not self._kept(trace, run):
            return
        self._forward(run.records)
        counted = False
        for writer in self.writers:
            if getattr(writer, "wants_spans", False):  # otlp-json: the spans the trace was folded from
                self._call(writer, "write_spans", trace, run.records)
            else:
                self._call(writer, "write", trace)
            counted = counted or getattr(writer, "counts_written", False)
        self._written = True
        if not counted:  # a file writer counts the trace once it is on disk; else handed over is written
            counters.incr("traces_written")

    def _kept(self, trace: Trace, run: Run) -> bool:
        """The sampler's decision on a folded run (a fault in it keeps the run)."""
        assert self.sampler is not None
        try:
            return self.sampler.keeps(trace, run.trace_ids[0] if run.trace_ids else 0)
        except Exception as exc:
            counters.fault("sampling.decide", exc)
            return True

    def _forward(self, records: Iterable[SpanRecord]) -> None:
        """A decided run's SDK spans, out together (``forward``: spanfold's OTLP export's span processor)."""
        forward = self.forward
        if forward is None:
            return
        try:
            for record in records:
                origin = record.origin
                if origin is not None:
                    forward(origin)
        except Exception as exc:
            counters.fault("otlp.forward", exc)

    @staticmethod
    def _call(writer: Writer, method: str, *args: Any) -> None:
        try:
            getattr(writer, method)(*args)
        except Exception as exc:
            counters.fault(f"writer.{method}", exc, detail=type(writer).__name__)

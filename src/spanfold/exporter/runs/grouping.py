"""Done traces -> runs: the stage between the span records and the fold (DESIGN folding rule 5).

The assembler hands over each trace it is done with, whole (:meth:`Runs.add`). Its spans are read through their
dialects into steps, once (:func:`~spanfold.exporter.dialects.dispatch.steps_of`); a trace with no step (no GenAI
span) makes no run (``traces_skipped``). A trace with an agent span, or whose first local root is no model call or
tool run, is a run of its own. Any other (the un-parented calls and tool runs of a zero-code agent) is stitched
(:mod:`.stitch`, by the rule of :mod:`spanfold.stitching.evidence`) into the open conversation it continues, or opens
one: one :class:`~.stitch.Stitcher` per process (:func:`~spanfold.exporter.records.process_key`). A span of a trace an
open conversation holds joins it as it comes (:meth:`Runs.span`).

A conversation becomes a run when it closes: idle for ``stitch_idle`` seconds (``ASKING_IDLE_FACTOR`` times that while
it waits on its tools, and never while a span of its traces is still running), ``final_idle`` seconds after a final
answer while no later trace of its process waits (a receiver), when its process is gone, past the bounds of a trace
(written ``truncated``; what follows starts anew), the least recently active when its process has more than
``max_traces_in_flight`` open or the caller must free bytes (:meth:`Runs.close_oldest`), and at a flush.

Every method returns the runs it finished, in order, for the caller to fold and write: nothing here calls the fold,
the writers or the caller. What the assembler still buffers is handed in as data (:class:`Waiting`). Single-threaded:
the assembler's thread owns it.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Reversible
from typing import Any, Protocol

from spanfold import counters, semconv
from spanfold.config import ASKING_IDLE_FACTOR, Config
from spanfold.exporter.dialects.dispatch import safe_step, steps_of
from spanfold.exporter.records import SpanRecord, attribute_bytes, process_key
from spanfold.exporter.records import attribute_bytes as attribute_bytes_of
from spanfold.exporter.runs.run import Run, part_key, run_parts
from spanfold.exporter.runs.stitch import Conversation, Stitcher, placed_at_source, stitch_root
from spanfold.trace.model import TraceStatus


class Waiting(Protocol):
    """A trace the assembler still buffers, as the runs stage reads it: a span of it still running keeps its
    conversation open (a slow tool run), and a later trace of the same process may continue an answered one."""

    @property
    def touched(self) -> float: ...

    @property
    def open(self) -> Collection[int]: ...

    @property
    def resource(self) -> Mapping[str, Any] | None: ...


class Runs:
    """The open stitched conversations of every process, and what each done trace becomes."""

    def __init__(self, config: Config, *, stitch: bool = True, final_idle: float | None = None) -> None:
        self.config = config
        self.stitch = stitch
        self.final_idle = final_idle
        self._stitchers: dict[Hashable, Stitcher] = {}  # one per process: calls are stitched within a process
        #: The attribute bytes of the open conversations' spans (the assembler counts them as held).
        self.attribute_bytes = 0
        #: With ``keep_skipped``: the done traces' parts that made no run (no GenAI span), until the caller takes them
        #: (the assembler forwards their spans over OTLP as they are: there is no run to sample).
        self.keep_skipped = False
        self.skipped: list[list[SpanRecord]] = []

    def __len__(self) -> int:
        """The open conversations."""
        return sum(len(s) for s in self._stitchers.values())

    # --- in ----------------------------------------------------------------------------------------------

    def add(
        self,
        trace_id: int,
        records: list[SpanRecord],
        *,
        status: TraceStatus,
        incomplete: bool,
        touched: float,
        attribute_bytes: int,
    ) -> list[Run]:
        """A trace the assembler is done with (``status``: as complete as it was buffered; ``touched``: when its last
        span came; ``attribute_bytes``: of its spans): a run of its own, or a member of a conversation."""
        if incomplete:
            counters.incr("traces_incomplete")
        parts = run_parts(trace_id, records)
        if len(parts) == 1:
            return self._part(trace_id, parts[0][0], records, status, touched, attribute_bytes)
        finished: list[Run] = []
        for run_id, part in sorted(parts, key=lambda p: min((r.start_ns, r.span_id) for r in p[1])):
            size = sum(attribute_bytes_of(r) for r in part)
            finished += self._part(trace_id, run_id, part, status, touched, size)
        return finished

    def _part(
        self,
        trace_id: int,
        run_id: str | None,
        records: list[SpanRecord],
        status: TraceStatus,
        touched: float,
        attribute_bytes: int,
    ) -> list[Run]:
        """One run's part of a trace (``run_id``: the run's id when the trace holds several, ``spanfold.run.id``)."""
        steps = steps_of(records)
        if not any(s is not None for s in steps.values()):
            counters.incr("traces_skipped")  # no GenAI span: nothing to write
            if self.keep_skipped:
                self.skipped.append(records)
            return []
        root = stitch_root(records, steps) if self.stitch else None
        if root is None:
            return [Run([trace_id], records, steps, status, run_id=run_id)]
        key = process_key(records[0].resource)
        stitcher = self._stitchers.get(key)
        if stitcher is None:
            stitcher = self._stitchers[key] = Stitcher()
        conv = stitcher.add(
            root[1],
            trace_id,
            records,
            steps,
            status,
            touched,
            attribute_bytes=attribute_bytes,
            placed=placed_at_source(root[0]),
            run_id=run_id,
        )
        self.attribute_bytes += attribute_bytes  # now the conversation's
        finished = self._bound(stitcher, conv)
        if finished:
            return finished
        while len(stitcher) > self.config.max_traces_in_flight:
            oldest = next(iter(stitcher.open.values()))
            if oldest is conv:
                break
            finished.append(self._close(stitcher, oldest))
        return finished

    def span(self, record: SpanRecord, now: float) -> list[Run] | None:
        """A span of a trace an open conversation holds joins it (a receiver hears the calls of a run stitched at the
        source one by one, each with its parent in an earlier part). None: no open conversation holds its trace."""
        if not self._stitchers:
            return None
        stitcher = self._stitchers.get(process_key(record.resource))
        run_id = record.attributes.get(semconv.SPANFOLD_RUN_ID)
        part = part_key(record.trace_id, run_id if isinstance(run_id, str) and run_id else None)
        conv = stitcher.member(part) if stitcher is not None else None
        if stitcher is None or conv is None:
            return None
        size = attribute_bytes(record)
        stitcher.join(conv, record, safe_step(record), size, now)
        self.attribute_bytes += size
        return self._bound(stitcher, conv)

    # --- time --------------------------------------------------------------------------------------------

    def expire(self, now: float, waiting: Mapping[int, Waiting], recent: Reversible[Waiting]) -> list[Run]:
        """The conversations idle by now, and (with ``final_idle``) those answered long enough ago. ``waiting``: the
        traces the assembler buffers, by trace id; ``recent``: the same, least recently touched first."""
        finished: list[Run] = []
        idle = self.config.stitch_idle

        def busy(conv: Conversation) -> bool:
            return _running(conv, waiting)

        for key, stitcher in list(self._stitchers.items()):
            for conv in stitcher.idle(now - idle, busy, now, now - idle * ASKING_IDLE_FACTOR):
                finished.append(self._closed(conv))
            if self.final_idle is not None:
                finished += self._answered(key, stitcher, now - self.final_idle, now, recent)
            if not stitcher.open:
                del self._stitchers[key]
        return finished

    def _answered(
        self, key: Hashable, stitcher: Stitcher, before: float, now: float, recent: Reversible[Waiting]
    ) -> list[Run]:
        """The conversations whose final answer came before ``before``, unless a later trace of their process still
        waits to be folded (it may continue them: looked at again ``final_idle`` seconds from now)."""
        finished = []
        for conv in stitcher.answered_before(before):
            if _sending(key, conv.touched, recent):
                stitcher.seen_again(conv, now)
                continue
            counters.incr("conversations_answered")
            finished.append(self._close(stitcher, conv))
        return finished

    def next_deadline(self) -> float | None:
        """The earliest ``now`` at which :meth:`expire` has a conversation to look at (None: none is open)."""
        deadlines = []
        idle = self.config.stitch_idle
        for stitcher in self._stitchers.values():
            deadline = stitcher.idle_deadline(idle, idle * ASKING_IDLE_FACTOR)
            if deadline is not None:
                deadlines.append(deadline)
            answered = stitcher.oldest_answer()
            if answered is not None and self.final_idle is not None:
                deadlines.append(answered + self.final_idle)
        return min(deadlines) if deadlines else None

    # --- closing early -----------------------------------------------------------------------------------

    def close_oldest(self) -> list[Run]:
        """The least recently active conversation of any process (the caller holds too many bytes); [] when none is
        open."""
        touched = [(t, key) for key, st in self._stitchers.items() if (t := st.oldest_touch()) is not None]
        if not touched:
            return []
        stitcher = self._stitchers[min(touched, key=lambda tk: tk[0])[1]]
        return [self._close(stitcher, next(iter(stitcher.open.values())))]

    def process_ended(self, process: Hashable) -> list[Run]:
        """The process ``process`` (:func:`~spanfold.exporter.records.process_key`) is gone: its conversations."""
        stitcher = self._stitchers.pop(process, None)
        if stitcher is None:
            return []
        finished = []
        for conv in stitcher.close_all():
            counters.incr("conversations_process_ended")
            finished.append(self._closed(conv))
        return finished

    def close_all(self) -> list[Run]:
        """Every open conversation (a flush)."""
        stitchers, self._stitchers = self._stitchers, {}
        return [self._closed(conv) for stitcher in stitchers.values() for conv in stitcher.close_all()]

    # --- conversations -> runs ---------------------------------------------------------------------------

    def _bound(self, stitcher: Stitcher, conv: Conversation) -> list[Run]:
        """A stitched run is bounded like any trace: past the bounds it is finished now, marked truncated (what
        follows starts anew)."""
        if (
            len(conv.records) > self.config.max_spans_per_trace
            or conv.attribute_bytes > self.config.max_attribute_bytes_per_trace
        ):
            conv.status = "truncated"
            counters.incr("traces_truncated")
            return [self._close(stitcher, conv)]
        return []

    def _close(self, stitcher: Stitcher, conv: Conversation) -> Run:
        return self._closed(stitcher.close(conv))

    def _closed(self, conv: Conversation) -> Run:
        """A closed conversation as the run the fold folds; its bytes are no longer held here. One whose latest call
        asked for tools that never answered was not over: it is written incomplete."""
        self.attribute_bytes -= conv.attribute_bytes
        if conv.status == "complete" and conv.left_asking():
            conv.status = "incomplete"
            counters.incr("conversations_closed_asking")
        return Run(conv.trace_ids, conv.records, conv.steps, conv.status, stitched=True, run_id=conv.run_id)


def _running(conv: Conversation, waiting: Mapping[int, Waiting]) -> bool:
    """Whether a span of one of the conversation's traces started and has not ended (a tool still running)."""
    for trace_id in conv.trace_ids:
        buf = waiting.get(trace_id)
        if buf is not None and buf.open:
            return True
    return False


def _sending(key: Hashable, since: float, recent: Reversible[Waiting]) -> bool:
    """Whether a trace of process ``key`` touched after ``since`` is still buffered (most recent first)."""
    for buf in reversed(recent):
        if buf.touched <= since:
            return False
        if buf.resource is not None and process_key(buf.resource) == key:
            return True
    return False

"""``FoldingSpanProcessor``: fold every trace on a background worker and hand it to the writers. Modelled on the OTel
SDK's ``BatchSpanProcessor``:

* ``on_start`` / ``on_end`` only queue the span on a :class:`~spanfold.exporter.pipeline.worker.FoldWorker` (a start
  marker, then the span), bounded by twice ``max_queue_size``; over it the worker drops and counts
  (``dropped_span_starts``, ``dropped_spans``);
* the worker folds in batches on its own thread: the shared :class:`~spanfold.exporter.pipeline.assembler.Assembler`
  groups spans by trace id and passes a trace on once its local root and every span it saw start have ended (its
  un-parented calls stitched into runs, then folded), and bounds memory;
* sampled (``sampler``, else the ``sample`` option): each folded run kept or dropped whole; ``forward``, a span
  processor (spanfold's OTLP export when sampling), gets a kept run's spans together once it is decided, never a
  dropped run's; ``folded`` is told every run folded, before sampling (the cost counter, when metrics are on);
* fork-safe: a forked child drops what it inherited and starts its own worker;
* the spans still running are known (by span id, a dict entry each), so a process that is stopping can end them
  (:meth:`FoldingSpanProcessor.end_running`) and write the runs they belong to.

``FoldWorker``, ``POLL_INTERVAL_S`` and ``WAKE_AT`` live in :mod:`spanfold.exporter.pipeline.worker` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import Status, StatusCode

from spanfold import config as config_module
from spanfold import counters, semconv
from spanfold.config import Config
from spanfold.exporter.files.writers import Writer
from spanfold.exporter.forks import reinit_in_child
from spanfold.exporter.pipeline.assembler import Policy
from spanfold.exporter.pipeline.worker import POLL_INTERVAL_S, WAKE_AT, FoldWorker
from spanfold.sampling.decision import Sampler

if TYPE_CHECKING:  # the trace model loads with the fold, not at init()
    from spanfold.trace.model import Trace

__all__ = ["POLL_INTERVAL_S", "WAKE_AT", "FoldWorker", "FoldingSpanProcessor"]

#: Spans tracked as running at most (a span an application never ends stays here until the bound).
RUNNING_LIMIT = 65536


class FoldingSpanProcessor(SpanProcessor):
    """Folds every trace into a flat :class:`~spanfold.trace.model.Trace` and hands it to each writer."""

    def __init__(
        self,
        writers: Iterable[Writer] = (),
        config: Config | None = None,
        *,
        stitch: bool | None = None,
        poll_interval: float = POLL_INTERVAL_S,
        sampler: Sampler | None = None,
        forward: SpanProcessor | None = None,
        folded: Callable[[Trace], None] | None = None,
    ) -> None:
        self.config = config if config is not None else config_module.load()
        limit = 2 * self.config.max_queue_size  # start markers and spans
        stitched = self.config.stitch if stitch is None else stitch  # the stitch option (SPANFOLD_STITCH) by default
        if sampler is None and self.config.sample is not None:  # the sample option (SPANFOLD_SAMPLE) by default
            sampler = Sampler(self.config.sample)
        self._fold = FoldWorker(
            writers,
            self.config,
            Policy(stitch=stitched),
            poll_interval=poll_interval,
            max_depth=limit,
            prepare=True,
            sampler=sampler,
            forward=forward.on_end if forward is not None else None,
            folded=folded,
        )
        #: The spans started and not yet ended, by span id (bounded: past it a span is not tracked, counted). A forked
        #: child forgets its parent's: they run in the parent.
        self._running: dict[int, Span] = {}
        reinit_in_child(self._forget_running)

    # --- SpanProcessor (hot path: append only) -----------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        ctx = span.context
        if ctx is not None:
            running = self._running
            if len(running) < RUNNING_LIMIT:
                running[ctx.span_id] = span
            else:
                counters.incr("running_spans_untracked")
            self._fold.start(ctx.trace_id, ctx.span_id)

    def on_end(self, span: ReadableSpan) -> None:
        ctx = span.context
        if ctx is not None:
            self._running.pop(ctx.span_id, None)
        self._fold.end(span)

    def _forget_running(self) -> None:
        self._running.clear()

    def end_running(self, reason: str) -> int:
        """End every span still running, each marked with what stopped the process (``spanfold.ended_by`` and
        ``error.type``, status error: an OTel backend shows it cut short): the process is about to end, and a span
        never ended is a run never written. Returns how many it ended."""
        ended = 0
        for span in list(self._running.values()):
            try:
                if span.is_recording():
                    span.set_attributes({semconv.SPANFOLD_ENDED_BY: reason, semconv.ERROR_TYPE: reason})
                    span.set_status(Status(StatusCode.ERROR, f"process stopped ({reason})"))
                    span.end()
                    ended += 1
            except Exception as exc:
                counters.fault("processor.end_running", exc)
        self._running.clear()
        return ended

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Block until every span ended before the call is folded and written (open conversations included) and
        the writers flushed. False when ``timeout_millis`` passed first."""
        return self._fold.flush(timeout_millis / 1000)

    def shutdown(self, timeout_millis: int = 30000) -> None:
        """Flush everything (traces still open are written as incomplete), close the writers, stop the worker."""
        self.close(timeout_millis)

    def close(self, timeout_millis: int = 30000) -> bool:
        """:meth:`shutdown`, saying whether everything was written within ``timeout_millis`` (the process is ending:
        every trace held is written, a trace whose root never ended ``incomplete``)."""
        return self._fold.flush(timeout_millis / 1000, final=True)

    def call(self, work: Callable[[], object]) -> None:
        """Run ``work`` on the folding worker, in order with the spans (a model call's metric points: the calling
        thread only queues them)."""
        self._fold.call(work)

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

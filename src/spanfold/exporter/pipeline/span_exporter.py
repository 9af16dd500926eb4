"""``FoldingSpanExporter``: spanfold as a standard OpenTelemetry ``SpanExporter``, for zero-code setups.

    OTEL_TRACES_EXPORTER=spanfold SPANFOLD_OUTPUT=traces opentelemetry-instrument python app.py

The SDK's configurator builds it from the ``opentelemetry_traces_exporter`` entry point ``spanfold`` and puts it
behind the standard ``BatchSpanProcessor``; ``SPANFOLD_OUTPUT``, ``SPANFOLD_FORMAT`` and the other ``SPANFOLD_*``
options configure it. ``export`` only queues the batch: a :class:`~spanfold.exporter.pipeline.worker.FoldWorker` folds
on its own thread, with the same :class:`~spanfold.exporter.pipeline.assembler.Assembler` as the in-process processor,
so un-parented calls are stitched here too. The batch processor exports spans in the order they ended, so a trace is
done once its local root arrived (``Policy(quiet=0)``); a span ending after its root is a late part. Shutdown (the
SDK calls it at exit) writes everything still open.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from spanfold import config as config_module
from spanfold.config import Config
from spanfold.exporter.files.writers import Writer, writers_for
from spanfold.exporter.pipeline.assembler import Policy
from spanfold.exporter.pipeline.worker import FoldWorker

#: Seconds ``shutdown`` waits for the last traces to be written.
SHUTDOWN_TIMEOUT_S = 30.0


class FoldingSpanExporter(SpanExporter):
    """Folds exported spans into flat traces written under ``SPANFOLD_OUTPUT`` (or ``output=``)."""

    def __init__(
        self,
        output: str | None = None,
        format: str | None = None,
        *,
        writers: Sequence[Writer] | None = None,
        config: Config | None = None,
        **_: Any,
    ) -> None:
        self.config = config if config is not None else config_module.load({"output": output, "format": format})
        chosen = list(writers) if writers is not None else writers_for(self.config)
        self._fold = FoldWorker(chosen, self.config, Policy(quiet=0.0), name="spanfold-export")

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        queued = self._fold.offer(spans)  # dropped and counted when the fold is behind (max_queue_size spans queued)
        return SpanExportResult.SUCCESS if queued else SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Fold and write everything exported so far (open conversations included)."""
        return self._fold.flush(timeout_millis / 1000)

    def shutdown(self) -> None:
        self._fold.flush(SHUTDOWN_TIMEOUT_S, final=True)

    def stats(self) -> dict[str, int]:
        return self._fold.stats()

"""Check outcomes as the GenAI conventions' evaluation results: one ``gen_ai.evaluation.result`` event (an
OpenTelemetry log record with that event name) per check and trace, correlated with the run it evaluated, so a backend
shows the verdict beside the run.

Each event carries ``gen_ai.evaluation.name`` (the check's name), ``gen_ai.evaluation.score.value`` (its score, 0 to
1), ``gen_ai.evaluation.score.label`` (``pass`` / ``fail``) and, unless left out, ``gen_ai.evaluation.explanation``
(its reasons: they quote the trace, so they are content). Its trace and span ids are the run's: its trace id and the
span its metadata names the run's root (``root_span_id``), else its first step's (a zero-code run's root is its first
model call). A trace whose metadata has no trace id (a file read without its metadata) has no run to point at: no
event.

The events go to a ``LoggerProvider``: the application's (the global one, where ``spanfold_traces.record`` sends
them in a test) or one exporting OTLP/HTTP to ``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``
(:func:`otlp_logger_provider`, what ``spanfold check --evaluation-events`` uses; the ``otlp`` extra). OpenTelemetry's
logs modules are imported here only, when events are recorded.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, Final

from spanfold import semconv
from spanfold.checks.result import CheckResult
from spanfold.trace.model import Trace
from spanfold.version import __version__

PASS: Final = "pass"
FAIL: Final = "fail"


def attributes(result: CheckResult, *, explanation: bool = True) -> dict[str, Any]:
    """The event's attributes for one check result."""
    out: dict[str, Any] = {
        semconv.EVALUATION_NAME: result.name,
        semconv.EVALUATION_SCORE_VALUE: float(result.score),
        semconv.EVALUATION_SCORE_LABEL: PASS if result.passed else FAIL,
    }
    if explanation and result.reasons:
        out[semconv.EVALUATION_EXPLANATION] = "\n".join(result.reasons)
    return out


def run_span(trace: Trace) -> tuple[int, int] | None:
    """(trace id, span id) of the span the run's events go on, None when the trace names no run."""
    meta = trace.meta
    try:
        trace_id = int(meta.trace_id, 16) if meta.trace_id else 0
    except ValueError:
        return None
    root = meta.extra.get("root_span_id")
    first = next((s.span_id for s in meta.steps if s.span_id), None)
    span = root if isinstance(root, str) and root else first
    try:
        span_id = int(span, 16) if span else 0
    except ValueError:
        return None
    return (trace_id, span_id) if trace_id and span_id else None


def record(
    results: Iterable[tuple[Trace, CheckResult]], logger_provider: Any = None, *, explanation: bool = True
) -> int:
    """Emit one ``gen_ai.evaluation.result`` event per (trace, result), on the trace's run, through
    ``logger_provider`` (default: the global one). Returns how many were emitted."""
    from opentelemetry import _logs
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

    provider = logger_provider if logger_provider is not None else _logs.get_logger_provider()
    logger = provider.get_logger("spanfold.checks", __version__)
    sent = 0
    for trace, result in results:
        ids = run_span(trace)
        if ids is None:
            continue
        span = NonRecordingSpan(SpanContext(ids[0], ids[1], is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)))
        logger.emit(
            timestamp=time.time_ns(),
            context=set_span_in_context(span),
            event_name=semconv.EVALUATION_RESULT_EVENT,
            attributes=attributes(result, explanation=explanation),
        )
        sent += 1
    return sent


def otlp_logger_provider() -> Any:
    """A ``LoggerProvider`` exporting OTLP/HTTP where the ``OTEL_EXPORTER_OTLP_*`` variables say (the ``otlp``
    extra's exporter); shut it down to send what it holds."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter()))
    return provider

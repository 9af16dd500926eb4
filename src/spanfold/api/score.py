"""``spanfold.score``: a score given to a run after it ended (a user's thumbs-up, an evaluator's grade).

::

    spanfold.score(trace_id, "helpful", True, comment="spot on")             # a person's verdict
    spanfold.score(trace_id, "faithfulness", 0.82, source="llm")             # an LLM judge's grade

Checked first (:func:`spanfold.trace.scores.checked`: ``TypeError`` / ``ValueError`` naming the argument), then:

* appended as one line to the scores sidecar of the trace directory, ``traces.scores.jsonl`` (``directory``, else
  the output of the running ``init()``, else the ``output`` option: ``SPANFOLD_OUTPUT`` or ``traces``), one
  ``O_APPEND`` write (:mod:`spanfold.exporter.files.score_lines`), so any number of threads and processes may score at
  once; every ``spanfold`` command reads the scores of a trace from there;
* emitted as a ``gen_ai.evaluation.result`` event (an OpenTelemetry log record) in the run's trace (the trace id
  given; the current span's when it belongs to that trace), when the application has a ``LoggerProvider``:
  ``gen_ai.evaluation.name``, ``gen_ai.evaluation.score.value`` (a number; a bool as 1 or 0),
  ``gen_ai.evaluation.score.label`` (a text value; a bool as ``true`` / ``false``) and ``gen_ai.evaluation.explanation``
  (the comment).

The comment is content: with content capture off it is written nowhere, with redaction on it is redacted. A file that
cannot be written (a full disk, a path refused as unsafe) or an event that cannot be sent is counted in
``spanfold.stats()`` and logged once, never raised: ``score`` returns whether the line was written.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

from spanfold import counters, semconv
from spanfold.codecs import jsonio
from spanfold.content import runtime
from spanfold.exporter.files.safe_files import UnsafePath
from spanfold.exporter.files.score_lines import append_line
from spanfold.trace.scores import SCORES_FILE, Score, ScoreError, ScoreTypeError, checked
from spanfold.version import __version__


def score(
    trace_id: str | int,
    name: str,
    value: float | int | bool | str,
    comment: str | None = None,
    source: str = "human",
    *,
    directory: str | os.PathLike[str] | None = None,
) -> bool:
    """Record a score of the run ``trace_id`` (its metadata's ``trace_id``, or an OpenTelemetry trace id as an
    integer) after it ended: ``name`` (non-empty text), ``value`` (a finite number, a bool, or a label of at most 256
    characters), an optional ``comment`` and who gave it (``source``: ``human``, ``code`` or ``llm``). Appended to the
    trace directory's ``traces.scores.jsonl`` and emitted as a ``gen_ai.evaluation.result`` event when the
    application has a LoggerProvider. Returns whether the line was written (a failure is counted, never raised)."""
    try:
        given = checked(trace_id, name, value, comment, source, time=_now())
    except ScoreTypeError as exc:
        raise TypeError(f"spanfold.score: {exc}") from None
    except ScoreError as exc:
        raise ValueError(f"spanfold.score: {exc}") from None
    rt = runtime.active()
    kept = given.comment if rt.capture_content else None
    if kept is not None:
        kept = rt.content(kept)
    recorded = Score(given.trace_id, given.name, given.value, given.source, kept, given.time)
    counters.incr("scores.given")
    written = _append(recorded, _directory(directory))
    _emit(recorded)
    return written


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _directory(directory: str | os.PathLike[str] | None) -> Path:
    if directory is not None:
        return Path(directory)
    from spanfold import setup  # the running init()'s output, when there is one (loaded only here)

    handle = setup.current()
    if handle is not None:
        return Path(handle.output)
    from spanfold import config

    try:
        return Path(config.load().output)
    except (config.ConfigError, TypeError, ValueError):  # another option is wrong: that is init()'s to say
        return Path(os.environ.get("SPANFOLD_OUTPUT") or "traces")


def _append(recorded: Score, directory: Path) -> bool:
    try:
        append_line(directory, SCORES_FILE, jsonio.dumps(recorded.to_dict()).encode("utf-8"))
    except UnsafePath as exc:
        counters.problem("score.unsafe_path", f"spanfold: refusing to write scores to {exc.filename}: {exc.strerror}")
        return False
    except OSError as exc:
        where = exc.filename if exc.filename is not None else directory / SCORES_FILE
        counters.problem("score.io_errors", f"spanfold: cannot write scores to {where}: {exc.strerror or exc}")
        return False
    except Exception as exc:  # never the application's problem
        counters.fault("score.write", exc)
        return False
    counters.incr("scores.written")
    return True


def event_attributes(recorded: Score) -> dict[str, Any]:
    """The ``gen_ai.evaluation.result`` event's attributes of a score."""
    out: dict[str, Any] = {semconv.EVALUATION_NAME: recorded.name}
    value = recorded.value
    if isinstance(value, bool):
        out[semconv.EVALUATION_SCORE_VALUE] = 1.0 if value else 0.0
        out[semconv.EVALUATION_SCORE_LABEL] = "true" if value else "false"
    elif isinstance(value, str):
        out[semconv.EVALUATION_SCORE_LABEL] = value
    else:
        out[semconv.EVALUATION_SCORE_VALUE] = float(value)
    if recorded.comment is not None:
        out[semconv.EVALUATION_EXPLANATION] = recorded.comment
    return out


def _emit(recorded: Score) -> bool:
    """The event, through the application's LoggerProvider (none set: nothing to do); whether it was emitted."""
    try:
        from opentelemetry import _logs
        from opentelemetry import trace as otel_trace

        provider = _logs.get_logger_provider()
        if _no_provider(provider):
            return False
        try:
            trace_id = int(recorded.trace_id, 16)
        except ValueError:  # not an OpenTelemetry trace id (a trace file's own id): no trace to put it in
            counters.incr("score.events_without_trace")
            return False
        current = otel_trace.get_current_span()
        span_context = current.get_span_context()
        if span_context.trace_id != trace_id:
            parent = otel_trace.SpanContext(
                trace_id, 0, is_remote=True, trace_flags=otel_trace.TraceFlags(otel_trace.TraceFlags.SAMPLED)
            )
            current = otel_trace.NonRecordingSpan(parent)
        logger = provider.get_logger("spanfold.score", __version__)
        logger.emit(
            timestamp=_nanos(recorded.time),
            context=otel_trace.set_span_in_context(current),
            event_name=semconv.EVALUATION_RESULT_EVENT,
            attributes=event_attributes(recorded),
        )
    except Exception as exc:  # never the application's problem
        counters.fault("score.event", exc)
        return False
    counters.incr("scores.events")
    return True


def _no_provider(provider: Any) -> bool:
    """Whether ``provider`` is OpenTelemetry's placeholder (no LoggerProvider set) or its no-op one."""
    from opentelemetry import _logs

    return isinstance(provider, _logs.NoOpLoggerProvider) or type(provider).__name__ == "ProxyLoggerProvider"


def _nanos(when: str | None) -> int:
    if when is None:
        return 0
    stamp = datetime.datetime.fromisoformat(when.replace("Z", "+00:00"))
    return int(stamp.timestamp() * 1_000_000) * 1000

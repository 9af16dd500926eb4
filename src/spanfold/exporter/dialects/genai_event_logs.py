"""``GenAIEventLogProcessor``: the GenAI log events of a ``LoggerProvider`` (per message, or one details event per
call), handed to the fold.

The listening half of :mod:`spanfold.exporter.dialects.genai_events` (which reads the buffer when a span is folded),
kept apart because it subclasses the OTel SDK's ``LogRecordProcessor``: importing the SDK's logs module starts a
thread-pool registration, which the fold (possibly run at interpreter exit) must not pay or trigger. ``init()``
imports this module only when the application has an SDK ``LoggerProvider``.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk._logs import LogRecordProcessor

from spanfold import counters, semconv
from spanfold.exporter.dialects.genai_events import BUFFER, DETAILS_EVENT, EVENT_NAMES, EventBuffer


def _event_name(record: Any) -> str | None:
    name = getattr(record, "event_name", None)
    if name is None:  # emitters before the Logs API had event names put it in an attribute
        attrs = getattr(record, "attributes", None) or {}
        name = attrs.get(semconv.EVENT_NAME)
    return name if isinstance(name, str) else None


class GenAIEventLogProcessor(LogRecordProcessor):
    """Hands GenAI message events to the fold:
    ``logger_provider.add_log_record_processor(GenAIEventLogProcessor())``. A per-message event is kept by its body,
    a details event by its attributes (where it carries the messages)."""

    def __init__(self, buffer: EventBuffer | None = None) -> None:
        self.buffer = buffer if buffer is not None else BUFFER

    def on_emit(self, log_record: Any) -> None:  # ReadWriteLogRecord (SDK >= 1.35) or LogData (older)
        try:
            record = getattr(log_record, "log_record", log_record)
            name = _event_name(record)
            span_id = getattr(record, "span_id", None)
            if name in EVENT_NAMES and span_id:
                payload = "attributes" if name == DETAILS_EVENT else "body"
                self.buffer.add(span_id, name, getattr(record, payload, None))
        except Exception as exc:
            counters.fault("genai_events.emit", exc)

    def emit(self, log_data: Any) -> None:  # the method's name before SDK 1.35
        self.on_emit(log_data)

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

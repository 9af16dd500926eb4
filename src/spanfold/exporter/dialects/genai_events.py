"""Dialect: the GenAI log events of the official OpenTelemetry instrumentations, in both vocabularies:

* the older **per-message** events (``opentelemetry-instrumentation-openai-v2`` without
  ``gen_ai_latest_experimental``; semconv 1.28-1.30). The model span keeps model, usage, ids and finish reasons, and
  each message is a log record (the OTel Logs / Events API) *in the span's context*:

  ``gen_ai.system.message`` / ``gen_ai.user.message``
      body ``{"content"}``
  ``gen_ai.assistant.message``
      body ``{"content", "tool_calls": [{"id", "type": "function", "function": {"name", "arguments"}}]}``
  ``gen_ai.tool.message``
      body ``{"content", "id"}`` (``id``: the tool call it answers)
  ``gen_ai.choice``
      body ``{"index", "finish_reason", "message": {"role", "content", "tool_calls"}}`` (OpenLLMetry's event mode,
      ``use_attributes=False``, emits the same events, with a choice's ``tool_calls`` beside its ``message``)

  (``content`` only with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``; without it the events still
  carry roles, tool-call ids and names.)
* the current conventions' **one event per call**, ``gen_ai.client.inference.operation.details``
  (``opentelemetry-instrumentation-genai-openai`` on ``opentelemetry-util-genai`` >= 1.3, with
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=event_only``, or ``span_and_event``, or
  ``OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT=true``): no body; its *attributes* are the span's, and the content ones
  (``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.system_instructions``) are structured values (lists
  of messages, tuples once the SDK stored them), not the JSON text a span carries.

How the events reach the fold, without the fold's span pipeline knowing about logs:

1. ``GenAIEventLogProcessor`` (:mod:`spanfold.exporter.dialects.genai_event_logs`) is a ``LogRecordProcessor`` for the
   user's ``LoggerProvider`` (the one the instrumentation is given). ``on_emit`` keeps only these event names, and
   only records that carry a span id, and appends ``(name, body)`` (``(name, attributes)`` for a details event) to
   an :class:`EventBuffer` under that span id. O(1) per record, nothing copied.
2. :func:`rewrite` is a rewriter in :data:`spanfold.exporter.dialects.dispatch.REWRITERS`. When the fold worker reads
   a span, "is this mine?" is one dict lookup: the span's id in the buffer. It then *takes* (removes) the span's
   events and writes them into the contract's ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (choices in
   index order; a details event's content attributes as JSON text), linear in the events, never over what the span
   carries itself. A span is folded once, so taking keeps the buffer small.
3. The buffer is bounded (:data:`MAX_SPANS`, least recently written span dropped first, counted as
   ``genai_events_dropped``): events of spans that never reach a fold (no ``FoldingSpanProcessor``, spans sampled
   out) cannot grow it. It is thread-safe (emit on the user's threads, take on the fold worker) and fork-safe (a
   forked child starts empty).

The instrumentation emits the events before it ends the span, and the folding processor folds a span after it ended,
so every event is buffered before its span is read. Other sources of such events (an OTLP logs endpoint) can feed the
same buffer with :meth:`EventBuffer.add`. Never imports :mod:`spanfold.instrumentation`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

from spanfold import counters, semconv
from spanfold.exporter.dialects.shapes import chat_message, dumps, tool_call
from spanfold.exporter.forks import reinit_in_child
from spanfold.exporter.records import SpanRecord

#: Event name -> the role of the input message it carries (``gen_ai.choice`` is the output).
INPUT_EVENTS: Final = semconv.GENAI_INPUT_EVENTS
CHOICE_EVENT: Final = semconv.GENAI_CHOICE_EVENT
#: The current conventions' event (Strands Agents writes it as a span event: :mod:`.strands`).
DETAILS_EVENT: Final = semconv.STRANDS_DETAILS_EVENT
EVENT_NAMES: Final = frozenset({*INPUT_EVENTS, CHOICE_EVENT, DETAILS_EVENT})
#: What a details event carries that a span without content does not (copied onto it as JSON text).
DETAIL_ATTRIBUTES: Final = (semconv.SYSTEM_INSTRUCTIONS, semconv.INPUT_MESSAGES, semconv.OUTPUT_MESSAGES)
#: Spans whose events are held at most (least recently written dropped first).
MAX_SPANS: Final = 4096


class EventBuffer:
    """GenAI events by span id, until the fold takes them."""

    def __init__(self, max_spans: int = MAX_SPANS) -> None:
        self.max_spans = max_spans
        self._reset()
        reinit_in_child(self._reset)

    def _reset(self) -> None:
        self._events: OrderedDict[int, list[tuple[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, span_id: int) -> bool:
        return span_id in self._events

    def __len__(self) -> int:
        return len(self._events)

    def add(self, span_id: int, name: str, body: Any) -> None:
        with self._lock:
            events = self._events.get(span_id)
            if events is None:
                events = self._events[span_id] = []
                if len(self._events) > self.max_spans:
                    self._events.popitem(last=False)
                    counters.incr("genai_events_dropped")
            events.append((name, body))

    def take(self, span_id: int) -> list[tuple[str, Any]]:
        with self._lock:
            return self._events.pop(span_id, [])

    def clear(self) -> None:
        with self._lock:
            self._events.clear()


#: The process's buffer: what ``GenAIEventLogProcessor`` fills by default and :func:`rewrite` reads.
BUFFER: Final = EventBuffer()


def _calls(raw: Any) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    for call in raw if isinstance(raw, (list, tuple)) else ():
        if isinstance(call, Mapping):
            function = call.get("function")
            fn: Mapping[str, Any] = function if isinstance(function, Mapping) else {}
            calls.append(tool_call(call.get("id"), fn.get("name"), fn.get("arguments")))
    return calls


def _message(
    role: str, body: Mapping[str, Any], more_calls: Any = None, finish_reason: str | None = None
) -> list[dict[str, Any]]:
    calls = _calls(body.get("tool_calls") or more_calls)
    content = body.get("content")
    return chat_message(body.get("role") or role, content, calls, body.get("id"), finish_reason=finish_reason)


def messages(events: list[tuple[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """(input messages, output messages in choice order, finish reasons) of one span's per-message events (a details
    event among them is left to :func:`details`)."""
    inputs: list[dict[str, Any]] = []
    choices: list[tuple[int, list[dict[str, Any]], str]] = []
    for name, body in events:
        if name == DETAILS_EVENT:
            continue
        fields: Mapping[str, Any] = body if isinstance(body, Mapping) else {}
        role = INPUT_EVENTS.get(name)
        if role is not None:
            inputs.extend(_message(role, fields))
            continue
        message = fields.get("message")
        reason = str(fields.get("finish_reason") or "")
        index = fields.get("index")
        body = message if isinstance(message, Mapping) else {}
        output = _message("assistant", body, fields.get("tool_calls"), finish_reason=reason)
        choices.append((index if isinstance(index, int) else len(choices), output, reason))
    choices.sort(key=lambda c: c[0])
    outputs = [m for _, msgs, _ in choices for m in msgs]
    return inputs, outputs, [r for _, _, r in choices if r]


def details(fields: Any, attrs: dict[str, Any]) -> None:
    """A details event's content attributes into ``attrs`` (those it lacks), as the JSON text a span carries."""
    if not isinstance(fields, Mapping):
        return
    for key in DETAIL_ATTRIBUTES:
        value = fields.get(key)
        if value is not None and key not in attrs:
            attrs[key] = value if isinstance(value, str) else dumps(value)


def rewrite(record: SpanRecord, buffer: EventBuffer = BUFFER) -> tuple[str, dict[str, Any]] | None:
    """A model span with its buffered events written into the contract's message attributes; None for spans
    without buffered events."""
    if record.span_id not in buffer:
        return None
    events = buffer.take(record.span_id)
    attrs = dict(record.attributes)
    for name, fields in events:
        if name == DETAILS_EVENT:
            details(fields, attrs)
    inputs, outputs, reasons = messages(events)
    if inputs and semconv.INPUT_MESSAGES not in attrs:
        attrs[semconv.INPUT_MESSAGES] = dumps(inputs)
    if outputs and semconv.OUTPUT_MESSAGES not in attrs:
        attrs[semconv.OUTPUT_MESSAGES] = dumps(outputs)
    if reasons and semconv.RESPONSE_FINISH_REASONS not in attrs:
        attrs[semconv.RESPONSE_FINISH_REASONS] = reasons
    attrs.setdefault(semconv.OPERATION_NAME, semconv.OP_CHAT)  # these events come with model spans only
    return record.name, attrs

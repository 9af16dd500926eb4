"""A model call's ``gen_ai.client.inference.operation.details`` event, as the conventions define it and
``opentelemetry-util-genai`` emits it: a log record through the OpenTelemetry Logs API, in the call span's context,
emitted when the call ends (before its span ends), its attributes the span's GenAI ones and its content as structured
values (lists of messages and parts, not the JSON text a span carries).

Capture modes (``capture_content`` / ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``): ``SPAN_AND_EVENT``
records the content on the span and in the event alike; ``EVENT_ONLY`` records it in the event only, the span keeping
none of it (no ``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.system_instructions`` or
``gen_ai.tool.definitions``, nor ``input.value`` / ``output.value``). Tool runs, retrievals and errors have no event:
they keep their content on their spans in both (the flat trace is the same in every mode that captures content).
:class:`~spanfold.content.runtime.Events` says where the event goes; ``setup`` builds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from opentelemetry import trace as otel_trace
from opentelemetry._logs import LogRecord
from opentelemetry.trace import Span

from spanfold import semconv
from spanfold.codecs import jsonio
from spanfold.content.runtime import Runtime

#: The conventions' event (``model/gen-ai/events.yaml`` at the pinned commit).
NAME: Final = semconv.INFERENCE_DETAILS_EVENT
#: The operations that are inferences (the event's): a chat, a completion, a content generation.
OPERATIONS: Final = frozenset({semconv.OP_CHAT, semconv.OP_TEXT_COMPLETION, semconv.OP_GENERATE_CONTENT})
#: A model call's content attributes: what the event carries as structured values, and what its span loses with
#: ``EVENT_ONLY``.
CONTENT: Final = (
    semconv.SYSTEM_INSTRUCTIONS,
    semconv.INPUT_MESSAGES,
    semconv.TOOL_DEFINITIONS,
    semconv.OUTPUT_MESSAGES,
)
#: The span's attributes the event repeats (the GenAI ones, where the call went, how it failed).
_REPEATED: Final = ("gen_ai.", "server.", semconv.ERROR_TYPE)


def only(rt: Runtime) -> bool:
    """Whether a model call's content is in its event only (``EVENT_ONLY``): its span keeps none."""
    return rt.events is not None and rt.events.only


def taken(attrs: Mapping[str, Any], details: dict[str, Any], rt: Runtime) -> Mapping[str, Any]:
    """``attrs`` (a model call's start or result attributes) as its span records them; their content kept in
    ``details`` for the event."""
    found = [key for key in CONTENT if attrs.get(key) is not None]
    for key in found:
        details[key] = attrs[key]
    if not found or not only(rt):
        return attrs
    return {key: value for key, value in attrs.items() if key not in CONTENT}


def emit(span: Span, details: Mapping[str, Any], rt: Runtime) -> None:
    """Emit the call's event in ``span``'s context (a span not recorded emits none: nothing would fold it)."""
    events = rt.events
    if events is None or not span.is_recording():
        return
    spanned: Mapping[str, Any] = getattr(span, "attributes", None) or {}
    fields: dict[str, Any] = {key: value for key, value in spanned.items() if key.startswith(_REPEATED)}
    for key, value in details.items():
        fields[key] = jsonio.loads(value) if isinstance(value, str) else value
    context = otel_trace.set_span_in_context(span)
    events.logger.emit(LogRecord(event_name=NAME, attributes=fields, context=context))

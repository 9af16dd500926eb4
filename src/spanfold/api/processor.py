"""The span side of ``spanfold.context``: every span started while a context is open carries its values, whoever
makes the span (spanfold's instrumentation, another instrumentation, the application's own tracer).

``init()`` adds one :class:`ContextSpanProcessor` to the TracerProvider it uses (once per provider). With a provider
of your own (``FoldingSpanProcessor`` or ``FoldingSpanExporter`` on it), add it yourself::

    provider.add_span_processor(ContextSpanProcessor())

Cost: with no context open, one lookup of the OpenTelemetry context per span start (and, with ``baggage`` on, one
of its baggage); with one open, the attributes (made once per context entered,
:meth:`~spanfold.api.context.RunContext.attributes`) are set on the span.

With ``baggage`` on (:mod:`spanfold.api.baggage`), the incoming baggage's ``user.id`` and ``session.id`` are the run's
user and session wherever no context open here names them.
"""

from __future__ import annotations

from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import Span, SpanProcessor

from spanfold import counters, semconv
from spanfold.api import baggage
from spanfold.api.context import KEY, RunContext
from spanfold.content import runtime


class ContextSpanProcessor(SpanProcessor):
    """Writes the open :mod:`spanfold.api.context` values on each span as it starts: ``user.id``, ``session.id``,
    ``tag.tags`` / ``langfuse.trace.tags``, ``gen_ai.prompt.name`` / ``.version``, the metadata with content capture
    on (of the runtime ``init()`` made active), and the session as ``gen_ai.conversation.id`` when the span names no
    conversation itself and is not a nested invocation (an agent run inside another: its conversation is its own, and
    the fold keeps each agent's history apart by it)."""

    def __init__(self) -> None:
        #: The last context made of incoming baggage and the local values: (user, session, local state, merged).
        self._from_baggage: tuple[str | None, str | None, object, RunContext] | None = None

    def on_start(self, span: Span, parent_context: otel_context.Context | None = None) -> None:
        state = otel_context.get_value(KEY)
        if state is None and not baggage.enabled():
            return
        try:
            if baggage.enabled():
                state = self._with_baggage(state, parent_context)
            if not isinstance(state, RunContext):
                return
            span.set_attributes(state.attributes(runtime.active()))
            if state.session_id is not None:
                attributes = span.attributes or {}
                if (
                    semconv.CONVERSATION_ID not in attributes
                    and attributes.get(semconv.INVOCATION_IS_NESTED) is not True
                ):
                    span.set_attribute(semconv.CONVERSATION_ID, state.session_id)
        except Exception as exc:  # never the application's problem
            counters.fault("context.span", exc)

    def _with_baggage(self, state: object, parent_context: otel_context.Context | None) -> object:
        """The run's context values with the incoming baggage's user and session where the local ones name none
        (:mod:`spanfold.api.baggage`); made once per distinct (baggage, local values)."""
        user, session = baggage.incoming(parent_context)
        if user is None and session is None:
            return state
        local = state if isinstance(state, RunContext) else None
        cached = self._from_baggage
        if cached is not None and cached[0] == user and cached[1] == session and cached[2] is local:
            return cached[3]
        merged = RunContext(user_id=user, session_id=session)
        if local is not None:
            merged = merged.merged(local)
        self._from_baggage = (user, session, local, merged)
        return merged

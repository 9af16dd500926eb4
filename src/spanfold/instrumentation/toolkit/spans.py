"""Start and finish GenAI spans; record errors. Shared by every provider module.

A :class:`ModelSpan` finishes exactly once, whichever of success, error, stream end, ``close()`` or garbage
collection comes first. Every method here is fault-proof: a fault inside spanfold is counted and logged once
(:mod:`spanfold.counters`), never raised into the user's call.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable, Mapping
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from spanfold import counters, semconv
from spanfold.content.redaction import secrets
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit import attributes, details_event, metrics, shown
from spanfold.instrumentation.toolkit.invocation import Response
from spanfold.stitching import asked
from spanfold.stitching.conversations import FULL, Turn, records_all


def error_type(exc: BaseException) -> str:
    """``error.type``: the exception's public qualified name (``openai.InternalServerError``, ``ValueError``)."""
    cls = type(exc)
    if cls.__module__ in ("builtins", "__main__"):
        return cls.__qualname__
    public = [part for part in cls.__module__.split(".") if not part.startswith("_")]
    return ".".join([*public, cls.__qualname__])


def set_error(span: Span, exc: BaseException, rt: Runtime) -> None:
    """Status ERROR, ``error.type``, and the exception event (before the span ends).

    An error message is content (a tool's exception quotes its input; a provider's 400 echoes the prompt): with content
    capture off the span gets the exception's type and the stack frames, never its message; with capture on the
    message goes through the runtime's redaction. Credentials (a server echoing the key it rejected) are masked
    whatever the settings (:func:`~spanfold.content.redaction.secrets`)."""
    kind = error_type(exc)
    span.set_attribute(semconv.ERROR_TYPE, kind)
    if rt.capture_content:
        message = secrets(str(rt.content(str(exc))))
        frames = traceback.format_exception(type(exc), exc, exc.__traceback__)
        stack = secrets(str(rt.content("".join(frames))))
        attributes = {
            semconv.EXCEPTION_TYPE: kind,
            semconv.EXCEPTION_MESSAGE: message,
            semconv.EXCEPTION_STACKTRACE: stack,
        }
        description = f"{type(exc).__name__}: {message}"
    else:
        frames = traceback.format_tb(exc.__traceback__)
        stack = "Traceback (most recent call last):\n" + "".join(frames) + kind
        attributes = {semconv.EXCEPTION_TYPE: kind, semconv.EXCEPTION_MESSAGE: "", semconv.EXCEPTION_STACKTRACE: stack}
        description = type(exc).__name__
    span.record_exception(exc, attributes=attributes, escaped=True)
    span.set_status(Status(StatusCode.ERROR, description))


def set_failure(span: Span, kind: str, message: str | None, rt: Runtime) -> None:
    """Status ERROR and ``error.type`` for a failure that is not an exception (a tool result flagged as an error, a
    framework's own error record). ``message`` is content, as in :func:`set_error`: the status description with
    capture on (redacted, credentials masked), ``kind`` alone with capture off."""
    span.set_attribute(semconv.ERROR_TYPE, kind)
    description = kind
    if rt.capture_content and message:
        description = secrets(str(rt.content(message)))
    span.set_status(Status(StatusCode.ERROR, description))


def end_span(span: Span, end_time: int | None = None) -> None:
    """``span.end()`` (at ``end_time``, nanoseconds since the epoch, when given: a step known only after it ended);
    another span processor that raises when a span ends never reaches the user's call."""
    try:
        span.end(end_time=end_time)
    except Exception as exc:
        counters.fault("span.end", exc)


def clean(attributes: Mapping[str, Any]) -> Mapping[str, AttributeValue]:
    """Drop None values: OTel attributes cannot hold them (the mapping itself when it holds none: the SDK copies it)."""
    for value in attributes.values():
        if value is None:
            return {k: v for k, v in attributes.items() if v is not None}
    return attributes


#: Said once per process, when a model call reported no token usage (its tokens and cost are unknown, never 0).
NO_USAGE: Final = (
    "spanfold: a model call reported no token usage (its tokens and cost are written unknown; counted in stats() as "
    "calls_without_usage). OpenAI Chat Completions streams report it only when asked: pass "
    "stream_options={'include_usage': True}, or init(stream_usage=True) / SPANFOLD_STREAM_USAGE=1 to have spanfold ask"
)


class RunSpan:
    """A started span and the promise to end it exactly once: an invocation's (a framework's agent run,
    ``invoke_agent {name}``) as it is; a model call's with its request, result and conversation (:class:`ModelSpan`)."""

    __slots__ = ("_lock", "_retrieval", "end_time", "ended", "rt", "span")

    def __init__(
        self,
        tracer: Tracer,
        name: str,
        attributes: Mapping[str, Any],
        *,
        rt: Runtime,
        context: otel_context.Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        start_time: int | None = None,
    ) -> None:
        self.rt = rt
        #: A retrieval's span: it carries what Phoenix shows of a retriever too (:mod:`.shown`).
        self._retrieval = attributes.get(semconv.OPERATION_NAME) == semconv.OP_RETRIEVAL
        if self._retrieval:
            attributes = shown.retrieval_request(attributes)
        self.span: Span = tracer.start_span(
            name, context=context, kind=kind, attributes=clean(attributes), start_time=start_time
        )
        self.ended = False
        #: When the span ends (nanoseconds since the epoch) if not at its finish: a call a framework reports after the
        #: fact (the Claude Agent SDK's message stream), with ``start_time``.
        self.end_time: int | None = None
        self._lock = threading.Lock()

    def _claim(self) -> bool:
        with self._lock:
            if self.ended:
                return False
            self.ended = True
            return True

    def _values(self, attributes: Mapping[str, Any]) -> Mapping[str, Any]:
        """What :meth:`finish` sets of its ``attributes``."""
        if self._retrieval:
            attributes = {**attributes, **shown.retrieval_result(attributes)}
        return clean(attributes)

    def finish(self, attributes: Mapping[str, Any] | None = None) -> bool:
        """Set ``attributes`` and end the span; False when it had ended already."""
        if not self._claim():
            return False
        try:
            if attributes:
                self.span.set_attributes(self._values(attributes))
        except Exception as exc:
            counters.fault("span.finish", exc)
        self._ending()
        end_span(self.span, self.end_time)
        return True

    def fail(self, exc: BaseException, attributes: Mapping[str, Any] | None = None) -> bool:
        """Record ``exc`` (status set before the end) and end the span; False when it had ended already."""
        if not self._claim():
            return False
        try:
            if attributes:
                self.span.set_attributes(clean(attributes))
            set_error(self.span, exc, self.rt)
        except Exception as fault:
            counters.fault("span.fail", fault)
        self._ending()
        end_span(self.span, self.end_time)
        return True

    def _ending(self) -> None:
        """What is done once the span has its last attributes, before it ends (a model call: its details event)."""


class ModelSpan(RunSpan):
    """A model call's started span (its request's attributes shown, its result's written) and the promise to end it
    exactly once; a zero-code call's conversation is told how it ended."""

    __slots__ = ("_token", "details", "first_chunk_ns", "full", "measured", "provider", "run", "turn")

    def __init__(
        self,
        tracer: Tracer,
        name: str,
        attributes: Mapping[str, Any],
        *,
        kind: SpanKind,
        rt: Runtime,
        context: otel_context.Context | None = None,
        start_time: int | None = None,
        provider: str = "",
    ) -> None:
        #: The API's provider (a model call's: which vendor attributes its typed response writes).
        self.provider = provider
        #: The metrics recorder when metrics are on (:mod:`.metrics`), and when a stream's first chunk came.
        self.measured = metrics.active()
        self.first_chunk_ns: int | None = None
        #: The content its details event carries (an inference with capture mode EVENT_ONLY or SPAN_AND_EVENT), else
        #: None (:mod:`.details_event`); with EVENT_ONLY, none of it (nor what is shown of it) is on the span.
        self.details: dict[str, Any] | None = None
        if rt.events is not None and attributes.get(semconv.OPERATION_NAME) in details_event.OPERATIONS:
            self.details = {}
            attributes = details_event.taken(attributes, self.details, rt)
        shows = rt.capture_content and not details_event.only(rt)
        #: The run (its root's question and answer) this call belongs to; the call's own input and output shown
        #: (with content capture on: what it records then is structure alone).
        self.run = shown.current_run(context) if shows else None
        if shows and semconv.INPUT_MESSAGES in attributes:
            attributes = dict(attributes)
            root = not otel_trace.get_current_span(context).get_span_context().is_valid
            shown.model_request(attributes, context, root)
        super().__init__(tracer, name, attributes, rt=rt, context=context, kind=kind, start_time=start_time)
        self._token: object | None = None
        #: A zero-code call's place in its conversation (:mod:`~spanfold.stitching.conversations`), told
        #: how the
        #: call ended; ``full``: its result attributes with capture on and no redaction, when ``rt`` differs.
        self.turn: Turn | None = None
        self.full: Callable[[], Mapping[str, Any]] | None = None

    def activate(self) -> None:
        """Make the span current until :meth:`deactivate` (so spans the SDK call makes nest under it)."""
        self._token = otel_context.attach(otel_trace.set_span_in_context(self.span))

    def deactivate(self) -> None:
        token, self._token = self._token, None
        if token is not None:
            try:
                otel_context.detach(token)  # type: ignore[arg-type]
            except Exception as exc:  # a context switched under us (generators, threads): keep going
                counters.fault("context.detach", exc)

    def _values(self, attributes: Mapping[str, Any]) -> Mapping[str, Any]:
        if self.details is not None:
            attributes = details_event.taken(attributes, self.details, self.rt)
        values = clean(attributes)
        if self.rt.capture_content and not details_event.only(self.rt):
            values = {**values, **shown.model_result(attributes, self.run)}
        return values

    def finish(self, attributes: Mapping[str, Any] | None = None) -> bool:
        """Set the result attributes and end the span; False when it had ended already."""
        if not super().finish(attributes):
            return False
        if self.measured is not None:
            self._measure()
        if self.turn is not None:
            self._told(attributes or {})
        return True

    def result(self, response: Response) -> Mapping[str, Any]:
        """The attributes of a typed response under this call's Runtime; a zero-code call's conversation is told it
        with capture on and no redaction (:meth:`_told`)."""
        provider = self.provider
        if self.turn is not None and not records_all(self.rt):
            self.full = lambda: attributes.response(response, provider, FULL)
        elif self.turn is None and response.messages:  # a call inside a run: its tool runs may bring no call id
            asked.record(self.span.get_span_context().trace_id, response.messages)
        if response.usage is None:
            counters.note("calls_without_usage", NO_USAGE)
        return attributes.response(response, provider, self.rt)

    def finish_with(self, response: Response) -> None:
        """:meth:`finish` from a typed response."""
        try:
            result = self.result(response)
        except Exception as exc:
            counters.fault("span.result", exc)
            result = {}
        self.finish(result)

    def fail(self, exc: BaseException, attributes: Mapping[str, Any] | None = None) -> bool:
        """Record ``exc`` (status set before the end) and end the span; False when it had ended already."""
        if not super().fail(exc, attributes):
            return False
        if self.measured is not None:
            self._measure()
        if self.turn is not None:
            self._told(None)
        return True

    def _ending(self) -> None:
        details = self.details
        if details is not None:
            try:
                details_event.emit(self.span, details, self.rt)
            except Exception as exc:
                counters.fault("details_event.emit", exc)

    def _measure(self) -> None:
        """The call's metric points, from its ended span."""
        try:
            if self.measured is not None:
                self.measured.ended(self.span, self.first_chunk_ns)
        except Exception as exc:
            counters.fault("metrics.record", exc)

    def _told(self, attributes: Mapping[str, Any] | None) -> None:
        """Tell the call's conversation how it ended (``None``: it failed)."""
        turn, self.turn = self.turn, None
        try:
            if attributes is not None and self.full is not None and not records_all(self.rt):
                attributes = self.full()
            if turn is not None:
                turn.done(attributes)
        except Exception as exc:
            counters.fault("stitch.done", exc)

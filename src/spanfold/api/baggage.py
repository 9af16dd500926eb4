"""Opt-in W3C baggage for ``spanfold.context``: a front-end service's user and session reach the agent service.

With ``spanfold.init(baggage=True)`` (``SPANFOLD_BAGGAGE``):

* **out**: entering a ``spanfold.context`` that names a user or a session also puts them in the OpenTelemetry
  context's baggage, as ``user.id`` and ``session.id`` (:func:`outgoing`), so every outgoing request whose HTTP
  instrumentation propagates the context (``opentelemetry-instrumentation-requests``, ``-httpx``, ``-urllib``, or
  ``opentelemetry.propagate.inject`` by hand) carries them in its ``baggage`` header, beside ``traceparent``;
* **in**: a span started where the context holds baggage (a server instrumentation, or ``propagate.extract`` and
  ``context.attach`` by hand, took it from the incoming request's ``baggage`` header) gets the baggage's ``user.id``
  and ``session.id`` as the run's context values (:func:`incoming`), wherever the service opens no
  ``spanfold.context`` of its own naming them (its own wins, key by key).

Only OpenTelemetry's API does the work (``opentelemetry.baggage``, and the global propagator, W3C trace context and
baggage unless ``OTEL_PROPAGATORS`` says otherwise): spanfold parses no header. An incoming value is checked as
``spanfold.context`` checks its arguments (a non-empty string of at most 256 characters); one that is not is left out
and counted (``context.baggage_refused``).

Off by default: baggage goes on every request the HTTP instrumentation propagates on, a model provider's included, and
an incoming ``baggage`` header is whatever the caller sent. Turn it on in services whose callers are your own.
"""

from __future__ import annotations

from typing import Final

from opentelemetry import baggage as otel_baggage
from opentelemetry import context as otel_context

from spanfold import counters, semconv

#: The baggage entries spanfold writes and reads: the conventions' names, as on the spans.
USER: Final = semconv.USER_ID
SESSION: Final = semconv.OPENINFERENCE_SESSION_ID
#: The longest value taken from incoming baggage (``spanfold.context``'s bound on an id).
MAX_ID: Final = 256

_on: list[bool] = [False]


def activate(on: bool) -> None:
    """``setup``'s hand-over: whether baggage travels from now on (``init()``'s ``baggage`` option)."""
    _on[0] = on


def enabled() -> bool:
    return _on[0]


def outgoing(ctx: otel_context.Context, user_id: str | None, session_id: str | None) -> otel_context.Context:
    """``ctx`` with the user and the session (those given) as baggage entries."""
    if user_id is not None:
        ctx = otel_baggage.set_baggage(USER, user_id, ctx)
    if session_id is not None:
        ctx = otel_baggage.set_baggage(SESSION, session_id, ctx)
    return ctx


def incoming(ctx: otel_context.Context | None = None) -> tuple[str | None, str | None]:
    """The user and the session the baggage of ``ctx`` (None: the current context) names, each None when it names
    none or one that is not an id (counted)."""
    entries = otel_baggage.get_all(ctx)
    if not entries:
        return None, None
    return _checked(entries.get(USER)), _checked(entries.get(SESSION))


def _checked(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and value.strip() and len(value) <= MAX_ID:
        return value
    counters.incr("context.baggage_refused")
    return None

"""``spanfold.agent``: one ``invoke_agent {name}`` span around a run, a context manager (sync and async) and a
decorator."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from types import TracebackType
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Span, SpanKind
from opentelemetry.util.types import AttributeValue

from spanfold import counters, semconv
from spanfold.api.context import Prompt, Scalar
from spanfold.api.context import context as run_context
from spanfold.content import runtime
from spanfold.instrumentation.toolkit import shown
from spanfold.instrumentation.toolkit.spans import end_span, set_error
from spanfold.instrumentation.toolkit.tool_spans import in_invocation, invocation_context, tracer
from spanfold.stitching import conversations

F = TypeVar("F", bound=Callable[..., Any])

#: The agent runs open in this thread / asyncio task, innermost last: ``(agent, span, context token)``. One variable for
#: every agent object (a ContextVar per object would stay in each context for good), so one agent object may be
#: entered concurrently and nested.
_OPEN_AGENTS: ContextVar[tuple[tuple[agent, Span, object, shown.Shown], ...]] = ContextVar(
    "spanfold_agents", default=()
)


class agent:
    """One ``invoke_agent {name}`` span around a run: a context manager (sync and async) and a decorator. A run
    inside another (a ``spanfold.agent`` or a framework's run) says so (``gen_ai.invocation.is_nested``).

    Everything traced inside (model calls, tools) becomes one trace, folded into one flat trace file line.

    * ``name``: the agent's name (``gen_ai.agent.name``), the trace's name in every format.
    * ``conversation_id``: the application's own id of the conversation this run belongs to (a chat session, a
      thread id), written as ``gen_ai.conversation.id``; runs that share it can be grouped later. Never made up.
    * ``traceparent``: a W3C ``traceparent`` header (``00-<trace id>-<span id>-<flags>``) to start the run under, so
      it joins a trace begun elsewhere (an incoming request, a parent process); otherwise the current span, else the
      ``TRACEPARENT`` environment variable ``init()`` read, else a new trace.
    * ``user_id``, ``session_id``, ``tags``, ``metadata``, ``prompt``: as :class:`spanfold.context` takes them (checked
      alike), open around the run: on its span, every span inside it and its metadata line.
    """

    def __init__(
        self,
        name: str,
        *,
        conversation_id: str | None = None,
        traceparent: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        tags: Iterable[str] | None = None,
        metadata: Mapping[str, Scalar] | None = None,
        prompt: Prompt | None = None,
    ) -> None:
        self.name = name
        self.conversation_id = conversation_id
        self.traceparent = traceparent
        given = (user_id, session_id, tags, metadata, prompt)
        self._context = (
            None
            if all(v is None for v in given)
            else run_context(user_id=user_id, session_id=session_id, tags=tags, metadata=metadata, prompt=prompt)
        )

    def __enter__(self) -> agent:
        if self._context is not None:  # before the span, which carries its values; a bound passed raises here
            self._context.__enter__()
        try:
            attrs: dict[str, AttributeValue] = {
                semconv.OPERATION_NAME: semconv.OP_INVOKE_AGENT,
                semconv.AGENT_NAME: self.name,
                semconv.INVOCATION_IS_NESTED: self.traceparent is None and in_invocation(),
            }
            if self.conversation_id is not None:
                attrs[semconv.CONVERSATION_ID] = self.conversation_id
            parent = self._parent()
            span = tracer().start_span(
                semconv.span_name(semconv.OP_INVOKE_AGENT, self.name),
                context=parent,
                kind=SpanKind.INTERNAL,
                attributes=attrs,
            )
            if parent is not None:  # under a caller's trace: a run of its own all the same
                conversations.name_run(span)
            context, run = shown.open_run(invocation_context(otel_trace.set_span_in_context(span)))
            token = otel_context.attach(context)
            _OPEN_AGENTS.set((*_OPEN_AGENTS.get(), (self, span, token, run)))
        except Exception as exc:
            counters.fault("agent.start", exc)
        return self

    def _parent(self) -> otel_context.Context | None:
        """The run's parent: ``traceparent`` when given (a W3C ``traceparent`` value: the run joins the caller's
        trace), else the current span, else ``init()``'s external parent (the ``TRACEPARENT`` environment variable)."""
        if self.traceparent is not None:
            return conversations.external_parent(self.traceparent)
        source = conversations.active()
        if source is None or otel_trace.get_current_span().get_span_context().is_valid:
            return None
        return source.parent

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        stack = _OPEN_AGENTS.get()
        if not stack or stack[-1][0] is not self:  # entering failed, or exits out of order: nothing of ours is open
            self._exit_context(exc_type, exc, tb)
            return
        _, span, token, run = stack[-1]
        _OPEN_AGENTS.set(stack[:-1])
        try:
            otel_context.detach(token)  # type: ignore[arg-type]
            shown.close_run(span, run)
            if exc is not None:
                set_error(span, exc, runtime.active())
        except Exception as fault:
            counters.fault("agent.end", fault)
        end_span(span)
        self._exit_context(exc_type, exc, tb)

    def _exit_context(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._context is not None:
            self._context.__exit__(exc_type, exc, tb)

    async def __aenter__(self) -> agent:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def __call__(self, fn: F) -> F:
        """Use as a decorator: each call of ``fn`` is one agent run (a fresh span per call)."""
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                async with self._fresh():
                    return await fn(*args, **kwargs)

            return run_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self._fresh():
                return fn(*args, **kwargs)

        return run  # type: ignore[return-value]

    def _fresh(self) -> agent:
        """An agent like this one, for one call of a decorated function (its context's values checked once)."""
        fresh = agent(self.name, conversation_id=self.conversation_id, traceparent=self.traceparent)
        fresh._context = self._context
        return fresh

"""A framework's agent run as an ``invoke_agent {name}`` span, current wherever the run's code runs.

A run method returns its result at once, or a coroutine, a generator or an async generator whose body runs later,
step by step. :func:`traced_run` calls it with the run's span current and hands back what it returned, its body run
in the same context: a coroutine awaited inside it (a coroutine of the same result), a (async) generator proxied (the
same items, ``close()`` / ``aclose()`` as before), so the model calls and tool runs inside nest under the span, in
one trace. The span ends exactly once: when the result is returned, the coroutine done, the generator exhausted,
failed, closed or garbage-collected; an exception is recorded and raised unchanged.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Tracer

from spanfold import counters, semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.patching import WrapperFactory
from spanfold.instrumentation.toolkit.spans import RunSpan, clean, set_failure
from spanfold.instrumentation.toolkit.streams import AsyncStreamProxy, StreamState, SyncStreamProxy
from spanfold.instrumentation.toolkit.watched import called_within


class NoItems:
    """A run's items (its steps, its events) go into no span attribute."""

    def add(self, item: Any) -> None:
        pass

    def attributes(self) -> Mapping[str, Any]:
        return {}


def in_agent_run() -> bool:
    """Whether the current span is a run's (``invoke_agent``, ``invoke_workflow`` or a conversation turn:
    ``spanfold.agent``, this or another producer's run)."""
    attributes = getattr(otel_trace.get_current_span(), "attributes", None)
    return isinstance(attributes, Mapping) and attributes.get(semconv.OPERATION_NAME) in semconv.INVOCATION_OPERATIONS


def open_run(
    tracer: Tracer,
    rt: Runtime,
    name: str,
    kind: str,
    attributes: Mapping[str, Any] | None = None,
    context: otel_context.Context | None = None,
    operation: str = semconv.OP_INVOKE_AGENT,
) -> tuple[StreamState, otel_context.Context]:
    """The run's span (``gen_ai.agent.name`` ``name``, or ``gen_ai.workflow.name`` for an ``invoke_workflow``
    ``operation``, and ``attributes``), started in ``context`` (the current one when None), and the context its code
    runs in (``context`` with the span current). ``kind``: the fault counters' name of the framework's runs."""
    named = semconv.WORKFLOW_NAME if operation == semconv.OP_INVOKE_WORKFLOW else semconv.AGENT_NAME
    attrs = {semconv.OPERATION_NAME: operation, named: name, **(attributes or {})}
    run = RunSpan(tracer, semconv.span_name(operation, name), attrs, rt=rt, context=context)
    return StreamState(run, NoItems(), kind), otel_trace.set_span_in_context(run.span, context)


class ContextRun(SyncStreamProxy):
    """A run's generator, each step run in the run's context."""

    def __init__(self, wrapped: Any, state: StreamState, context: otel_context.Context) -> None:
        super().__init__(wrapped, state)
        self._self_context = context

    def _self_copy(self, wrapped_copy: Any) -> Any:
        return ContextRun(wrapped_copy, self._self_state, self._self_context)

    def __iter__(self) -> Iterator[Any]:
        return self  # each step through __next__, which runs it in the run's context

    def __next__(self) -> Any:
        token = otel_context.attach(self._self_context)
        try:
            return super().__next__()
        finally:
            otel_context.detach(token)


class AsyncContextRun(AsyncStreamProxy):
    """A run's async generator, each step run in the run's context."""

    def __init__(self, wrapped: Any, state: StreamState, context: otel_context.Context) -> None:
        super().__init__(wrapped, state)
        self._self_context = context

    def _self_copy(self, wrapped_copy: Any) -> Any:
        return AsyncContextRun(wrapped_copy, self._self_state, self._self_context)

    async def __anext__(self) -> Any:
        token = otel_context.attach(self._self_context)
        try:
            return await super().__anext__()
        finally:
            otel_context.detach(token)

    async def aclose(self) -> Any:
        try:
            result = self.__wrapped__.aclose()
            return await result if inspect.isawaitable(result) else result
        finally:
            self._self_state.finish()


#: What a run's returned result sets on its span (its output), given the result.
Answered = Callable[[Any], Mapping[str, Any]]


def _answered(state: StreamState, answered: Answered | None, result: Any) -> None:
    if answered is None:
        return
    try:
        state.span.span.set_attributes(clean(answered(result)))
    except Exception as exc:
        counters.fault(f"{state.kind}.output", exc)


async def _awaited(
    coroutine: Any, state: StreamState, context: otel_context.Context, answered: Answered | None = None
) -> Any:
    token = otel_context.attach(context)
    try:
        result = await coroutine
    except BaseException as exc:
        state.finish(exc)
        raise
    finally:
        otel_context.detach(token)
    _answered(state, answered, result)
    state.finish()
    return result


def called_in(
    context: otel_context.Context,
    state: StreamState,
    wrapped: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """``wrapped(*args, **kwargs)`` with ``context`` current; what it raises ends the run's span, failed, and is
    raised unchanged. What it returns is the caller's to follow (a coroutine, a stream, a framework's handler)."""
    token = otel_context.attach(context)
    try:
        return wrapped(*args, **kwargs)
    except BaseException as exc:
        state.finish(exc)
        raise
    finally:
        otel_context.detach(token)


def traced_run(
    wrapped: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    state: StreamState,
    context: otel_context.Context,
    failed: Callable[[Any], tuple[str, str | None] | None] = lambda result: None,
    answered: Answered | None = None,
) -> Any:
    """``wrapped(*args, **kwargs)`` run in ``context``, its result handed back as the module doc says. ``failed``:
    ``(error.type, message)`` of a returned result that reports a failure (a framework that returns its errors),
    the span's error; ``answered``: the attributes a result (returned or awaited) sets on the span."""
    result = called_in(context, state, wrapped, args, kwargs)
    try:
        if inspect.iscoroutine(result):
            return _awaited(result, state, context, answered)
        if isinstance(result, AsyncIterator):
            return AsyncContextRun(result, state, context)
        if isinstance(result, Iterator):
            return ContextRun(result, state, context)
        failure = failed(result)
        if failure is not None:
            set_failure(state.span.span, failure[0], failure[1], state.span.rt)
        _answered(state, answered, result)
        state.finish()
    except Exception as exc:
        counters.fault(f"{state.kind}.result", exc)
        state.finish()
    return result


def name_of(instance: Any) -> str:
    """An agent's name: its ``name`` when it has one, else its class's."""
    name = getattr(instance, "name", None)
    return name if isinstance(name, str) and name else type(instance).__name__


def no_failure(result: Any) -> tuple[str, str | None] | None:
    return None


class AgentRuns:
    """A framework's agent runs and the one handler of their spans: a patched run method (an agent's, a team's, a
    crew's, a program's) opens a run named by ``name(instance)`` and hands its call to :func:`traced_run`, unless the
    call is part of a run already: the same instance's run again (an async entry point calling the sync one), any
    call inside a run of this framework's when its runs do not nest (``nested=False``: a DSPy module inside a
    program), or a run the user (``spanfold.agent``) or another producer named when none of this framework's is
    current. A run inside another of this framework's (a team's member agent, a managed agent) is a run of its own,
    nested, when ``nested``. ``held(instance)``: run state the framework's code reads back (:meth:`current`) while
    the run runs; given, the context holds it in a run another producer named too (its code runs there without a
    span of its own); not given, the context holds the instance of a run spanfold traces. A framework that traces
    its runs itself when its own telemetry is on (``own_spans()``) gets none of spanfold's then."""

    __slots__ = ("failed", "framework", "held", "holds", "key", "nested", "own_spans")

    def __init__(
        self,
        framework: str,
        failed: Callable[[Any], tuple[str, str | None] | None] = no_failure,
        own_spans: Callable[[], bool] = lambda: False,
        held: Callable[[Any], Any] | None = None,
        nested: bool = True,
    ) -> None:
        self.framework = framework
        #: The run state of the run that is current (``held(instance)``, else the instance), in its code's context.
        self.key = otel_context.create_key(f"spanfold.{framework}.run")
        #: ``(error.type, message)`` of a returned result that reports a failure (:func:`traced_run`).
        self.failed = failed
        self.own_spans = own_spans
        self.held = held or (lambda instance: instance)
        self.holds = held is not None
        self.nested = nested

    def current(self) -> Any:
        """The run state of this framework's run that is current here (None: none is)."""
        return otel_context.get_value(self.key)

    def patch(self, name: Callable[[Any], str] = name_of, operation: str = semconv.OP_INVOKE_AGENT) -> WrapperFactory:
        """The wrapper factory of a run method whose runs ``name(instance)`` names (``operation``: an
        ``invoke_workflow`` for a workflow's runs)."""
        kind = f"{self.framework}.run"

        def factory(tracer: Tracer, rt: Runtime) -> Wrapper:
            def wrapper(
                wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
            ) -> Any:
                opened, within = None, None
                try:
                    current = otel_context.get_value(self.key)
                    part = current is not None and (not self.nested or current is self.held(instance))
                    named = current is None and in_agent_run()  # the user or another producer named the run
                    if not (part or self.own_spans() or (named and not self.holds)):
                        within = otel_context.set_value(self.key, self.held(instance))
                        if not named:
                            opened = open_run(tracer, rt, name(instance), kind, context=within, operation=operation)
                except Exception as exc:
                    counters.fault(f"{self.framework}.run_start", exc)
                    within = None
                if opened is not None:
                    return traced_run(wrapped, args, kwargs, *opened, self.failed)
                if within is not None:
                    return called_within(within, lambda: wrapped(*args, **kwargs), kind)
                return wrapped(*args, **kwargs)

            return wrapper

        return factory

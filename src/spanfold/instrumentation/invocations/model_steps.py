"""A framework's model step as a typed invocation, and the one handler that owns its span.

Some frameworks are best read at their own model-call level rather than the client SDK's underneath (smolagents'
``generate``, DSPy's ``execute``): their objects say what the call meant (a code action, a ReAct step's fields), and
they call clients spanfold may not patch. A framework reads what it knows of a call into a :class:`ModelStep` (its
reader: the typed :class:`~spanfold.instrumentation.toolkit.invocation.Request`, no span, no content decision) and
hands the reader, the call and a reader of its result (``answer``: the typed
:class:`~spanfold.instrumentation.toolkit.invocation.Response`) to :func:`run`, :func:`arun` or :func:`stream`. The
handler owns the rest, for every framework alike: reading under a fault guard (a reader that raises costs the step
its span, never the call), the span current while the call runs, the client calls inside it claimed as this step
(:func:`~spanfold.instrumentation.toolkit.calls.claim`: the provider wrappers make no span of their own), failure
(recorded, raised unchanged), and the finish from the answer.

A step may end after its call returns: a framework that parses the model's answer afterwards (a ReAct step's fields, a
``CodeAgent``'s code action) passes ``hold``, asked when the call has answered; a step it holds ends when the framework
calls :meth:`StepSpan.settle` with what it parsed.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import SpanKind, Tracer

from spanfold import counters, semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit import attributes
from spanfold.instrumentation.toolkit.calls import Wrapper, claim, release
from spanfold.instrumentation.toolkit.invocation import Request, Response
from spanfold.instrumentation.toolkit.patching import WrapperFactory
from spanfold.instrumentation.toolkit.spans import ModelSpan, set_failure
from spanfold.instrumentation.toolkit.streams import Accumulator, StreamState, SyncStreamProxy
from spanfold.semconv import parts as p


@dataclass(slots=True)
class ModelStep:
    """One model call, as the framework shows it."""

    request: Request
    #: ``gen_ai.provider.name`` of the API the call reaches.
    provider: str
    operation: str = semconv.OP_CHAT
    #: A step told after the fact (from a message stream): the context its span starts in, and when it started
    #: (epoch nanoseconds; its end then goes in :attr:`StepSpan.end_time` before it finishes).
    context: otel_context.Context | None = None
    start_time: int | None = None


#: Asked when a step's call has answered: True when the framework keeps the step open (it then calls
#: :meth:`StepSpan.settle`).
Hold = Callable[["StepSpan"], bool]


class StepSpan(ModelSpan):
    """A framework's model step: its typed answer kept (:attr:`answer`), its end left to a holder that keeps it open
    past the call."""

    __slots__ = ("answer", "hold")

    def __init__(self, *args: Any, hold: Hold | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hold = hold
        #: What the call answered (None until it has, or when its answer could not be read).
        self.answer: Response | None = None

    def result(self, response: Response) -> Any:
        self.answer = response
        return super().result(response)

    def finish(self, attributes: Any = None) -> bool:
        """End the span, unless its holder keeps it open (then False: :meth:`settle` ends it)."""
        hold, self.hold = self.hold, None
        if hold is not None and self.answer is not None and not self.ended:
            try:
                if hold(self):
                    return False
            except Exception as exc:
                counters.fault("model_step.hold", exc)
        return super().finish(attributes)

    def settle(self, output: p.Message | None = None) -> None:
        """End a held step from its answer, its output message now ``output`` (what the framework parsed) when given."""
        answer = self.answer
        if answer is None:
            self.finish()
            return
        if output is not None:
            answer.messages = [output]
        try:
            result = super().result(answer)
        except Exception as exc:
            counters.fault("model_step.result", exc)
            result = {}
        ModelSpan.finish(self, result)


def start(
    tracer: Tracer, rt: Runtime, framework: str, read: Callable[[], ModelStep], hold: Hold | None = None
) -> StepSpan | None:
    """The step's span from what ``read()`` gives; None after a fault (counted as ``{framework}.model_start``)."""
    try:
        step = read()
        name, attrs = attributes.model_call(step.request, step.provider, step.operation, rt)
        return StepSpan(
            tracer,
            name,
            attrs,
            kind=SpanKind.CLIENT,
            rt=rt,
            provider=step.provider,
            hold=hold,
            context=step.context,
            start_time=step.start_time,
        )
    except Exception as exc:
        counters.fault(f"{framework}.model_start", exc)
        return None


def entered(span: StepSpan, context: otel_context.Context | None = None) -> Callable[[], None]:
    """Make the step current (``context``: the one it was made current in) and claim the client calls made inside it;
    the returned function undoes both."""
    token = otel_context.attach(context or otel_trace.set_span_in_context(span.span))
    claimed = claim(span)

    def leave() -> None:
        release(claimed)
        otel_context.detach(token)

    return leave


def finish(
    span: StepSpan,
    framework: str,
    answer: Callable[[Any], Response],
    result: Any,
    failed: Callable[[Any], tuple[str, str | None] | None] = lambda result: None,
) -> None:
    """End the step from the typed answer of what its call returned (held, if its holder keeps it); ``failed``:
    ``(error.type, message)`` of a result that reports a failure (a call the framework tells of as failed)."""
    try:
        response = answer(result)
        failure = failed(result)
        if failure is not None:
            set_failure(span.span, failure[0], failure[1], span.rt)
    except Exception as exc:
        counters.fault(f"{framework}.model_result", exc)
        span.finish()
        return
    span.finish_with(response)


def run(
    tracer: Tracer,
    rt: Runtime,
    framework: str,
    read: Callable[[], ModelStep],
    call: Callable[[], Any],
    answer: Callable[[Any], Response],
    hold: Hold | None = None,
) -> Any:
    """``call()`` as one model step, its result returned unchanged."""
    span = start(tracer, rt, framework, read, hold)
    if span is None:
        return call()
    leave = entered(span)
    try:
        result = call()
    except BaseException as exc:
        span.fail(exc)
        raise
    finally:
        leave()
    finish(span, framework, answer, result)
    return result


async def arun(
    tracer: Tracer,
    rt: Runtime,
    framework: str,
    read: Callable[[], ModelStep],
    call: Callable[[], Awaitable[Any]],
    answer: Callable[[Any], Response],
    hold: Hold | None = None,
) -> Any:
    """:func:`run` of a coroutine's call."""
    span = start(tracer, rt, framework, read, hold)
    if span is None:
        return await call()
    leave = entered(span)
    try:
        result = await call()
    except BaseException as exc:
        span.fail(exc)
        raise
    finally:
        leave()
    finish(span, framework, answer, result)
    return result


class StepStream(SyncStreamProxy):
    """A step's generator: each item read inside the step (its client's calls claimed by it), fed to the step's
    accumulator."""

    def __init__(self, wrapped: Any, state: StreamState, context: otel_context.Context) -> None:
        super().__init__(wrapped, state)
        self._self_context = context

    def _self_copy(self, wrapped_copy: Any) -> Any:
        return StepStream(wrapped_copy, self._self_state, self._self_context)

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        leave = entered(self._self_state.span, self._self_context)  # type: ignore[arg-type]
        try:
            return super().__next__()
        finally:
            leave()


def stream(
    tracer: Tracer,
    rt: Runtime,
    framework: str,
    read: Callable[[], ModelStep],
    call: Callable[[], Any],
    accumulator: Callable[[StepSpan], Accumulator],
    hold: Hold | None = None,
) -> Any:
    """``call()``, which returns a generator of the step's items, as one model step: the same items, each fed to
    ``accumulator(span)``; the step ends with the generator."""
    span = start(tracer, rt, framework, read, hold)
    if span is None:
        return call()
    context = otel_trace.set_span_in_context(span.span)
    leave = entered(span, context)
    try:
        items = call()
    except BaseException as exc:
        span.fail(exc)
        raise
    finally:
        leave()
    return StepStream(items, StreamState(span, accumulator(span), f"{framework}.stream"), context)


#: A model step's reader from the patched call: ``(instance, args, kwargs)`` -> the step.
ReadOf = Callable[[Any, tuple[Any, ...], dict[str, Any]], ModelStep]


def patch(
    framework: str, read_of: ReadOf, answer: Callable[[Any], Response], hold: Callable[[], Hold | None] = lambda: None
) -> WrapperFactory:
    """The wrapper factory of a framework's model-call method, sync or async alike: each call :func:`run` (a
    coroutine function's: :func:`arun`, its span started when the coroutine is awaited) as ``read_of`` describes it;
    ``hold()``: what holds the step open past the call, if anything does where the call is made."""

    def factory(tracer: Tracer, rt: Runtime) -> Wrapper:
        def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            read = lambda: read_of(instance, args, kwargs)  # noqa: E731
            call = lambda: wrapped(*args, **kwargs)  # noqa: E731
            if inspect.iscoroutinefunction(wrapped):
                return arun(tracer, rt, framework, read, call, answer, hold())
            return run(tracer, rt, framework, read, call, answer, hold())

        return wrapper

    return factory

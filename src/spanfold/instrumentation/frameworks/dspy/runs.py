"""DSPy program runs: the outermost ``dspy.Module`` call is the run, an ``invoke_agent {name}`` span at the root of
its trace.

``Module.__call__`` and ``Module.acall`` are patched; a module called inside a run of another (a ``Predict`` inside a
``ReAct``, the modules of your program) is part of that run and opens nothing. The run is named after the module: its
``name`` attribute when you gave it one (a non-empty string), else its class (``ReAct``, ``ChainOfThought``, your
program's class). A run inside ``spanfold.agent`` (or another producer's current ``invoke_agent`` span) opens no span
of its own: the user named the run.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.trace import Tracer

from spanfold import counters
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.invocations.agent_runs import in_agent_run, open_run, traced_run
from spanfold.instrumentation.toolkit.calls import Wrapper

#: The run's :class:`Run`, set in the context its modules run in.
_RUN_KEY = otel_context.create_key("spanfold.dspy.run")


class Run:
    """One outermost module call: numbers the ReAct runs inside it (their call ids must differ within the trace)."""

    __slots__ = ("reacts",)

    def __init__(self) -> None:
        self.reacts = itertools.count(1)


def react_prefix() -> str:
    """The call-id prefix of a ReAct run starting now: ``react`` for the first of its program run, ``react2``,
    ``react3``... for later ones."""
    run = otel_context.get_value(_RUN_KEY)
    ordinal = next(run.reacts) if isinstance(run, Run) else 1
    return "react" if ordinal == 1 else f"react{ordinal}"


def module_name(module: Any) -> str:
    name = getattr(module, "name", None)
    return name if isinstance(name, str) and name else type(module).__name__


async def _awaited_in(coroutine: Any, context: otel_context.Context) -> Any:
    token = otel_context.attach(context)
    try:
        return await coroutine
    finally:
        otel_context.detach(token)


def _untraced(wrapped: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], context: Any) -> Any:
    """The run, in ``context``, with no span of its own (another producer's run names it)."""
    token = otel_context.attach(context)
    try:
        result = wrapped(*args, **kwargs)
    finally:
        otel_context.detach(token)
    return _awaited_in(result, context) if hasattr(result, "__await__") else result


def run_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    """``Module.__call__`` and ``Module.acall`` (a coroutine: the span ends when it is done)."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if otel_context.get_value(_RUN_KEY) is not None:
            return wrapped(*args, **kwargs)  # a module of the run
        try:
            context = otel_context.set_value(_RUN_KEY, Run())
            name = module_name(instance)
            opened = None if in_agent_run() else open_run(tracer, rt, name, "dspy.run", context=context)
        except Exception as exc:
            counters.fault("dspy.run_start", exc)
            return wrapped(*args, **kwargs)
        if opened is None:
            return _untraced(wrapped, args, kwargs, context)
        return traced_run(wrapped, args, kwargs, *opened)

    return wrapper

"""ReAct's runs and steps, and every ``dspy.Tool`` run as an ``execute_tool {name}`` span.

* ``ReAct.forward`` / ``aforward``: a :class:`~spanfold.instrumentation.frameworks.dspy.trajectory.ReactRun` current
  while it runs.
* ``ReAct._call_with_potential_trajectory_truncation`` (and its async twin), the call of one module with the
  trajectory so far: for the ``react`` module (a step; not ``extract``, which answers the outputs) a
  :class:`~spanfold.instrumentation.frameworks.dspy.trajectory.Step` current while it runs, told what ReAct parsed
  when it returns (or that it parsed nothing, when it raises).
* ``Tool.__call__`` / ``acall``: the span, with the step's call id inside a ReAct run (ReAct runs the tool its last
  step named, ``finish`` too), the arguments, the result (text as it is, anything else as JSON), or the exception
  (recorded and raised unchanged: ReAct shows the model an ``Execution error in ...`` observation and goes on). A
  ``@spanfold.tool`` function a tool wraps makes no second span.
* ``ToolCalls.ToolCall.execute`` (native function calling: a tool call the model made, run by your code): the span,
  with the model's call id; the ``dspy.Tool`` it may run inside makes no second one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.trace import Tracer

from spanfold import counters
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks.dspy import trajectory
from spanfold.instrumentation.invocations import tool_runs
from spanfold.instrumentation.invocations.tool_runs import ToolRun
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.tool_spans import tool_span_of

# --- runs and steps ----------------------------------------------------------------------------------------------


def forward_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            token = otel_context.attach(trajectory.start_run())
        except Exception as exc:
            counters.fault("dspy.react_run", exc)
            return wrapped(*args, **kwargs)
        try:
            return wrapped(*args, **kwargs)
        finally:
            otel_context.detach(token)

    return wrapper


def aforward_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            token = otel_context.attach(trajectory.start_run())
        except Exception as exc:
            counters.fault("dspy.react_run", exc)
            return await wrapped(*args, **kwargs)
        try:
            return await wrapped(*args, **kwargs)
        finally:
            otel_context.detach(token)

    return wrapper


def _step(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[trajectory.Step, Any] | None:
    """The step of ``_call_with_potential_trajectory_truncation(module, trajectory, **inputs)`` and the token of its
    context; None for the ``extract`` module's call, or after a fault (counted)."""
    try:
        module = args[0] if args else kwargs.get("module")
        if module is None or module is not getattr(instance, "react", None):
            return None
        started = trajectory.start_step(args[1] if len(args) > 1 else kwargs.get("trajectory"))
        if started is None:
            return None
        step, context = started
        return step, otel_context.attach(context)
    except Exception as exc:
        counters.fault("dspy.react_step", exc)
        return None


def step_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        started = _step(instance, args, kwargs)
        if started is None:
            return wrapped(*args, **kwargs)
        step, token = started
        prediction = None
        try:
            prediction = wrapped(*args, **kwargs)
            return prediction
        finally:
            otel_context.detach(token)
            step.parsed(prediction)

    return wrapper


def astep_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        started = _step(instance, args, kwargs)
        if started is None:
            return await wrapped(*args, **kwargs)
        step, token = started
        prediction = None
        try:
            prediction = await wrapped(*args, **kwargs)
            return prediction
        finally:
            otel_context.detach(token)
            step.parsed(prediction)

    return wrapper


# --- tool runs ---------------------------------------------------------------------------------------------------


def _tool_run(tool: Any, kwargs: dict[str, Any]) -> ToolRun:
    """``tool(**kwargs)``: with the call id of the ReAct step that named it, inside a ReAct run."""
    name = str(getattr(tool, "name", None) or "tool")
    run = trajectory.current_run()
    return ToolRun(
        name,
        call_id=run.take(name) if run is not None else None,
        arguments=kwargs,
        description=getattr(tool, "desc", None),
        functions=(getattr(tool, "func", None),),
    )


def _inside_call_of(tool: Any) -> bool:
    """Whether the tool runs inside a span spanfold made for a run of it (a ``ToolCall.execute``)."""
    try:
        return tool_span_of(str(getattr(tool, "name", None))) is not None
    except Exception as exc:
        counters.fault("dspy.tool_start", exc)
        return False


def tool_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if _inside_call_of(instance):
            return wrapped(*args, **kwargs)
        return tool_runs.run(tracer, rt, "dspy", lambda: _tool_run(instance, kwargs), lambda: wrapped(*args, **kwargs))

    return wrapper


def atool_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if _inside_call_of(instance):
            return await wrapped(*args, **kwargs)
        return await tool_runs.arun(
            tracer, rt, "dspy", lambda: _tool_run(instance, kwargs), lambda: wrapped(*args, **kwargs)
        )

    return wrapper


def _functions(functions: Any, name: str) -> tuple[Any, ...]:
    """The functions ``ToolCall.execute(functions)`` may call for the tool ``name`` (a ``dspy.Tool``'s function)."""
    if isinstance(functions, dict):
        found = functions.get(name)
        return (getattr(found, "func", found),)
    return tuple(getattr(t, "func", None) for t in functions or () if getattr(t, "name", None) == name)


def _tool_call_run(call: Any, functions: Any) -> ToolRun:
    """``ToolCall.execute(functions)``: the model's call, with its id."""
    name = str(getattr(call, "name", None) or "tool")
    return ToolRun(
        name,
        call_id=getattr(call, "id", None),
        arguments=getattr(call, "args", None) or {},
        functions=_functions(functions, name),
    )


def tool_call_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    """``ToolCall.execute(functions=None)``: the run of a tool call the model made, with its id."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        functions = args[0] if args else kwargs.get("functions")
        return tool_runs.run(
            tracer, rt, "dspy", lambda: _tool_call_run(instance, functions), lambda: wrapped(*args, **kwargs)
        )

    return wrapper

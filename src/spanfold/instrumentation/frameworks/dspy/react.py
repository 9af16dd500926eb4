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

from opentelemetry.trace import Tracer

from spanfold import counters
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks.dspy import trajectory
from spanfold.instrumentation.invocations import tool_runs
from spanfold.instrumentation.invocations.tool_runs import ToolRun
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.tool_spans import tool_span_of
from spanfold.instrumentation.toolkit.watched import called_within

# --- runs and steps ----------------------------------------------------------------------------------------------


def forward_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    """``ReAct.forward`` / ``aforward``: a new :class:`~.trajectory.ReactRun` current while it runs."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            context = trajectory.start_run()
        except Exception as exc:
            counters.fault("dspy.react_run", exc)
            return wrapped(*args, **kwargs)
        return called_within(context, lambda: wrapped(*args, **kwargs), "dspy.react_run")

    return wrapper


def step_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    """``_call_with_potential_trajectory_truncation(module, trajectory, **inputs)`` and its async twin: for the
    ``react`` module (not ``extract``) a step current while it runs, told what ReAct parsed (None: nothing)."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        started = None
        try:
            module = args[0] if args else kwargs.get("module")
            if module is not None and module is getattr(instance, "react", None):
                started = trajectory.start_step(args[1] if len(args) > 1 else kwargs.get("trajectory"))
        except Exception as exc:
            counters.fault("dspy.react_step", exc)
        if started is None:
            return wrapped(*args, **kwargs)
        step, context = started
        return called_within(context, lambda: wrapped(*args, **kwargs), "dspy.react_step", step.parsed)

    return wrapper


# --- tool runs ---------------------------------------------------------------------------------------------------


def _tool_run(tool: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> ToolRun | None:
    """``tool(**kwargs)``: with the call id of the ReAct step that named it, inside a ReAct run; none inside a span
    spanfold made for a run of it (a ``ToolCall.execute``)."""
    name = str(getattr(tool, "name", None) or "tool")
    if tool_span_of(name) is not None:
        return None
    run = trajectory.current_run()
    return ToolRun(
        name,
        call_id=run.take(name) if run is not None else None,
        arguments=kwargs,
        description=getattr(tool, "desc", None),
        functions=(getattr(tool, "func", None),),
    )


#: ``Tool.__call__`` / ``acall``.
TOOL = tool_runs.patch("dspy", _tool_run)


def _functions(functions: Any, name: str) -> tuple[Any, ...]:
    """The functions ``ToolCall.execute(functions)`` may call for the tool ``name`` (a ``dspy.Tool``'s function)."""
    if isinstance(functions, dict):
        found = functions.get(name)
        return (getattr(found, "func", found),)
    return tuple(getattr(t, "func", None) for t in functions or () if getattr(t, "name", None) == name)


def _tool_call_run(call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> ToolRun:
    """``ToolCall.execute(functions=None)``: the run of a tool call the model made, with its id."""
    name = str(getattr(call, "name", None) or "tool")
    functions = args[0] if args else kwargs.get("functions")
    return ToolRun(
        name,
        call_id=getattr(call, "id", None),
        arguments=getattr(call, "args", None) or {},
        functions=_functions(functions, name),
    )


#: ``ToolCalls.ToolCall.execute``.
TOOL_CALL = tool_runs.patch("dspy", _tool_call_run)

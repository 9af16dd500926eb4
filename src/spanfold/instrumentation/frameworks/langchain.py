"""LangChain tool runs: every ``BaseTool`` run as an ``execute_tool {name}`` span.

Supported: ``langchain-core`` >= 1.0, < 2 (tested with 1.7). Every way of running a tool reaches ``BaseTool.run``
or ``BaseTool.arun``: ``invoke`` / ``ainvoke`` call them (so ``@tool`` functions, ``StructuredTool`` and LangGraph's
``ToolNode`` do), and a sync-only tool run with ``ainvoke`` runs ``invoke`` in an executor. Those two methods are
patched, once on the base class: one span per run, never two.

The span carries the model's tool-call id (``ToolNode`` and ``tool.invoke(tool_call)`` pass it as ``tool_call_id``),
so the fold pairs the run with the model's call; the arguments (injected ones, such as the graph state, left out);
the result (the ``ToolMessage`` content the model is sent, else the tool's raw return). An exception is recorded and
re-raised unchanged; a ``ToolException`` that ``handle_tool_error`` turned into the result (a ``ToolMessage`` with
``status="error"``) is an error result: the span fails with that result as its description. A LangGraph
``interrupt()`` inside a tool is control flow, not an error: the span ends without a result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.trace import Span, Tracer

from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks.retrievers import langchain as retrievers
from spanfold.instrumentation.invocations import tool_runs
from spanfold.instrumentation.invocations.tool_runs import Answered, ToolRun
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor
from spanfold.instrumentation.toolkit.spans import end_span
from spanfold.instrumentation.toolkit.tool_spans import (
    fail_tool_span,
)

SUPPORTED = "langchain-core >= 1.0, < 2"
MODULE = "langchain_core.tools.base"

#: LangGraph's ``interrupt()`` / ``Command(goto=...)`` from a tool: exceptions that steer the graph, not failures.
_CONTROL_FLOW = frozenset({"GraphBubbleUp"})


def _arguments(tool: Any, tool_input: Any) -> Callable[[], Any]:
    """The tool's input as the model gave it: a dict without the arguments the framework injects (state, store,
    runtime, the call id), or the string a single-input tool was given."""

    def read() -> Any:
        if isinstance(tool_input, dict):
            drop = getattr(tool, "_filter_injected_args", None)
            return drop(tool_input) if callable(drop) else tool_input
        return tool_input

    return read


def _tool_run(tool: Any, args: tuple[Any, ...], kwargs: dict[str, Any], rt: Runtime) -> ToolRun:
    """``run(tool_input, ..., tool_call_id=...)``; the input read only where it is recorded or pairs the run (the
    injected arguments are filtered out of it)."""
    tool_input = args[0] if args else kwargs.get("tool_input")
    call_id = kwargs.get("tool_call_id")
    return ToolRun(
        str(getattr(tool, "name", None) or type(tool).__name__),
        call_id=call_id,
        arguments=_arguments(tool, tool_input)() if rt.capture_content or call_id is None else None,
        description=getattr(tool, "description", None),
        functions=(getattr(tool, "func", None), getattr(tool, "coroutine", None)),
    )


def _message_of(output: Any, call_id: Any) -> Any:
    """The ``ToolMessage`` in what ``run`` returned: the output itself, or the one answering ``call_id`` in a
    LangGraph ``Command(update={"messages": [...]})``; None when there is none."""
    if hasattr(output, "tool_call_id") and hasattr(output, "content"):
        return output
    update = getattr(output, "update", None)
    found = update.get("messages") if isinstance(update, dict) else None
    for msg in found if isinstance(found, list) else ():
        if getattr(msg, "tool_call_id", None) == call_id and hasattr(msg, "content"):
            return msg
    return None


def _answered(call_id: Any) -> Callable[[Any], Any]:
    """What ``run`` returned, as the model is sent it: its ``ToolMessage``'s content (an error when its status is),
    else the output itself."""

    def answered(output: Any) -> Any:
        msg = _message_of(output, call_id)
        if msg is None:
            return output
        return Answered(msg.content, getattr(msg, "status", None) == "error")

    return answered


def _fail(span: Span | None, exc: BaseException, rt: Runtime) -> None:
    if any(cls.__name__ in _CONTROL_FLOW for cls in type(exc).__mro__):
        if span is not None:
            end_span(span)
        return
    fail_tool_span(span, exc, rt)


def run_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return tool_runs.run(
            tracer, rt, "langchain", lambda: _tool_run(instance, args, kwargs, rt), lambda: wrapped(*args, **kwargs),
            _answered(kwargs.get("tool_call_id")), _fail,
        )  # fmt: skip

    return wrapper


def arun_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return await tool_runs.arun(
            tracer, rt, "langchain", lambda: _tool_run(instance, args, kwargs, rt), lambda: wrapped(*args, **kwargs),
            _answered(kwargs.get("tool_call_id")), _fail,
        )  # fmt: skip

    return wrapper


PATCHES = (
    Patch(MODULE, "BaseTool.run", run_wrapper),
    Patch(MODULE, "BaseTool.arun", arun_wrapper),
    *retrievers.PATCHES,  # retrievers' invoke / ainvoke: retrieval spans
)


class LangChainInstrumentor(TableInstrumentor):
    """LangChain tool runs as ``execute_tool`` spans, retrievers' lookups as ``retrieval`` spans."""

    library = "langchain_core"

    dependencies = (SUPPORTED,)

    def patches(self, rt: Runtime) -> Sequence[Patch]:
        return PATCHES

"""A framework's tool run as a typed invocation, and the one handler that owns its span.

A framework reads what it knows of a run into a :class:`ToolRun` (its reader: plain attribute reads, no span, no
content decision) and hands the reader and the call to :func:`run` (or :func:`arun` for a coroutine). The handler
owns the rest, for every framework alike: reading under a fault guard (a reader that raises costs the run its span,
never the call), the content-capture decision (the arguments as JSON only with capture on; their values always, for
pairing), the tool's description (its first line), the ``@spanfold.tool`` functions the run calls (which then make no
span of their own), the span current while the call runs, failure (the exception recorded, raised unchanged), and
the finish from what the call returned (``output``: what the model is sent of it; a :class:`Answered` with
``failed``: an error the framework turned into the model's input).

Generator results and runs a framework reports after the fact (agno's tool streams, smolagents' code actions) start
with :func:`start` and end with :func:`finish` / :func:`~spanfold.instrumentation.toolkit.tool_spans.fail_tool_span`.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from contextvars import Token
from dataclasses import dataclass
from typing import Any, NamedTuple

from opentelemetry import context as otel_context
from opentelemetry.trace import Span, SpanKind, Tracer

from spanfold import counters, semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.patching import WrapperFactory
from spanfold.instrumentation.toolkit.reading.fields import dumps
from spanfold.instrumentation.toolkit.tool_spans import (
    ToolFailure,
    arun_in_tool_span,
    end_tool_span,
    end_tool_span_with_error_result,
    fail_tool_span,
    framework_tool_run,
    run_in_tool_span,
    start_tool_span,
)


@dataclass(slots=True)
class ToolRun:
    """One tool run, as the framework shows it."""

    name: str
    #: The model's tool-call id, when the framework knows it.
    call_id: Any = None
    #: What the tool is called with (recorded as JSON with capture on; the values pair the run with the model's call).
    arguments: Any = None
    #: The arguments as the JSON text the model gave, recorded as they are (else :attr:`arguments` as JSON).
    arguments_text: str | None = None
    #: The tool's description (its first line is recorded as ``gen_ai.tool.description``).
    description: Any = None
    #: The Python functions the run calls: a ``@spanfold.tool`` among them makes no span of its own.
    functions: tuple[Any, ...] = ()
    #: The producer's own attributes (an MCP client's ``mcp.*``).
    attributes: Mapping[str, Any] | None = None
    kind: SpanKind = SpanKind.INTERNAL
    #: The span's name where the producer's conventions name it otherwise.
    span_name: str | None = None
    #: The context the span starts in, when not the current one (a run told after the fact, from a message stream).
    context: otel_context.Context | None = None


@dataclass(slots=True)
class Answered:
    """What a run answered, when the framework turned an error into the model's input (``failed``)."""

    value: Any
    failed: bool = False


class Started(NamedTuple):
    span: Span
    #: :func:`~spanfold.instrumentation.toolkit.tool_spans.framework_tool_run`'s token, handed back when the call
    #: returns.
    token: Token[tuple[Any, ...]] | None


def _first_line(description: Any) -> str | None:
    lines = description.strip().splitlines() if isinstance(description, str) else []
    return lines[0] if lines else None


def start(tracer: Tracer, rt: Runtime, framework: str, read: Callable[[], ToolRun | None]) -> Started | None:
    """The started span of the run ``read()`` describes (not current); None when it describes none or failed."""
    try:
        tool = read()
        if tool is None:
            return None
        values = tool.arguments
        text = tool.arguments_text
        if text is None and values is not None and rt.capture_content:
            text = dumps(values)
        attributes = dict(tool.attributes or {})
        if (line := _first_line(tool.description)) is not None:
            attributes[semconv.TOOL_DESCRIPTION] = line
        token = otel_context.attach(tool.context) if tool.context is not None else None
        try:
            span = start_tool_span(
                tracer,
                tool.name,
                rt,
                call_id=tool.call_id,
                arguments=text if rt.capture_content else None,
                attributes=attributes or None,
                kind=tool.kind,
                argument_values=values,
                span_name=tool.span_name,
            )
        finally:
            if token is not None:
                otel_context.detach(token)
        return Started(span, framework_tool_run(*tool.functions) if tool.functions else None)
    except Exception as exc:
        counters.fault(f"{framework}.tool_start", exc)
        return None


def finish(span: Span, rt: Runtime, framework: str, output: Callable[[Any], Any], result: Any) -> None:
    """End the span from ``result``: ``output(result)``, what the model is sent of it (an :class:`Answered` that
    ``failed``: an error result)."""
    try:
        answered = output(result)
    except Exception as exc:
        counters.fault(f"{framework}.tool_result", exc)
        answered = None
    if isinstance(answered, Answered):
        if answered.failed:
            end_tool_span_with_error_result(span, answered.value, rt)
            return
        answered = answered.value
    end_tool_span(span, answered, rt)


def _same(result: Any) -> Any:
    return result


def run(
    tracer: Tracer,
    rt: Runtime,
    framework: str,
    read: Callable[[], ToolRun | None],
    call: Callable[[], Any],
    output: Callable[[Any], Any] = _same,
    fail: ToolFailure = fail_tool_span,
) -> Any:
    """``call()`` as the tool run ``read()`` describes: its span current while it runs, failed by what it raises
    (``fail``: a framework whose control-flow exceptions are no failure), ended with ``output(result)``; the call's
    own result returned. A run ``read`` cannot describe runs untouched."""
    started = start(tracer, rt, framework, read)
    if started is None:
        return call()
    result = run_in_tool_span(started.span, rt, call, started.token, fail)
    finish(started.span, rt, framework, output, result)
    return result


async def arun(
    tracer: Tracer,
    rt: Runtime,
    framework: str,
    read: Callable[[], ToolRun | None],
    call: Callable[[], Awaitable[Any]],
    output: Callable[[Any], Any] = _same,
    fail: ToolFailure = fail_tool_span,
) -> Any:
    """:func:`run` for a coroutine (started here, in the task that awaits it: frameworks gather tool runs)."""
    started = start(tracer, rt, framework, read)
    if started is None:
        return await call()
    result = await arun_in_tool_span(started.span, rt, call, started.token, fail)
    finish(started.span, rt, framework, output, result)
    return result


#: A tool run's reader from the patched call: ``(instance, args, kwargs)`` -> the run (None: the call is no run).
ReadOf = Callable[[Any, tuple[Any, ...], dict[str, Any]], ToolRun | None]


def patch(
    framework: str, read_of: ReadOf, output: Callable[[Any], Any] = _same, fail: ToolFailure = fail_tool_span
) -> WrapperFactory:
    """The wrapper factory of a framework's tool-run method, sync or async alike: each call :func:`run` (a
    coroutine function's: :func:`arun`, its span started when the coroutine is awaited) as ``read_of`` describes it."""

    def factory(tracer: Tracer, rt: Runtime) -> Wrapper:
        def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            read = lambda: read_of(instance, args, kwargs)  # noqa: E731
            call = lambda: wrapped(*args, **kwargs)  # noqa: E731
            if inspect.iscoroutinefunction(wrapped):
                return arun(tracer, rt, framework, read, call, output, fail)
            return run(tracer, rt, framework, read, call, output, fail)

        return wrapper

    return factory

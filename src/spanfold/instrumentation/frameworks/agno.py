"""Agno: an agent or team run is one trace, rooted at ``invoke_agent {name}``, with every tool run in it.

Supported: ``agno`` >= 3.1, < 4 (tested with 3.1.10). Patched, once on the classes:

* ``Agent.run`` / ``Agent.arun`` and ``Team.run`` / ``Team.arun``: the run's ``invoke_agent`` span, named after the
  agent or team (``name=``, else ``Agent`` / ``Team``), current while the run's code runs: during the call, the
  coroutine ``arun`` returns, or each step of the event stream ``stream=True`` returns (the same generator or async
  generator, proxied; its span ends when it is exhausted, fails, is closed or collected). A run that Agno ends with
  status ``ERROR`` (it returns its errors) is the span's error (``error.type`` ``agent_error``, its content the
  description). A team member's run is its own ``invoke_agent`` span inside the team's run: one trace, each agent's
  steps under its own name. A run inside ``spanfold.agent`` (or another producer's current ``invoke_agent`` span)
  opens none.
* ``FunctionCall.execute`` / ``aexecute``, every tool run (a function, a toolkit's tool, a team's delegation to a
  member): an ``execute_tool {name}`` span with the model's call id, the arguments, the result, or the failure Agno
  records (``error.type`` ``tool_error``, the error the model is sent) or the exception it raises (re-raised
  unchanged). A tool whose result is a generator (a team's delegation yields the member's run as it goes) keeps its
  span open, current while each item is made, until the generator ends: the member's run nests under the tool run,
  and the result is the text items joined.

The model calls are the provider patches' (``OpenAIChat`` through the openai SDK): one step each, under the run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from opentelemetry import trace as otel_trace
from opentelemetry.trace import Span, Tracer

from spanfold import counters
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.invocations import tool_runs
from spanfold.instrumentation.invocations.agent_runs import AgentRuns
from spanfold.instrumentation.invocations.tool_runs import ToolRun
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor
from spanfold.instrumentation.toolkit.reading.fields import get
from spanfold.instrumentation.toolkit.streams import Transparent
from spanfold.instrumentation.toolkit.tool_spans import (
    arun_in_tool_span,
    end_tool_span,
    end_tool_span_with_error_result,
    fail_tool_span,
    run_in_tool_span,
)

SUPPORTED = "agno >= 3.1, < 4"


def _failure(result: Any) -> tuple[str, str | None] | None:
    status = get(result, "status")
    if getattr(status, "value", status) != "ERROR":
        return None
    content = get(result, "content")
    return "agent_error", content if isinstance(content, str) else None


#: An agent's or a team's run, named after it; a member's run inside a team's is its own span, nested.
RUNS = AgentRuns("agno", _failure)


def _tool_run(call: Any) -> ToolRun:
    """A ``FunctionCall``'s run; the ``@spanfold.tool`` function it runs makes no span of its own."""
    function = call.function
    return ToolRun(
        str(function.name),
        call_id=call.call_id,
        arguments=call.arguments if call.arguments is not None else {},
        description=getattr(function, "description", None),
        functions=(getattr(function, "entrypoint", None),),
    )


class _ToolStream(Transparent):
    """A tool's generator result (a team's delegation to a member yields the member's run as it goes): the tool's
    span stays open, current while each item is made, and ends with the text items joined (what Agno sends the
    model) when the generator is exhausted, fails, is closed or collected."""

    def __init__(self, wrapped: Any, span: Span, rt: Runtime) -> None:
        super().__init__(wrapped)
        self._self_span: Span | None = span
        self._self_rt = rt
        self._self_texts: list[str] = []

    def _self_item(self, item: Any) -> Any:
        if isinstance(item, str):
            self._self_texts.append(item)
        return item

    def _self_end(self, error: BaseException | None = None) -> None:
        span, self._self_span = self._self_span, None
        if span is not None and error is not None:
            fail_tool_span(span, error, self._self_rt)
        elif span is not None:
            end_tool_span(span, "".join(self._self_texts), self._self_rt)

    def __del__(self) -> None:
        if getattr(self, "_self_span", None) is not None:
            self._self_end()


class _SyncToolStream(_ToolStream):
    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        span = self._self_span
        if span is None:
            return self._self_item(self.__wrapped__.__next__())
        with _use(span):
            try:
                item = self.__wrapped__.__next__()
            except StopIteration:
                self._self_end()
                raise
            except BaseException as exc:
                self._self_end(exc)
                raise
        return self._self_item(item)

    def close(self) -> Any:
        try:
            return self.__wrapped__.close()
        finally:
            self._self_end()


class _AsyncToolStream(_ToolStream):
    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        span = self._self_span
        if span is None:
            return self._self_item(await self.__wrapped__.__anext__())
        with _use(span):
            try:
                item = await self.__wrapped__.__anext__()
            except StopAsyncIteration:
                self._self_end()
                raise
            except BaseException as exc:
                self._self_end(exc)
                raise
        return self._self_item(item)

    async def aclose(self) -> Any:
        try:
            return await self.__wrapped__.aclose()
        finally:
            self._self_end()


def _end_tool(span: Span, call: Any, outcome: Any, rt: Runtime) -> None:
    try:
        failed = get(outcome, "status") == "failure"
        error = get(outcome, "error") or call.error
        result = get(outcome, "result")
        stream: type[_ToolStream] | None = _SyncToolStream if isinstance(result, Iterator) else None
        stream = _AsyncToolStream if isinstance(result, AsyncIterator) else stream
    except Exception as exc:
        counters.fault("agno.tool_result", exc)
        end_tool_span(span, None, rt)
        return
    if failed:
        end_tool_span_with_error_result(span, error, rt)
    elif stream is not None and result is call.result:
        proxy = stream(result, span, rt)  # Agno reads the items later, from the call and the outcome alike
        try:
            call.result = proxy
            outcome.result = proxy
        except Exception as exc:
            counters.fault("agno.tool_stream", exc)
            call.result = outcome.result = result
            proxy._self_span = None
            end_tool_span(span, None, rt)
    elif stream is not None:
        end_tool_span(span, None, rt)  # a generator spanfold cannot follow: its items reach the trace from the model
    else:
        end_tool_span(span, result, rt)


def _use(span: Span) -> Any:
    return otel_trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False)


def execute_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        started = tool_runs.start(tracer, rt, "agno", lambda: _tool_run(instance))
        if started is None:
            return wrapped(*args, **kwargs)
        outcome = run_in_tool_span(started.span, rt, lambda: wrapped(*args, **kwargs), started.token)
        _end_tool(started.span, instance, outcome, rt)
        return outcome

    return wrapper


def aexecute_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        started = tool_runs.start(tracer, rt, "agno", lambda: _tool_run(instance))
        if started is None:
            return await wrapped(*args, **kwargs)
        outcome = await arun_in_tool_span(started.span, rt, lambda: wrapped(*args, **kwargs), started.token)
        _end_tool(started.span, instance, outcome, rt)
        return outcome

    return wrapper


PATCHES = (
    Patch("agno.agent.agent", "Agent.run", RUNS.patch()),
    Patch("agno.agent.agent", "Agent.arun", RUNS.patch()),
    Patch("agno.team.team", "Team.run", RUNS.patch()),
    Patch("agno.team.team", "Team.arun", RUNS.patch()),
    Patch("agno.tools.function", "FunctionCall.execute", execute_wrapper),
    Patch("agno.tools.function", "FunctionCall.aexecute", aexecute_wrapper),
)


class AgnoInstrumentor(TableInstrumentor):
    """Agno agent and team runs as ``invoke_agent`` spans, tool runs as ``execute_tool`` spans."""

    library = "agno"

    dependencies = (SUPPORTED,)

    def patches(self, rt: Runtime) -> Sequence[Patch]:
        return PATCHES

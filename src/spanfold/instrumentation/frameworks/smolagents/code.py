"""``CodeAgent`` steps: the code action smolagents parses from the model's text joins the step's output as a
``python_interpreter`` tool call, and its run is that call's ``execute_tool`` span (see the package's doc)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Span, Tracer

from spanfold import counters
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks.smolagents.agents import AgentState, state_of
from spanfold.instrumentation.invocations import tool_runs
from spanfold.instrumentation.invocations.model_steps import Hold, StepSpan
from spanfold.instrumentation.invocations.tool_runs import ToolRun
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.invocation import Response
from spanfold.instrumentation.toolkit.tool_spans import end_tool_span, fail_tool_span
from spanfold.instrumentation.toolkit.watched import Watched
from spanfold.semconv import parts as p

#: The :class:`CodeStep` running now, set in the context a ``CodeAgent`` step runs in.
_STEP_KEY = otel_context.create_key("spanfold.smolagents.code_step")
INTERPRETER = "python_interpreter"


class CodeStep:
    """One ``CodeAgent`` step: its model call's span, held until smolagents has parsed the code action from the
    model's text (the action then joins the step's output as a ``python_interpreter`` tool call), and the action's
    run as that call's ``execute_tool`` span."""

    def __init__(self, tracer: Tracer, rt: Runtime, memory_step: Any, agent: AgentState) -> None:
        self.tracer = tracer
        self.rt = rt
        self.memory_step = memory_step
        self.agent = agent
        self.model: StepSpan | None = None
        self.tool: Span | None = None
        self.call_id: str | None = None

    def hold(self, span: StepSpan) -> bool:
        if self.model is not None:
            return False
        self.model = span
        return True

    def release(self, action: Any = None) -> None:
        """Finish the model step's span; ``action``: the ``ToolCall`` smolagents parsed from its text."""
        span, self.model = self.model, None
        if span is None:
            return
        output = None
        try:
            if span.answer is not None:
                output = _acted(span.answer, getattr(self.memory_step, "model_output", None), action)
        except Exception as exc:
            counters.fault("smolagents.code_action", exc)
        span.settle(output)

    def item(self, item: Any) -> None:
        """What the step yielded: its action (the tool run starts), its output (the run ends)."""
        kind = type(item).__name__
        if kind == "ToolCall" and getattr(item, "name", None) == INTERPRETER:
            self.release(item)
            self.call_id = item.id
            run = ToolRun(INTERPRETER, call_id=item.id, arguments={"code": item.arguments})
            started = tool_runs.start(self.tracer, self.rt, "smolagents", lambda: run)
            self.tool = started.span if started is not None else None
        elif kind == "ActionOutput":
            self.end()

    def end(self, error: BaseException | None = None) -> None:
        """The step ended: the action's run with what the step observed (or its error)."""
        self.release()
        tool, self.tool = self.tool, None
        if tool is None:
            return
        observation = getattr(self.memory_step, "observations", None)
        self.agent.observations.add(self.call_id, observation)
        if error is not None:
            fail_tool_span(tool, error, self.rt)
        else:
            end_tool_span(tool, observation, self.rt)

    def context(self, base: otel_context.Context) -> otel_context.Context:
        context = otel_context.set_value(_STEP_KEY, self, base)
        return otel_trace.set_span_in_context(self.tool, context) if self.tool is not None else context


def code_step_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    """``CodeAgent._step_stream``: each part of the step runs knowing the step, with the action's tool span current
    while it runs."""

    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        stream = wrapped(*args, **kwargs)
        try:
            memory_step = args[0] if args else kwargs.get("memory_step")
            step = CodeStep(tracer, rt, memory_step, state_of(instance))
        except Exception as exc:
            counters.fault("smolagents.code_step", exc)
            return stream
        return Watched(stream, "smolagents.code_step", step.context, step.item, step.end)

    return wrapper


def _acted(answer: Response, text: Any, action: Any) -> p.Message:
    """The step's output message: its text as smolagents keeps it (and re-sends it: its closing code tag added back),
    its tool calls, and the code action smolagents parsed as a ``python_interpreter`` call."""
    said = answer.messages[0]["parts"] if answer.messages else []
    parts: list[p.Part] = [p.text(text)] if isinstance(text, str) else [x for x in said if x["type"] == "text"]
    parts += [part for part in said if part["type"] == "tool_call"]
    if action is not None:
        parts.append(p.tool_call(action.id, INTERPRETER, {"code": action.arguments}))
    return p.message("assistant", parts)


def holder() -> Hold | None:
    """What holds the model step made now: the running ``CodeAgent`` step, until it has one."""
    step = otel_context.get_value(_STEP_KEY)
    return step.hold if isinstance(step, CodeStep) and step.model is None and step.tool is None else None

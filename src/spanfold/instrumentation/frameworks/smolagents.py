"""smolagents (Hugging Face): an agent run is one trace, rooted at ``invoke_agent {agent name}``, with its model steps
and tool runs.

Supported: ``smolagents`` >= 1.26, < 2 (tested with 1.26). Patched, once on the base classes:

* ``MultiStepAgent._run_stream``, the generator every run goes through (``run()``, ``run(stream=True)``, a managed
  agent called by its manager): the run's ``invoke_agent`` span, named after the agent (``name=``, else its class),
  current while each step runs and ended when the generator is exhausted, fails, is closed or is collected. A
  managed agent's run is its own ``invoke_agent`` span inside the manager's tool run of it: one trace, each agent's
  steps under its own name. A run inside ``spanfold.agent`` (any ``invoke_agent`` span that is current) opens none.
* The model classes' ``generate`` and ``generate_stream``: each call one model step, read from smolagents' objects
  (:mod:`~spanfold.instrumentation.frameworks.smolagents_model`: smolagents re-sends earlier tool calls and outputs
  as text, which the step's inputs turn back into tool calls and outputs).
* ``ToolCallingAgent.process_tool_calls`` (the calls the model asked for, with their ids, and what each run
  observed) and ``ToolCallingAgent.execute_tool_call``: each tool run (``final_answer`` and managed agents too) an
  ``execute_tool {name}`` span with the model's call id, the arguments, the output the agent sends the model, or the
  error (re-raised unchanged: smolagents shows it to the model and goes on).

* ``CodeAgent._step_stream``: a ``CodeAgent``'s action is Python code the model writes, which smolagents parses from
  the text and runs as a ``python_interpreter`` tool call (id ``call_<n>``): the step's output holds that call
  (``{"code": ...}``) after the model's text, and the code's run is its ``execute_tool python_interpreter`` span
  (the observation smolagents sends the model, or the error).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Span, Tracer

from spanfold import counters, semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks import smolagents_model
from spanfold.instrumentation.frameworks.agent_runs import ContextRun, open_run
from spanfold.instrumentation.frameworks.smolagents_messages import Observations
from spanfold.instrumentation.frameworks.smolagents_model import StepSpan
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.messages import dumps
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor
from spanfold.instrumentation.toolkit.streams import Transparent
from spanfold.instrumentation.toolkit.tools import (
    end_tool_span,
    fail_tool_span,
    framework_tool_run,
    framework_tool_run_end,
    start_tool_span,
)

SUPPORTED = "smolagents >= 1.26, < 2"
AGENTS = "smolagents.agents"
MODELS = "smolagents.models"
#: The model classes whose ``generate`` / ``generate_stream`` are patched (subclasses inherit them).
MODEL_CLASSES = (
    "OpenAIModel",
    "LiteLLMModel",
    "InferenceClientModel",
    "TransformersModel",
    "VLLMModel",
    "MLXModel",
    "AmazonBedrockModel",
)

#: The agent whose run is current (its :class:`_AgentState`), set in the context its steps run in.
_AGENT_KEY = otel_context.create_key("spanfold.smolagents.agent")


class _AgentState:
    """Per agent object: the tool calls asked for and not yet run (their ids), what each run observed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending: list[Any] = []  # smolagents ToolCall objects
        self.observations = Observations()

    def asked(self, call: Any) -> None:
        with self.lock:
            self.pending.append(call)
            ids = [c.id for c in self.pending if isinstance(getattr(c, "id", None), str)]
        self.observations.batch(ids)

    def claim(self, name: Any, arguments: Any) -> Any:
        """The id of the pending call ``execute_tool_call(name, arguments)`` runs: the call whose arguments object
        it was given, else the first of that name with equal arguments; None when none is pending."""
        with self.lock:
            found = next((c for c in self.pending if c.arguments is arguments), None)
            if found is None:
                found = next((c for c in self.pending if c.name == name and c.arguments == arguments), None)
            if found is None:
                return None
            self.pending.remove(found)
            return found.id

    def done(self) -> None:
        with self.lock:
            self.pending.clear()


_STATES: weakref.WeakKeyDictionary[Any, _AgentState] = weakref.WeakKeyDictionary()
_STATES_LOCK = threading.Lock()


def _state(agent: Any) -> _AgentState:
    with _STATES_LOCK:
        state = _STATES.get(agent)
        if state is None:
            state = _STATES[agent] = _AgentState()
        return state


def _observations() -> Observations | None:
    state = otel_context.get_value(_AGENT_KEY)
    return state.observations if isinstance(state, _AgentState) else None


# --- runs --------------------------------------------------------------------------------------------------------


def _in_other_run() -> bool:
    """An ``invoke_agent`` span is current that is no run of this instrumentor (``spanfold.agent``, another
    producer's): the user named the run."""
    span = otel_trace.get_current_span()
    attributes = getattr(span, "attributes", None)
    if not isinstance(attributes, Mapping) or attributes.get(semconv.OPERATION_NAME) != semconv.OP_INVOKE_AGENT:
        return False
    return bool(attributes.get(semconv.AGENT_NAME)) and otel_context.get_value(_AGENT_KEY) is None


def agent_name(agent: Any) -> str:
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else type(agent).__name__


class UntracedRun(Transparent):
    """The generator of a run that opens no span (inside another agent run): each step run knowing its agent."""

    def __init__(self, wrapped: Any, context: otel_context.Context) -> None:
        super().__init__(wrapped)
        self._self_context = context

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        token = otel_context.attach(self._self_context)
        try:
            return self.__wrapped__.__next__()
        finally:
            otel_context.detach(token)


def run_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            context = otel_context.set_value(_AGENT_KEY, _state(instance))
            opened = (
                None
                if _in_other_run()
                else open_run(tracer, rt, agent_name(instance), "smolagents.run", context=context)
            )
        except Exception as exc:
            counters.fault("smolagents.run_start", exc)
            return wrapped(*args, **kwargs)
        stream = wrapped(*args, **kwargs)  # a generator: nothing of the run has happened yet
        return ContextRun(stream, *opened) if opened is not None else UntracedRun(stream, context)

    return wrapper


# --- tool runs ---------------------------------------------------------------------------------------------------


class _NotedCalls(Transparent):
    """``process_tool_calls``' generator: the calls it yields are pending until run; the outputs it yields are what
    each run observed."""

    def __init__(self, wrapped: Any, state: _AgentState) -> None:
        super().__init__(wrapped)
        self._self_agent = state

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        try:
            item = self.__wrapped__.__next__()
        except BaseException:
            self._self_agent.done()
            raise
        try:
            kind = type(item).__name__
            if kind == "ToolCall":
                self._self_agent.asked(item)
            elif kind == "ToolOutput":
                self._self_agent.observations.add(item.id, item.observation)
        except Exception as exc:
            counters.fault("smolagents.tool_calls", exc)
        return item


def process_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        calls = wrapped(*args, **kwargs)
        try:
            return _NotedCalls(calls, _state(instance))
        except Exception as exc:
            counters.fault("smolagents.tool_calls", exc)
            return calls

    return wrapper


def observed(result: Any) -> str:
    """What the agent sends the model as a tool's output (``ToolCallingAgent.process_tool_calls``)."""
    kind = type(result).__name__
    if kind == "AgentImage":
        return "Stored 'image.png' in memory."
    if kind == "AgentAudio":
        return "Stored 'audio.mp3' in memory."
    return str(result).strip()


def _start_tool(
    tracer: Tracer, rt: Runtime, agent: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Span | None, Any]:
    """The span of ``execute_tool_call(tool_name, arguments)`` and the token of the ``@spanfold.tool`` function the
    tool runs (which makes no span of its own)."""
    try:
        name = args[0] if args else kwargs.get("tool_name")
        arguments = args[1] if len(args) > 1 else kwargs.get("arguments")
        tool = {**getattr(agent, "tools", {}), **getattr(agent, "managed_agents", {})}.get(name)
        description = getattr(tool, "description", None)
        lines = description.strip().splitlines() if isinstance(description, str) else []
        span = start_tool_span(
            tracer,
            str(name),
            rt,
            call_id=_state(agent).claim(name, arguments),
            arguments=dumps(arguments) if rt.capture_content else None,
            attributes={semconv.TOOL_DESCRIPTION: lines[0]} if lines else None,
            argument_values=arguments,
        )
        return span, framework_tool_run(getattr(tool, "forward", None))
    except Exception as exc:
        counters.fault("smolagents.tool_start", exc)
        return None, None


def execute_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        span, token = _start_tool(tracer, rt, instance, args, kwargs)
        if span is None:
            return wrapped(*args, **kwargs)
        with otel_trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
            try:
                result = wrapped(*args, **kwargs)
            except BaseException as exc:
                fail_tool_span(span, exc, rt)
                raise
            finally:
                framework_tool_run_end(token)
        try:
            text = observed(result)
        except Exception as exc:
            counters.fault("smolagents.tool_result", exc)
            text = None
        end_tool_span(span, text, rt)
        return result

    return wrapper


# --- CodeAgent steps ----------------------------------------------------------------------------------------------

#: The :class:`CodeStep` running now, set in the context a ``CodeAgent`` step runs in.
_STEP_KEY = otel_context.create_key("spanfold.smolagents.code_step")
INTERPRETER = "python_interpreter"


class CodeStep:
    """One ``CodeAgent`` step: its model call's span, held until smolagents has parsed the code action from the
    model's text (the action then joins the step's output as a ``python_interpreter`` tool call), and the action's
    run as that call's ``execute_tool`` span."""

    def __init__(self, tracer: Tracer, rt: Runtime, memory_step: Any, agent: _AgentState) -> None:
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
        try:
            output = span.output
            text = getattr(self.memory_step, "model_output", None)
            if output is not None and isinstance(text, str):
                output.text = text  # as smolagents keeps it (and re-sends it): its closing code tag added back
            if output is not None and action is not None:
                output.calls.append((action.id, INTERPRETER, {"code": action.arguments}))
        except Exception as exc:
            counters.fault("smolagents.code_action", exc)
        span.release()

    def item(self, item: Any) -> None:
        """What the step yielded: its action (the tool run starts), its output (the run ends)."""
        kind = type(item).__name__
        if kind == "ToolCall" and getattr(item, "name", None) == INTERPRETER:
            self.release(item)
            self.call_id = item.id
            code = item.arguments
            self.tool = start_tool_span(
                self.tracer,
                INTERPRETER,
                self.rt,
                call_id=item.id,
                arguments=dumps({"code": code}) if self.rt.capture_content else None,
            )
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


class CodeStepRun(Transparent):
    """``CodeAgent._step_stream``'s generator: each part of the step run knowing the step (and with the action's
    tool span current while it runs)."""

    def __init__(self, wrapped: Any, step: CodeStep) -> None:
        super().__init__(wrapped)
        self._self_step = step

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        step = self._self_step
        token = otel_context.attach(step.context(otel_context.get_current()))
        try:
            item = self.__wrapped__.__next__()
        except StopIteration:
            step.end()
            raise
        except BaseException as exc:
            step.end(exc)
            raise
        finally:
            otel_context.detach(token)
        try:
            step.item(item)
        except Exception as exc:
            counters.fault("smolagents.code_step", exc)
        return item

    def close(self) -> Any:
        try:
            return self.__wrapped__.close()
        finally:
            self._self_step.end()


def code_step_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        stream = wrapped(*args, **kwargs)
        try:
            memory_step = args[0] if args else kwargs.get("memory_step")
            return CodeStepRun(stream, CodeStep(tracer, rt, memory_step, _state(instance)))
        except Exception as exc:
            counters.fault("smolagents.code_step", exc)
            return stream

    return wrapper


def _holder() -> CodeStep | None:
    step = otel_context.get_value(_STEP_KEY)
    return step if isinstance(step, CodeStep) and step.model is None and step.tool is None else None


# --- the instrumentor --------------------------------------------------------------------------------------------

_GENERATE, _GENERATE_STREAM = smolagents_model.wrappers(_observations, _holder)

PATCHES = (
    Patch(AGENTS, "MultiStepAgent._run_stream", run_wrapper),
    Patch(AGENTS, "ToolCallingAgent.process_tool_calls", process_wrapper),
    Patch(AGENTS, "ToolCallingAgent.execute_tool_call", execute_wrapper),
    Patch(AGENTS, "CodeAgent._step_stream", code_step_wrapper),
    *(Patch(MODELS, f"{cls}.generate", _GENERATE) for cls in MODEL_CLASSES),
    *(Patch(MODELS, f"{cls}.generate_stream", _GENERATE_STREAM) for cls in MODEL_CLASSES),
)


class SmolagentsInstrumentor(TableInstrumentor):
    """smolagents runs, model steps and tool runs."""

    library = "smolagents"

    dependencies = (SUPPORTED,)

    def patches(self, rt: Runtime) -> Sequence[Patch]:
        return PATCHES

"""smolagents agent runs and ``ToolCallingAgent`` tool runs (see the package's doc), and the per-agent state the
model steps read (what each tool run observed)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Tracer

from spanfold import counters, semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks.smolagents.text_protocol import Observations
from spanfold.instrumentation.invocations import tool_runs
from spanfold.instrumentation.invocations.agent_runs import ContextRun, open_run
from spanfold.instrumentation.invocations.tool_runs import ToolRun
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.streams import Transparent

#: The agent whose run is current (its :class:`AgentState`), set in the context its steps run in.
_AGENT_KEY = otel_context.create_key("spanfold.smolagents.agent")


class AgentState:
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


_STATES: weakref.WeakKeyDictionary[Any, AgentState] = weakref.WeakKeyDictionary()
_STATES_LOCK = threading.Lock()


def state_of(agent: Any) -> AgentState:
    with _STATES_LOCK:
        state = _STATES.get(agent)
        if state is None:
            state = _STATES[agent] = AgentState()
        return state


def observations() -> Observations | None:
    state = otel_context.get_value(_AGENT_KEY)
    return state.observations if isinstance(state, AgentState) else None


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
            context = otel_context.set_value(_AGENT_KEY, state_of(instance))
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

    def __init__(self, wrapped: Any, state: AgentState) -> None:
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
            return _NotedCalls(calls, state_of(instance))
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


def _tool_run(agent: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> ToolRun:
    """``execute_tool_call(tool_name, arguments)``: a tool or a managed agent, with the call id the agent's step
    asked it by."""
    name = args[0] if args else kwargs.get("tool_name")
    arguments = args[1] if len(args) > 1 else kwargs.get("arguments")
    tool = {**getattr(agent, "tools", {}), **getattr(agent, "managed_agents", {})}.get(name)
    return ToolRun(
        str(name),
        call_id=state_of(agent).claim(name, arguments),
        arguments=arguments,
        description=getattr(tool, "description", None),
        functions=(getattr(tool, "forward", None),),
    )


def execute_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return tool_runs.run(
            tracer, rt, "smolagents", lambda: _tool_run(instance, args, kwargs), lambda: wrapped(*args, **kwargs),
            observed,
        )  # fmt: skip

    return wrapper

"""smolagents agent runs and ``ToolCallingAgent`` tool runs (see the package's doc), and the per-agent state the
model steps read (what each tool run observed)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from functools import partial
from typing import Any

from opentelemetry.trace import Tracer

from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks.smolagents.text_protocol import Observations
from spanfold.instrumentation.invocations import tool_runs
from spanfold.instrumentation.invocations.agent_runs import AgentRuns
from spanfold.instrumentation.invocations.tool_runs import ToolRun
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.watched import Watched


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

    def done(self, error: BaseException | None = None) -> None:
        """The step's tool calls ended: none is pending any more."""
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


#: The runs: a managed agent's run nests in its manager's; the context holds the running agent's state.
RUNS = AgentRuns("smolagents", held=state_of)


def observations() -> Observations | None:
    state = RUNS.current()
    return state.observations if isinstance(state, AgentState) else None


# --- tool runs ---------------------------------------------------------------------------------------------------


def _noted(state: AgentState, item: Any) -> None:
    """What ``process_tool_calls`` yields: a call is pending until run; an output is what its run observed."""
    kind = type(item).__name__
    if kind == "ToolCall":
        state.asked(item)
    elif kind == "ToolOutput":
        state.observations.add(item.id, item.observation)


def process_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        state = state_of(instance)
        return Watched(wrapped(*args, **kwargs), "smolagents.tool_calls", None, partial(_noted, state), state.done)

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

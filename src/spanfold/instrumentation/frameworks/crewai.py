"""CrewAI: a crew's kickoff is one trace, rooted at ``invoke_agent {crew name}``, each agent's task run an
``invoke_agent {role}`` span in it, with every native tool run.

Supported: ``crewai`` >= 1.15, < 2 (tested with 1.15.30, in a venv of its own: CrewAI pins ``openai < 3``,
``mcp < 2`` and ``pydantic < 2.13``, which the main test environment is past). Patched, once on the classes:

* ``Crew.kickoff`` / ``kickoff_async`` / ``akickoff``: the crew's run, named after the crew (``name=``, ``crew`` by
  default), current while it runs (``kickoff_async`` runs ``kickoff`` in a thread: one span, not two).
* ``Agent.execute_task`` / ``aexecute_task`` (a task run by its agent in a crew) and ``Agent.kickoff`` /
  ``kickoff_async`` / ``akickoff`` (an agent on its own): an ``invoke_agent {role}`` span, so each agent's steps are
  a thread of their own, under its role.
* ``AgentExecutor._execute_single_native_tool_call``: each tool call the model made through native function calling
  is an ``execute_tool {tool}`` span with the model's call id, the arguments and the result the agent sends the model;
  a failure CrewAI records (an exception the tool raised, a ``ToolFailure``, an unknown tool, a usage limit) is the
  span's error (``error.type`` ``tool_error``, the text the model is sent), an exception it raises (a hook's abort)
  is recorded and raised unchanged.

The model calls are the provider patches' (CrewAI's native OpenAI provider calls the openai SDK; LiteLLM routes are
the litellm patch's): one step each, under the agent's span. A run inside ``spanfold.agent`` (or another producer's
current ``invoke_agent`` span) opens no crew or agent span of its own.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry.trace import Tracer

from spanfold.content.runtime import Runtime
from spanfold.instrumentation.invocations import tool_runs
from spanfold.instrumentation.invocations.agent_runs import AgentRuns
from spanfold.instrumentation.invocations.tool_runs import Answered, ToolRun
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor
from spanfold.semconv.parts import parse_json_arguments

SUPPORTED = "crewai >= 1.15, < 2"

#: A crew's kickoff is one run named after the crew, an agent's (alone, or a crew's member: nested) after its role.
RUNS = AgentRuns("crewai")


def _named(attribute: str, default: str) -> Callable[[Any], str]:
    def name(instance: Any) -> str:
        value = getattr(instance, attribute, None)
        return value if isinstance(value, str) and value else default

    return name


def _call(tool_call: Any) -> tuple[str | None, str, Any]:
    """(the model's call id, the tool's name, its arguments) of a native tool call, as CrewAI reads it (an id CrewAI
    made up for a provider that gives none is no id)."""
    info = importlib.import_module("crewai.utilities.agent_utils").extract_tool_call_info(tool_call)
    if not info:
        return None, "unknown", None
    call_id, name, arguments = info
    made_up = call_id == f"call_{id(tool_call)}"
    return (None if made_up else str(call_id)), str(name), parse_json_arguments(arguments)


def _tool_run(args: tuple[Any, ...], kwargs: dict[str, Any]) -> ToolRun:
    call_id, name, arguments = _call(args[0] if args else kwargs.get("tool_call"))
    return ToolRun(name, call_id=call_id, arguments=arguments)


def _answered(outcome: Any) -> Any:
    """The executor's outcome: its ``result`` (an error when it records a ``tool_failure``)."""
    if not isinstance(outcome, Mapping):
        return None
    return Answered(outcome.get("result"), outcome.get("tool_failure") is not None)


def tool_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return tool_runs.run(
            tracer, rt, "crewai", lambda: _tool_run(args, kwargs), lambda: wrapped(*args, **kwargs), _answered
        )

    return wrapper


_CREW = RUNS.patch(_named("name", "crew"))
_AGENT = RUNS.patch(_named("role", "Agent"))

PATCHES = (
    *(Patch("crewai.crew", f"Crew.{name}", _CREW) for name in ("kickoff", "kickoff_async", "akickoff")),
    *(
        Patch("crewai.agent.core", f"Agent.{name}", _AGENT)
        for name in ("execute_task", "aexecute_task", "kickoff", "kickoff_async", "akickoff")
    ),
    Patch("crewai.agents.agent_executor", "AgentExecutor._execute_single_native_tool_call", tool_wrapper),
)


class CrewAIInstrumentor(TableInstrumentor):
    """CrewAI crews and agents as ``invoke_agent`` spans, native tool runs as ``execute_tool`` spans."""

    library = "crewai"

    dependencies = (SUPPORTED,)

    def patches(self, rt: Runtime) -> Sequence[Patch]:
        return PATCHES

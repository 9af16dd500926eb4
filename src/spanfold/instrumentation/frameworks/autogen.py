"""AutoGen AgentChat: a team's run is one trace, rooted at ``invoke_agent {team name}``, and every tool run an
``execute_tool`` span with its result.

Supported: ``autogen-agentchat`` >= 0.7, < 0.8 (tested with 0.7.5 and ``autogen-ext[openai]`` 0.7.5). AutoGen emits
spans of its own (scope ``autogen-core``, on the global ``TracerProvider``): ``invoke_agent {agent}`` for each agent's
run (``run`` / ``run_stream``, and each turn of an agent in a team), ``execute_tool {tool}`` with the tool's name,
description and the model's call id, but no arguments and no result. The model calls are the provider patches'
(``OpenAIChatCompletionClient`` calls the openai SDK). What AutoGen's spans lack, spanfold adds, patched once on the
classes:

* ``AssistantAgent._execute_tool_call``, each tool call of the model (a workbench's tool, an MCP tool, a handoff):
  an ``execute_tool {tool}`` span with the model's call id, the arguments the model gave and the result the agent
  sends the model, or the error AutoGen records (the tool raised, is unknown, its arguments are not JSON: the span's
  error, ``error.type`` ``tool_error``, the text the model is sent). AutoGen's own tool span nests under it and folds
  into it. An agent's default run ends on a tool's result (``reflect_on_tool_use`` off, one tool iteration): no
  model call is sent that result, so this span is the only place it is recorded.
* ``BaseGroupChat.run_stream`` (``run`` goes through it; ``RoundRobinGroupChat``, ``SelectorGroupChat``, ``Swarm``,
  ``MagenticOneGroupChat``): the team's ``invoke_agent`` span, named after the team (``name=``, its class by
  default), current while each step of the stream runs (the same async generator, proxied; the span ends when it is
  exhausted, fails, is closed or collected). The team's embedded runtime starts inside it, so every message the
  runtime delivers, each agent's ``invoke_agent`` turn and its model calls and tool runs are one trace; without it
  each turn is a trace of its own (AutoGen's runtime links its spans rather than parenting them). A team run inside
  ``spanfold.agent`` (or another producer's current ``invoke_agent`` span) opens none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.trace import Tracer

from spanfold.content.runtime import Runtime
from spanfold.instrumentation.invocations import tool_runs
from spanfold.instrumentation.invocations.agent_runs import AgentRuns
from spanfold.instrumentation.invocations.tool_runs import Answered, ToolRun
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor
from spanfold.semconv.parts import parse_json_arguments

SUPPORTED = "autogen-agentchat >= 0.7, < 0.8"

#: A team's ``run_stream`` (``run`` reads it) is one run, named after the team.
RUNS = AgentRuns("autogen")


def _tool_run(call: Any) -> ToolRun:
    """A ``FunctionCall``'s run (``id``, ``name``, ``arguments`` as the model gave them: JSON text)."""
    text = call.arguments if isinstance(call.arguments, str) else None
    return ToolRun(
        str(call.name),
        call_id=call.id or None,
        arguments=parse_json_arguments(text) if text is not None else None,
        arguments_text=text,
    )


def _answered(outcome: Any) -> Answered:
    """``(FunctionCall, FunctionExecutionResult)``: its ``content`` (the text the model is sent), an error when
    ``is_error``."""
    result = outcome[1]
    return Answered(result.content, bool(result.is_error))


def tool_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call = kwargs.get("tool_call", args[0] if args else None)
        return tool_runs.arun(
            tracer, rt, "autogen", lambda: _tool_run(call), lambda: wrapped(*args, **kwargs), _answered
        )

    return wrapper


PATCHES = (
    Patch("autogen_agentchat.teams._group_chat._base_group_chat", "BaseGroupChat.run_stream", RUNS.patch()),
    Patch("autogen_agentchat.agents._assistant_agent", "AssistantAgent._execute_tool_call", tool_wrapper),
)


class AutoGenInstrumentor(TableInstrumentor):
    """AutoGen AgentChat teams as ``invoke_agent`` spans, tool runs as ``execute_tool`` spans with their results."""

    library = "autogen_agentchat"

    dependencies = (SUPPORTED,)

    def patches(self, rt: Runtime) -> Sequence[Patch]:
        return PATCHES

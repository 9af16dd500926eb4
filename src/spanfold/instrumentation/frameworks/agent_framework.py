"""Microsoft Agent Framework (``agent-framework-core``): one trace per agent run, named after the agent, its tool
calls paired with their runs.

Agent Framework traces itself by the GenAI conventions: with its instrumentation on (its default; off with
``disable_instrumentation()`` or ``ENABLE_INSTRUMENTATION=false``), an agent's run is an ``invoke_agent {name}`` span,
each tool run an ``execute_tool {name}`` span with the model's call id, each model call a ``chat`` span. spanfold
folds those as they are and adds none of its own: the client's model calls, traced by spanfold's provider patch (with
their content, which Agent Framework records only with its sensitive-data switch on), nest under Agent Framework's
model spans and are one step with them (``fold.drop_nested_calls``). With its instrumentation off, spanfold makes the
run and tool spans: ``Agent.run`` (a coroutine; a streamed run's ``ResponseStream`` iterated in the run's context),
``Workflow.run`` (``invoke_workflow {name}``, its agents' runs nested) and ``FunctionTool.invoke`` (the call id, the
arguments, the text the model is sent). Agent Framework's own ``workflow.run`` span names no operation: the fold reads
it as the workflow's run (:mod:`spanfold.exporter.dialects.agent_framework`). Supported: ``agent-framework-core``
>= 1.23, < 2.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Final

from opentelemetry.trace import Tracer

from spanfold import semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.invocations import tool_runs
from spanfold.instrumentation.invocations.agent_runs import AgentRuns
from spanfold.instrumentation.invocations.tool_runs import ToolRun
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor

SUPPORTED: Final = "agent-framework-core >= 1.23, < 2"


def own_spans() -> bool:
    """Whether Agent Framework's own instrumentation is on now (it then traces its runs and tool runs itself)."""
    observability = sys.modules.get("agent_framework.observability")
    settings = getattr(observability, "OBSERVABILITY_SETTINGS", None)
    return bool(getattr(settings, "ENABLED", False))


#: An agent's run (``Agent.run``), named after the agent, and a workflow's (``Workflow.run``): its agents' runs nested.
RUNS: Final = AgentRuns("agent_framework", own_spans=own_spans)


def workflow_name(workflow: Any) -> str:
    name = getattr(workflow, "name", None)
    return name if isinstance(name, str) and name else "workflow"


def _tool_run(tool: Any, kwargs: dict[str, Any]) -> ToolRun | None:
    """``FunctionTool.invoke(arguments=..., tool_call_id=...)``'s run; None while Agent Framework traces it."""
    if own_spans():
        return None
    arguments = kwargs.get("arguments")
    dump = getattr(arguments, "model_dump", None)
    return ToolRun(
        str(tool.name),
        call_id=kwargs.get("tool_call_id"),
        arguments=dump() if callable(dump) else arguments,
        description=getattr(tool, "description", None),
        functions=(getattr(tool, "func", None),),
    )


def sent(result: Any) -> Any:
    """What the model is sent of a tool's result: the text of its ``Content`` items (Agent Framework parses a
    function's return value into them), else the result as it is."""
    if isinstance(result, list) and result and all(isinstance(getattr(c, "text", None), str) for c in result):
        return "".join(c.text for c in result)
    return result


def invoke_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        read = lambda: _tool_run(instance, kwargs)  # noqa: E731
        return await tool_runs.arun(tracer, rt, "agent_framework", read, lambda: wrapped(*args, **kwargs), sent)

    return wrapper


WORKFLOWS: Final = "agent_framework._workflows._workflow"
PATCHES: Final = (
    Patch("agent_framework._agents", "Agent.run", RUNS.patch()),
    Patch(WORKFLOWS, "Workflow.run", RUNS.patch(workflow_name, semconv.OP_INVOKE_WORKFLOW)),
    Patch("agent_framework._tools", "FunctionTool.invoke", invoke_wrapper),
)


class AgentFrameworkInstrumentor(TableInstrumentor, library="agent_framework", supported=SUPPORTED, table=PATCHES):
    """Agent Framework's agent runs and tool runs, while its own instrumentation is off."""

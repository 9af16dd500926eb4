"""LlamaIndex agents: an agent workflow run is one trace, rooted at ``invoke_agent {agent name}``, with every tool
run in it.

Supported: ``llama-index-core`` >= 0.14, < 0.15 (tested with 0.14.25 and ``llama-index-llms-openai`` 0.8.3, in a
venv of its own: the OpenAI LLM pins ``openai < 3``). Patched, once on the classes:

* ``BaseWorkflowAgent.run`` (``FunctionAgent``, ``ReActAgent``, ``CodeActAgent``) and ``AgentWorkflow.run``: the
  run's ``invoke_agent`` span, named after the agent (``name=``; an ``AgentWorkflow`` after its root agent), current
  while ``run()`` schedules the workflow, so every step task the workflow starts (each copies the context it is
  created in) runs under it; it ends when the run's result is in (the handler's result task is done), failed with
  the run's exception. Awaiting the handler and streaming its events (``handler.stream_events()``) are untouched.
* The ``call_tool`` step of both: each tool call is an ``execute_tool {tool}`` span with the model's call id
  (``tool_id``), the arguments and the tool's output; an output LlamaIndex marks as an error (the tool raised, or
  is unknown) is the span's error (``error.type`` ``tool_error``, the text the model is sent).

The model calls are the provider patches' (``OpenAI`` through the openai SDK): one step each, under the run. In an
``AgentWorkflow`` the agents share one memory (a handoff re-sends the whole conversation), so the run is one thread:
its events carry the root agent's name. A run inside ``spanfold.agent`` (or another producer's current
``invoke_agent`` span) opens none.

Retrievers (``BaseRetriever.retrieve`` / ``aretrieve``, a query engine's too) are ``retrieval {store}`` spans and node
postprocessors (``postprocess_nodes``) reranks: :mod:`.retrievers.llama_index`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.trace import Tracer

from spanfold import counters
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks.retrievers import llama_index as retrievers
from spanfold.instrumentation.invocations import tool_runs
from spanfold.instrumentation.invocations.agent_runs import called_in, in_agent_run, open_run
from spanfold.instrumentation.invocations.tool_runs import Answered, ToolRun
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor
from spanfold.instrumentation.toolkit.streams import StreamState

SUPPORTED = "llama-index-core >= 0.14, < 0.15"
AGENT = "llama_index.core.agent.workflow.base_agent"
WORKFLOW = "llama_index.core.agent.workflow.multi_agent_workflow"


def _name(workflow: Any) -> str:
    name = getattr(workflow, "root_agent", None) or getattr(workflow, "name", None)
    return name if isinstance(name, str) and name else type(workflow).__name__


def _end_with(handler: Any, state: StreamState) -> None:
    """End the run's span when the handler's result is in (its result task done), failed with its exception."""

    def done(task: Any) -> None:
        try:
            error = None if task.cancelled() else task.exception()
        except BaseException as exc:  # cancelled in between
            error = exc
        state.finish(error)

    task = getattr(handler, "_result_task", None)
    if task is None or not hasattr(task, "add_done_callback"):
        counters.incr("llama_index.run_unfollowed")
        state.finish()
        return
    task.add_done_callback(done)


def run_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        opened = None
        try:
            if not in_agent_run():
                opened = open_run(tracer, rt, _name(instance), "llama_index.run")
        except Exception as exc:
            counters.fault("llama_index.run_start", exc)
        if opened is None:
            return wrapped(*args, **kwargs)
        state, context = opened
        handler = called_in(context, state, wrapped, args, kwargs)
        try:
            _end_with(handler, state)
        except Exception as exc:
            counters.fault("llama_index.run_end", exc)
            state.finish()
        return handler

    return wrapper


def _tool_run(args: tuple[Any, ...], kwargs: dict[str, Any]) -> ToolRun:
    """``call_tool(ctx, ev)``: ``ev`` is the ``ToolCall`` event (``tool_name``, ``tool_kwargs``, ``tool_id``)."""
    event = args[1] if len(args) > 1 else kwargs.get("ev")
    return ToolRun(
        str(getattr(event, "tool_name", None)),
        call_id=getattr(event, "tool_id", None),
        arguments=getattr(event, "tool_kwargs", None) or {},
    )


def _answered(result: Any) -> Answered:
    """The ``ToolCallResult`` event: its output's content (an error when ``is_error``)."""
    output = getattr(result, "tool_output", None)
    return Answered(getattr(output, "content", None), bool(getattr(output, "is_error", False)))


def tool_wrapper(tracer: Tracer, rt: Runtime) -> Wrapper:
    async def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return await tool_runs.arun(
            tracer, rt, "llama_index", lambda: _tool_run(args, kwargs), lambda: wrapped(*args, **kwargs), _answered
        )

    return wrapper


PATCHES = (
    Patch(AGENT, "BaseWorkflowAgent.run", run_wrapper),
    Patch(WORKFLOW, "AgentWorkflow.run", run_wrapper),
    Patch(AGENT, "BaseWorkflowAgent.call_tool", tool_wrapper),
    Patch(WORKFLOW, "AgentWorkflow.call_tool", tool_wrapper),
)


class LlamaIndexInstrumentor(TableInstrumentor):
    """LlamaIndex agent workflow runs as ``invoke_agent`` spans, tool calls as ``execute_tool`` spans, retrievers and
    node postprocessors as ``retrieval`` spans (:mod:`.retrievers.llama_index`)."""

    library = "llama_index.core"

    dependencies = (SUPPORTED,)

    def patches(self, rt: Runtime) -> Sequence[Patch]:
        return (*PATCHES, *retrievers.PATCHES)

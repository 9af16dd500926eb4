"""LangGraph graph runs: a graph run is the root of its trace, an ``invoke_agent`` span for an agent (a prebuilt
ReAct agent, ``langchain.agents.create_agent``: a model drives the control flow through tool calls), an
``invoke_workflow`` span for any other graph (a ``StateGraph``: the application's edges drive it).

Supported: ``langgraph`` >= 1.0, < 2 (tested with 1.2). ``invoke`` runs ``stream`` and ``ainvoke`` runs ``astream``
(``stream_events`` too), so those two are patched, once on ``Pregel`` (every compiled graph, prebuilt agents and the
functional API's entrypoints). Both are generator functions: the user gets a proxy of the very generator, which
makes the run's span current while each step runs (so the model calls and tool runs inside nest under it, in one
trace) and ends it when the stream is exhausted, fails, is closed, or is garbage-collected unfinished.

The span opens only when no agent run is open already: a subgraph, a graph run from a tool of another graph, or a
run inside ``spanfold.agent`` (or any invocation span that is current) opens no second root. Its name is the
run's ``run_name`` (config), else the graph's name (``create_react_agent(..., name=...)``): the agent's
``gen_ai.agent.name``, the workflow's ``gen_ai.workflow.name``, but not LangGraph's default name (``LangGraph``, a
type's name, which the conventions keep out of ``gen_ai.workflow.name``: such a workflow's span is a bare
``invoke_workflow``). A run with a checkpointer thread (``config={"configurable": {"thread_id": ...}}``) records it
as ``gen_ai.conversation.id``: the runs of one thread are one conversation in a backend that groups by it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import SpanKind, Tracer

from spanfold import counters, semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.invocations.agent_runs import AsyncContextRun, ContextRun, called_in
from spanfold.instrumentation.toolkit import shown
from spanfold.instrumentation.toolkit.calls import Wrapper
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor
from spanfold.instrumentation.toolkit.spans import ModelSpan
from spanfold.instrumentation.toolkit.streams import StreamState
from spanfold.instrumentation.toolkit.tool_spans import in_invocation

SUPPORTED = "langgraph >= 1.0, < 2"
MODULE = "langgraph.pregel.main"

#: Set in the context a graph run's steps run in: a graph run inside it is a subgraph (or a nested agent).
_RUN_KEY = otel_context.create_key("spanfold.langgraph.run")


class _NoChunks:
    """The run's chunks are the graph's state updates: nothing of them goes into the span. When the run ends its span
    gets the run's question and answer, from the model calls made in it."""

    def __init__(self, run: shown.Shown) -> None:
        self.run = run

    def add(self, chunk: Any) -> None:
        pass

    def attributes(self) -> Mapping[str, Any]:
        return self.run.attributes()


#: LangGraph's name of a graph given none (a type's name, not the application's name of a workflow).
DEFAULT_NAME = "LangGraph"
#: The nodes of the prebuilt agents' graphs: ``create_react_agent`` (``agent`` + ``tools``) and
#: ``langchain.agents.create_agent`` (``model`` + ``tools``): a model that calls tools until it answers.
_AGENT_NODES = (frozenset({"agent", "tools"}), frozenset({"model", "tools"}))


def _nested() -> bool:
    """True when a run is open here already (this graph's parent graph, ``spanfold.agent``, or any other producer's
    invocation span that is current)."""
    return bool(otel_context.get_value(_RUN_KEY)) or in_invocation()


def _is_agent(graph: Any) -> bool:
    """Whether the graph is a prebuilt agent (its nodes are an agent's model-and-tools loop)."""
    nodes = getattr(graph, "nodes", None)
    names = frozenset(nodes) if isinstance(nodes, Mapping) else frozenset()
    return any(agent <= names for agent in _AGENT_NODES)


def _config(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Mapping[str, Any]:
    config = args[1] if len(args) > 1 else kwargs.get("config")
    return config if isinstance(config, Mapping) else {}


def _thread_id(config: Mapping[str, Any]) -> str | None:
    """The checkpointer's ``thread_id`` (``config["configurable"]``): the conversation the run belongs to."""
    configurable = config.get("configurable")
    thread = configurable.get("thread_id") if isinstance(configurable, Mapping) else None
    return str(thread) if isinstance(thread, (str, int)) and str(thread) else None


def _name(graph: Any, config: Mapping[str, Any]) -> str:
    run_name = config.get("run_name")
    if isinstance(run_name, str) and run_name:
        return run_name
    name = graph.get_name() if hasattr(graph, "get_name") else None
    return str(name or type(graph).__name__)


def _open(
    tracer: Tracer, rt: Runtime, graph: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[StreamState, otel_context.Context] | None:
    """The run's span and the context its steps run in; None when nested (or after a fault, counted)."""
    try:
        if _nested():
            return None
        config = _config(args, kwargs)
        name = _name(graph, config)
        attrs: dict[str, Any] = {
            semconv.CONVERSATION_ID: _thread_id(config),  # None (dropped) without a checkpointer thread
            semconv.INVOCATION_IS_NESTED: False,
        }
        target: str | None
        if _is_agent(graph):
            operation, target = semconv.OP_INVOKE_AGENT, name
            attrs[semconv.AGENT_NAME] = name
        else:
            operation, target = semconv.OP_INVOKE_WORKFLOW, (name if name != DEFAULT_NAME else None)
            attrs[semconv.WORKFLOW_NAME] = target
        attrs[semconv.OPERATION_NAME] = operation
        span_name = semconv.span_name(operation, target)
        run = ModelSpan(tracer, span_name, attrs, kind=SpanKind.INTERNAL, rt=rt)
        context, io = shown.open_run(otel_context.set_value(_RUN_KEY, True, otel_trace.set_span_in_context(run.span)))
        return StreamState(run, _NoChunks(io), "langgraph"), context
    except Exception as exc:
        counters.fault("langgraph.start", exc)
        return None


def _wrapper(proxy: type[ContextRun | AsyncContextRun]) -> Callable[[Tracer, Runtime], Wrapper]:
    def factory(tracer: Tracer, rt: Runtime) -> Wrapper:
        def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            opened = _open(tracer, rt, instance, args, kwargs)
            if opened is None:
                return wrapped(*args, **kwargs)
            state, context = opened
            stream = called_in(context, state, wrapped, args, kwargs)  # a subclass's stream not a generator runs now
            return proxy(stream, state, context)

        return wrapper

    return factory


PATCHES = (
    Patch(MODULE, "Pregel.stream", _wrapper(ContextRun)),  # each step with the graph's span current
    Patch(MODULE, "Pregel.astream", _wrapper(AsyncContextRun)),
)


class LangGraphInstrumentor(TableInstrumentor):
    """LangGraph graph runs as ``invoke_agent`` spans."""

    library = "langgraph.pregel"

    dependencies = (SUPPORTED,)

    def patches(self, rt: Runtime) -> Sequence[Patch]:
        return PATCHES

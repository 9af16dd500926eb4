"""The OpenAI Agents SDK's traces and spans as OTel GenAI spans: the body of spanfold's tracing processor.

The SDK tells its processors, synchronously and in the task that runs the agent, when a trace or span starts and
ends. This maps:

* a trace (one ``Runner.run`` / ``run_sync`` / ``run_streamed``, or the user's ``agents.trace(...)``) -> the root
  ``handle_conversation_turn {agent}`` span (the framework steers the turn; its agents may hand off to each other),
  named after the first agent that runs in it (the starting agent, ``gen_ai.agent.name``), with
  ``gen_ai.invocation.is_nested`` false (true inside another invocation of this process), ``openai_agents.workflow.
  name`` and ``openai_agents.trace.id``, and ``gen_ai.conversation.id`` only when the application names the
  conversation: the trace's ``group_id`` (``RunConfig(group_id=...)``, ``agents.trace(..., group_id=...)``); never
  the trace id, which names one run, not a conversation;
* an agent span -> a child ``invoke_agent {agent}`` of the turn (``gen_ai.invocation.is_nested`` true), the first
  agent's and each agent's it hands off to, all with the run's ``openai_agents.trace.id`` (and conversation id, when
  there is one), by which the fold knows them for agents of the turn: the turn is one conversation, the next agent
  being sent the history so far. An error the
  SDK records on one (max turns, a tripwire: the run raises) is the turn's error too. An agent run as a tool
  (``Agent.as_tool``) is a child of that tool's span, a conversation of its own;
* a function span -> ``execute_tool {tool}`` (arguments and result as the SDK recorded them, content capture and
  redaction through the runtime; the SDK's error record -> status ERROR, ``error.type`` = ``tool_error``);
* a handoff span -> ``execute_tool {transfer tool}`` under the agent that hands off: the handoff is the tool the
  model called (``transfer_to_<agent>``, the SDK's name for it), with ``openai_agents.handoff.from_agent`` and
  ``.to_agent``; the fold pairs it with the model's call, its result (the transfer message) from the next call;
* a guardrail span -> a span event ``openai_agents.guardrail`` (name, triggered) on the running agent's span;
* generation / response spans -> nothing: the openai patch records each model call, and because the agent and tool
  spans are made current in the agent's context (attached at start, detached at end), those model spans, MCP calls
  and ``@spanfold.tool`` runs nest under them in the same OTel trace.

Every callback is fault-proof (a fault is counted, the agent runs on). Memory holds the spans still open, per trace;
a trace's end closes whatever of it is left open.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Span, SpanKind, Tracer

from spanfold import counters, semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit import shown
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.spans import clean, end_span, set_failure
from spanfold.instrumentation.toolkit.tool_spans import end_tool_span, in_invocation, start_tool_span

#: SDK traces open at once (a trace started and never finished is closed when this many newer ones are open).
MAX_OPEN_RUNS = 10_000

#: ``error.type`` of an agent span the SDK recorded an error on (max turns, a guardrail tripwire ...).
AGENT_ERROR = "agent_error"
#: The name of a handoff's span until the SDK says whom it hands off to (when it ends).
HANDOFF = "handoff"


def transfer_tool(to_agent: str) -> str:
    """The name of the tool the model calls to hand off to ``to_agent``: the SDK's default handoff tool name."""
    try:
        from types import SimpleNamespace

        from agents.handoffs import Handoff

        return str(Handoff.default_tool_name(SimpleNamespace(name=to_agent)))  # type: ignore[arg-type]
    except Exception as exc:  # an SDK without the helper: its rule (transfer_to_<name>, as a function name)
        counters.fault("openai_agents.handoff_name", exc)
        return re.sub(r"[^a-zA-Z0-9_]", "_", re.sub(r"\s", "_", f"transfer_to_{to_agent}")).lower()


@dataclass(slots=True)
class _Open:
    """An OTel span opened for an SDK span (or trace), and the context token that made it current (None: not ours
    to detach)."""

    span: Span
    token: object | None
    kind: str
    #: An agent run as a tool (``Agent.as_tool``): a conversation of its own, its error not the turn's.
    in_tool: bool = False


@dataclass(slots=True)
class _Run:
    """One SDK trace: its root span, the SDK spans open in it, and the agent spans running, innermost last."""

    root: _Open
    trace_id: str
    #: The trace's ``group_id``: the application's name of the conversation (None: it names none).
    conversation_id: str | None
    #: The run's question and answer, told by the model calls made in its context.
    io: shown.Shown | None = None
    named: bool = False
    spans: dict[str, _Open] = field(default_factory=dict)
    agents: list[Span] = field(default_factory=list)


def _attach(span: Span) -> object:
    return otel_context.attach(otel_trace.set_span_in_context(span))


def _detach(opened: _Open) -> None:
    """Undo the attach, when this is the context it was made in (the SDK finishes a span where it started it; a span
    abandoned in another context leaves that context's copy alone)."""
    if opened.token is not None and otel_trace.get_current_span() is opened.span:
        otel_context.detach(opened.token)  # type: ignore[arg-type]


def _error_text(error: Any) -> str:
    """The SDK's ``SpanError`` (``{"message", "data"}``) as one line: the message, and the error the data carries."""
    message = str(error.get("message") or "") if isinstance(error, dict) else str(error)
    data = error.get("data") if isinstance(error, dict) else None
    detail = data.get("error") if isinstance(data, dict) else None
    return f"{message}: {detail}" if detail else message


def _output_text(output: Any) -> Any:
    """A tool's output as the model reads it: text outputs (``ToolOutputText``, an MCP tool's text blocks) as their
    text, anything else as it is (recorded as JSON)."""
    items = output if isinstance(output, list) else [output]
    texts = [m.get(item, "text") for item in items if m.get(item, "type") == "text"]
    if items and len(texts) == len(items) and all(isinstance(t, str) for t in texts):
        return "\n".join(texts)
    return output


class AgentsTracing:
    """The processor's behaviour (the SDK's ``TracingProcessor`` methods); inert until :meth:`enable`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, _Run] = {}
        self._tracer: Tracer | None = None
        self._rt = Runtime()

    def enable(self, tracer: Tracer, rt: Runtime) -> None:
        self._tracer, self._rt = tracer, rt

    def disable(self) -> None:
        self._tracer = None

    # --- traces ------------------------------------------------------------------------------------------

    def on_trace_start(self, trace: Any) -> None:
        tracer = self._tracer
        if tracer is None:
            return
        try:
            workflow = str(getattr(trace, "name", "") or "")
            group = getattr(trace, "group_id", None)
            conversation = group if isinstance(group, str) and group else None
            attrs = {
                semconv.OPERATION_NAME: semconv.OP_HANDLE_CONVERSATION_TURN,
                semconv.INVOCATION_IS_NESTED: in_invocation(),
                semconv.CONVERSATION_ID: conversation,
                semconv.OPENAI_AGENTS_TRACE_ID: trace.trace_id,
                semconv.OPENAI_AGENTS_WORKFLOW_NAME: workflow or None,
            }
            span = tracer.start_span(
                semconv.span_name(semconv.OP_HANDLE_CONVERSATION_TURN, None),
                kind=SpanKind.INTERNAL,
                attributes=clean(attrs),
            )
            context, io = shown.open_run(otel_trace.set_span_in_context(span))
            opened = _Open(span, otel_context.attach(context), "trace")
            with self._lock:
                self._runs[trace.trace_id] = _Run(opened, trace.trace_id, conversation, io)
                stale = next(iter(self._runs.values())) if len(self._runs) > MAX_OPEN_RUNS else None
            if stale is not None:
                counters.incr("openai_agents.runs_never_finished")
                self._close(stale.trace_id)
        except Exception as exc:
            counters.fault("openai_agents.trace_start", exc)

    def on_trace_end(self, trace: Any) -> None:
        self._close(getattr(trace, "trace_id", None))

    def _close(self, trace_id: Any) -> None:
        with self._lock:
            run = self._runs.pop(trace_id, None)
        if run is None:
            return
        try:
            for opened in reversed(list(run.spans.values())):  # spans the SDK never finished
                end_span(opened.span)
            _detach(run.root)
            shown.close_run(run.root.span, run.io)
        except Exception as exc:
            counters.fault("openai_agents.trace_end", exc)
        end_span(run.root.span)

    # --- spans -------------------------------------------------------------------------------------------

    def on_span_start(self, span: Any) -> None:
        tracer = self._tracer
        if tracer is None:
            return
        try:
            with self._lock:
                run = self._runs.get(span.trace_id)
            if run is None:
                return
            kind = getattr(span.span_data, "type", None)
            opened: _Open | None = None
            if kind == "agent":
                opened = self._agent_started(tracer, run, str(span.span_data.name))
            elif kind in ("function", "handoff"):  # parent: the current context, the agent span attached in this task
                name = str(span.span_data.name) if kind == "function" else HANDOFF
                tool = start_tool_span(tracer, name, self._rt)
                opened = _Open(tool, _attach(tool), kind)
            if opened is not None:
                with self._lock:
                    run.spans[span.span_id] = opened
        except Exception as exc:
            counters.fault("openai_agents.span_start", exc)

    def _agent_started(self, tracer: Tracer, run: _Run, name: str) -> _Open:
        if not run.named:  # the trace's first agent: the turn is named after it
            run.named = True
            run.root.span.update_name(semconv.span_name(semconv.OP_HANDLE_CONVERSATION_TURN, name))
            run.root.span.set_attribute(semconv.AGENT_NAME, name)
        current = otel_trace.get_current_span()
        in_tool = any(o.span is current and o.kind == "function" for o in run.spans.values())
        attrs = {
            semconv.OPERATION_NAME: semconv.OP_INVOKE_AGENT,
            semconv.AGENT_NAME: name,
            semconv.INVOCATION_IS_NESTED: True,
            # After a handoff: the run's conversation goes on. An agent run as a tool (``Agent.as_tool``) has a
            # conversation of its own, under the tool span.
            semconv.CONVERSATION_ID: None if in_tool else run.conversation_id,
            semconv.OPENAI_AGENTS_TRACE_ID: None if in_tool else run.trace_id,
        }
        parent = None if in_tool else otel_trace.set_span_in_context(run.root.span)
        span = tracer.start_span(
            semconv.span_name(semconv.OP_INVOKE_AGENT, name),
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=clean(attrs),
        )
        run.agents.append(span)
        return _Open(span, _attach(span), "agent", in_tool)

    def on_span_end(self, span: Any) -> None:
        if self._tracer is None:
            return
        try:
            with self._lock:
                run = self._runs.get(span.trace_id)
                opened = run.spans.pop(span.span_id, None) if run is not None else None
            if run is None:
                return
            kind = getattr(span.span_data, "type", None)
            if kind == "guardrail":
                self._guardrail(run, span.span_data)
            elif opened is not None and opened.kind == "function":
                self._tool_ended(opened, span)
            elif opened is not None and opened.kind == "handoff":
                self._handoff_ended(opened, span)
            elif opened is not None:
                self._agent_ended(run, opened, span)
        except Exception as exc:
            counters.fault("openai_agents.span_end", exc)

    def _tool_ended(self, opened: _Open, span: Any) -> None:
        data, rt = span.span_data, self._rt
        _detach(opened)
        if rt.capture_content and data.input:
            arguments = rt.content(str(data.input))
            opened.span.set_attributes({semconv.TOOL_CALL_ARGUMENTS: arguments, **shown.tool_input(arguments)})
        if span.error:
            set_failure(opened.span, semconv.TOOL_ERROR, _error_text(span.error), rt)
        if data.output is None:
            end_span(opened.span)
        else:
            end_tool_span(opened.span, _output_text(data.output), rt)

    def _handoff_ended(self, opened: _Open, span: Any) -> None:
        data = span.span_data
        _detach(opened)
        to_agent = str(data.to_agent) if data.to_agent is not None else None
        if to_agent is not None:
            tool = transfer_tool(to_agent)
            opened.span.update_name(semconv.span_name(semconv.OP_EXECUTE_TOOL, tool))
            opened.span.set_attribute(semconv.TOOL_NAME, tool)
        opened.span.set_attributes(
            clean({semconv.OPENAI_AGENTS_HANDOFF_FROM: data.from_agent, semconv.OPENAI_AGENTS_HANDOFF_TO: to_agent})
        )
        if span.error:  # several handoffs asked for at once: the SDK runs the first
            set_failure(opened.span, semconv.TOOL_ERROR, _error_text(span.error), self._rt)
        end_span(opened.span)

    def _agent_ended(self, run: _Run, opened: _Open, span: Any) -> None:
        if span.error:
            text = _error_text(span.error)
            set_failure(opened.span, AGENT_ERROR, text, self._rt)
            if not opened.in_tool:  # the run stops there: the turn failed
                set_failure(run.root.span, AGENT_ERROR, text, self._rt)
        with self._lock:
            if opened.span in run.agents:
                run.agents.remove(opened.span)
        _detach(opened)
        end_span(opened.span)

    def _guardrail(self, run: _Run, data: Any) -> None:
        target = run.agents[-1] if run.agents else run.root.span
        attrs = {
            semconv.OPENAI_AGENTS_GUARDRAIL_NAME: data.name,
            semconv.OPENAI_AGENTS_GUARDRAIL_TRIGGERED: bool(data.triggered),
        }
        target.add_event(semconv.OPENAI_AGENTS_GUARDRAIL_EVENT, clean(attrs))

    # --- the rest of the interface -------------------------------------------------------------------------

    def shutdown(self) -> None:
        return None

    def force_flush(self) -> None:
        return None

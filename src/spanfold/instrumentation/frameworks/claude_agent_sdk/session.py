"""What one ``query()`` or one ``ClaudeSDKClient`` sends and receives, rebuilt as runs, model steps and tool runs.

A run (``query()``, or one turn of a client: its prompt to its ``ResultMessage``) is an ``invoke_agent {name}`` span,
the root of its trace. In it, from the messages as the application receives them:

* each model call a ``chat {model}`` step. The CLI makes the calls; the SDK sees each content block of an answer as an
  ``AssistantMessage`` of its own with the API message's id, so a step is the messages of one id, told after the fact:
  its input the thread's conversation so far as the SDK saw it (the system prompt given, the prompts sent, the answers
  and tool results received), its output the blocks; it starts when its input was complete (the CLI ready, the last
  tool result received) and ends at its last block, closed when the thread's next step begins or the turn ends;
* each ``ToolUseBlock`` an ``execute_tool {name}`` span with the call's id and input, started when the block comes
  and ended by the ``ToolResultBlock`` of that id (an ``is_error`` result an error result): the CLI runs the tools;
* a subagent's run (an ``Agent`` tool call; its messages name the call as ``parent_tool_use_id``) an ``invoke_agent
  {subagent_type}`` span inside that tool's span, with a thread of its own (the call's ``prompt`` first), ended by
  the task's notification or the run's end;
* the ``ResultMessage``: the turn's usage and cost on its last model step (the assistant messages carry the usage of
  the message's start; ``total_cost_usd`` adds up the session: a turn's cost is its growth), and ``is_error`` the
  run's failure (``error.type`` the result's ``subtype``).

An in-process MCP server's tool call (``create_sdk_mcp_server``) reaches the SDK as a JSON-RPC ``tools/call`` whose
``_meta`` names the tool use (``claudecode/toolUseId``): :meth:`Session.mcp_call` gives it the trace context of that
tool's span, so the server's own ``tools/call`` span (mcp 2.x) nests under it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import propagate
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Span, Tracer

from spanfold import counters, semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks.claude_agent_sdk import blocks
from spanfold.instrumentation.invocations import model_steps, tool_runs
from spanfold.instrumentation.invocations.agent_runs import in_agent_run, open_run
from spanfold.instrumentation.invocations.model_steps import ModelStep, StepSpan
from spanfold.instrumentation.invocations.tool_runs import Answered, ToolRun
from spanfold.instrumentation.toolkit.calls import server_of
from spanfold.instrumentation.toolkit.invocation import Cost, Request, Response, Usage
from spanfold.instrumentation.toolkit.reading import anthropic_blocks
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading.history import History
from spanfold.instrumentation.toolkit.spans import end_span, set_failure
from spanfold.instrumentation.toolkit.streams import StreamState
from spanfold.semconv import parts as p
from spanfold.semconv import shapes

#: The fault counters' name of these runs, and of their steps and tool runs.
KIND: Final = "claude_agent_sdk.run"
FRAMEWORK: Final = "claude_agent_sdk"
#: Where Claude Code's MCP client names the tool use a ``tools/call`` runs.
TOOL_USE_META: Final = "claudecode/toolUseId"
#: A thread's messages, each converted once (they are semconv messages already).
HISTORY: Final = History(lambda message: message)


@dataclass(slots=True)
class Step:
    """A model call: the blocks of one API message, and its span."""

    span: StepSpan
    message_id: Any
    model: Any
    #: Where its answer goes in the thread's messages (tool results may come before its last block).
    index: int
    parts: list[p.Part] = field(default_factory=list)
    stop_reason: Any = None
    #: ``(error kind, the CLI's text)`` of a call the CLI reports as failed (``AssistantMessage.error``).
    error: tuple[str, str] | None = None
    last_ns: int = field(default_factory=time.time_ns)

    def add(self, message: Any, now: int) -> None:
        """One assistant message of this call."""
        self.last_ns = now
        if message.stop_reason:
            self.stop_reason = message.stop_reason
        if message.error:
            self.error = (str(message.error), blocks.text_of(message.content))
            return
        for block in message.content:
            self.parts.extend(blocks.block_parts(block))


@dataclass(slots=True)
class Thread:
    """The main agent's conversation (kept across a client's turns), or a subagent's: its messages, its run's span,
    the context its spans start in, and its open model step."""

    name: str
    system: list[p.Part] | None
    messages: list[p.Message] = field(default_factory=list)
    #: Its ``invoke_agent`` span while a run is open (None inside a run the application opened itself).
    run: StreamState | None = None
    context: otel_context.Context | None = None
    step: Step | None = None
    #: When its latest input came: where its next model call starts.
    ready_ns: int = field(default_factory=time.time_ns)

    def received(self, message: p.Message, now: int) -> None:
        """A message the agent gets (a prompt, a tool result): the next call starts after it."""
        self.messages.append(message)
        self.ready_ns = now

    def close_step(self, usage: Usage | None = None, cost: float | None = None, stop_reason: Any = None) -> None:
        """End the open model step (``usage``, ``cost``, ``stop_reason``: the turn's, for its last step)."""
        step, self.step = self.step, None
        if step is None:
            return
        outputs = shapes.split_tool_responses("assistant", step.parts, p.message)
        self.messages[step.index : step.index + 1] = outputs if step.error is None else []  # failed: no answer
        reason = step.stop_reason or stop_reason
        response = Response(
            id=step.message_id,
            model=step.model,
            finish_reasons=[reason] if reason else None,
            messages=None if step.error is not None else outputs,
            usage=usage,
            cost=Cost(cost) if cost is not None else None,
        )
        step.span.end_time = step.last_ns
        model_steps.finish(step.span, FRAMEWORK, lambda told: response, step, lambda told: told.error)


@dataclass(slots=True)
class Tool:
    """A tool use: its span until its result came, the context its children start in, its input."""

    span: Span | None
    context: otel_context.Context | None
    input: Mapping[str, Any]


class Session:
    """The runs of one ``query()`` (``turns=False``: one run, however many results) or one client (each turn a run)."""

    def __init__(self, tracer: Tracer, rt: Runtime, options: Any, *, turns: bool) -> None:
        self.tracer = tracer
        self.rt = rt
        self.turns = turns
        self.provider = blocks.provider(options)
        url = blocks.environment(options, "ANTHROPIC_BASE_URL")
        self.endpoint = server_of(url) if self.provider == semconv.PROVIDER_ANTHROPIC else None
        model = getattr(options, "model", None)
        self.model = model if isinstance(model, str) else None
        self.prompts = blocks.subagent_prompts(options)
        name = blocks.agent_name(options)
        system = blocks.system_parts(getattr(options, "system_prompt", None)) or self.prompts.get(name)
        self.main = Thread(name, system)  # (the agent the CLI runs as: its definition's prompt)
        self.subagents: dict[str, Thread] = {}
        self.tools: dict[str, Tool] = {}
        self.open = False
        #: The session's cost so far, as its last result said (each result's ``total_cost_usd`` adds up the session).
        self.cost: float | None = None
        self.conversation_id: str | None = None

    # --- runs ---------------------------------------------------------------------------------------------------

    def open_turn(self) -> None:
        """Open a run, unless one is open; inside a run the application opened (``spanfold.agent``) its steps go
        under that run's span."""
        if self.open:
            return
        self.open = True
        self.main.ready_ns = time.time_ns()
        if in_agent_run():
            self.main.context = otel_context.get_current()
            return
        attrs = {semconv.CONVERSATION_ID: self.conversation_id} if self.conversation_id else None
        self.main.run, self.main.context = open_run(self.tracer, self.rt, self.main.name, KIND, attrs)

    def end_turn(self, error: BaseException | None = None) -> None:
        """End the open run (with ``error``, the exception that ended it): its steps, tools and subagents first."""
        if not self.open:
            return
        self.open = False
        for thread in self.subagents.values():
            self._end_thread(thread)
        self.subagents.clear()
        self.main.close_step()
        for tool in self.tools.values():
            if tool.span is not None:
                end_span(tool.span)  # no result came before the run ended
        self.tools.clear()
        run, self.main.run = self.main.run, None
        if run is not None:
            run.finish(error)

    def _end_thread(self, thread: Thread) -> None:
        thread.close_step()
        if thread.run is not None:
            thread.run.finish()

    # --- what the application sends and receives ----------------------------------------------------------------

    def prompt(self, item: Any) -> None:
        """A prompt sent (a string, or a stream-json ``user`` dict): a client's turn opens with it."""
        if self.turns:
            self.open_turn()
        message = blocks.prompt_message(item)
        if message is not None:
            self.main.received(message, time.time_ns())

    def message(self, message: Any) -> None:
        """A message the application receives."""
        kind = type(message).__name__
        if kind in ("AssistantMessage", "UserMessage") and self.turns:
            self.open_turn()  # a turn the application did not start (a prompt given at connect, a woken session)
        if not self.open:
            return
        now = time.time_ns()
        if kind == "AssistantMessage":
            self._assistant(message, now)
        elif kind == "UserMessage":
            self._user(message, now)
        elif kind == "ResultMessage":
            self._result(message)
        elif kind == "SystemMessage" and message.subtype == "init":
            self._init(message, now)
        elif kind == "TaskStartedMessage" and message.tool_use_id:
            self._thread(message.tool_use_id)
        elif kind == "TaskNotificationMessage" and message.tool_use_id in self.subagents:
            self._end_thread(self.subagents.pop(message.tool_use_id))

    def _init(self, message: Any, now: int) -> None:
        """The CLI is ready for the turn: its first model call starts now (not when the prompt was sent, before
        the CLI started); the session's id is the conversation's."""
        self.main.ready_ns = now
        session_id = m.get(message.data, "session_id")
        if isinstance(session_id, str) and session_id:
            self.conversation_id = session_id
            if self.main.run is not None:
                self.main.run.span.span.set_attribute(semconv.CONVERSATION_ID, session_id)

    def _assistant(self, message: Any, now: int) -> None:
        thread = self._thread(message.parent_tool_use_id)
        step = thread.step
        if step is None or message.message_id is None or step.message_id != message.message_id:
            thread.close_step()
            step = self._step(thread, message)
        if step is not None:
            step.add(message, now)
        for block in message.content:
            if type(block).__name__ == "ToolUseBlock" and not message.error:
                self._tool(block.id, block.name, block.input, thread)

    def _step(self, thread: Thread, message: Any) -> Step | None:
        """The model step an assistant message with a new message id begins; None after a fault (counted)."""
        answered = message.model if message.model != blocks.SYNTHETIC_MODEL else None
        model = (self.model if thread is self.main else None) or answered
        messages = HISTORY.of(list(thread.messages))
        request = Request(model=model, system=thread.system, messages=messages, endpoint=self.endpoint)
        step = ModelStep(request, self.provider, context=thread.context, start_time=thread.ready_ns)
        span = model_steps.start(self.tracer, self.rt, FRAMEWORK, lambda: step)
        if span is None:
            return None
        thread.messages.append(p.message("assistant", []))  # its place; its answer when the step closes
        thread.step = Step(span, message.message_id, answered, len(thread.messages) - 1)
        return thread.step

    def _user(self, message: Any, now: int) -> None:
        thread = self._thread(message.parent_tool_use_id)
        for block in message.content if isinstance(message.content, list) else ():
            if type(block).__name__ == "ToolResultBlock":
                self._tool_result(block)
        for received in blocks.content_messages("user", message.content):
            if not (received["role"] == "user" and thread.messages and thread.messages[-1] == received):
                thread.received(received, now)  # (a prompt the CLI echoes back is kept once)

    def _result(self, message: Any) -> None:
        total = message.total_cost_usd
        cost = None
        if isinstance(total, (int, float)) and not isinstance(total, bool):
            cost = total - (self.cost or 0.0)
            self.cost = total
        self.main.close_step(blocks.usage(message.usage), cost, message.stop_reason)
        if message.is_error and self.main.run is not None:
            errors = message.errors if isinstance(message.errors, list) else []
            text = message.result if isinstance(message.result, str) else "; ".join(map(str, errors)) or None
            set_failure(self.main.run.span.span, str(message.subtype or "error"), text, self.rt)
        if self.turns:
            self.end_turn()

    # --- tools and subagents ------------------------------------------------------------------------------------

    def _tool(self, call_id: Any, name: Any, arguments: Any, thread: Thread) -> Tool:
        """The tool use ``call_id``'s span, started now unless it was (by its MCP call, which can come first)."""
        tool = self.tools.get(call_id)
        if tool is None:
            run = ToolRun(str(name), call_id=call_id, arguments=arguments, context=thread.context)
            started = tool_runs.start(self.tracer, self.rt, FRAMEWORK, lambda: run)
            span = started.span if started is not None else None
            context = otel_trace.set_span_in_context(span) if span is not None else None
            tool = self.tools[call_id] = Tool(span, context, arguments if isinstance(arguments, Mapping) else {})
        return tool

    def _tool_result(self, block: Any) -> None:
        tool = self.tools.get(block.tool_use_id)
        if tool is not None and tool.span is not None:
            span, tool.span = tool.span, None
            answered = Answered(anthropic_blocks.tool_result_response(block.content), failed=bool(block.is_error))
            tool_runs.finish(span, self.rt, FRAMEWORK, lambda result: result, answered)

    def _thread(self, parent: Any) -> Thread:
        """The main thread (``parent`` None), or the subagent run by the tool use ``parent`` (opened now)."""
        if parent is None:
            return self.main
        thread = self.subagents.get(parent)
        if thread is not None:
            return thread
        tool = self.tools.get(parent)
        arguments: Mapping[str, Any] = tool.input if tool is not None else {}
        kind = arguments.get("subagent_type")
        name = kind if isinstance(kind, str) and kind else blocks.SUBAGENT_NAME
        thread = self.subagents[parent] = Thread(name, self.prompts.get(name))
        context = tool.context if tool is not None and tool.context is not None else self.main.context
        thread.run, thread.context = open_run(self.tracer, self.rt, name, KIND, context=context)
        task = arguments.get("prompt")
        if isinstance(task, str):
            thread.received(p.message("user", [p.text(task)]), time.time_ns())
        return thread

    def mcp_call(self, server: Any, message: Any) -> Any:
        """``message`` (an in-process MCP server's JSON-RPC request) carrying the trace context of its tool use's
        span, for a ``tools/call`` that names its tool use; else None (``message`` goes on as it is)."""
        params: Any = m.get(message, "params") if m.get(message, "method") == "tools/call" else None
        meta = m.get(params, "_meta")
        call_id = m.get(meta, TOOL_USE_META)
        if not isinstance(call_id, str) or not self.open:
            return None
        name = f"mcp__{server}__{params.get('name')}"  # Claude Code's name of an MCP server's tool
        tool = self._tool(call_id, name, params.get("arguments"), self.main)
        if tool.span is None:  # its result came already
            return None
        carrier = dict(meta)
        try:
            propagate.inject(carrier, context=tool.context)
        except Exception as exc:
            counters.fault("claude_agent_sdk.mcp_context", exc)
            return None
        return {**message, "params": {**params, "_meta": carrier}}

"""One agent's conversation as the SDK sees it, and its model steps.

The CLI makes the model calls; the SDK only sees their answers, each content block an ``AssistantMessage`` of its
own with the API message's id. A model step is the messages of one id: its span starts when its input was complete
(the prompt sent, the last tool result received) and ends when its last block came, both known only afterwards, so
the span is given its times (:class:`~spanfold.instrumentation.toolkit.spans.ModelSpan`'s ``start_time`` and
``end_time``). It is closed when the thread's next model step begins, or the turn ends: a turn's last step takes the
turn's usage and cost from the ``ResultMessage`` (the SDK's assistant messages carry the usage of the message's start,
whose output count is not the call's).
"""

from __future__ import annotations

import time
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry.trace import Tracer

from spanfold import counters
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks.claude_agent_sdk import blocks
from spanfold.instrumentation.invocations import model_steps
from spanfold.instrumentation.invocations.model_steps import ModelStep
from spanfold.instrumentation.toolkit.invocation import Cost, Endpoint, Request, Response, Usage
from spanfold.instrumentation.toolkit.reading.history import History
from spanfold.instrumentation.toolkit.spans import ModelSpan, set_failure
from spanfold.instrumentation.toolkit.streams import StreamState
from spanfold.semconv import parts as p
from spanfold.semconv import shapes

#: A thread's messages, each converted once (they are semconv messages already).
HISTORY: Final = History(lambda message: message)


class Step:
    """A model call: the blocks of one API message, and its span."""

    __slots__ = ("error", "index", "last_ns", "message_id", "model", "parts", "span", "stop_reason")

    def __init__(self, span: ModelSpan, message_id: Any, model: Any, index: int) -> None:
        self.span = span
        self.message_id = message_id
        self.model = model
        #: Where its answer goes in the thread's messages (tool results may come before its last block).
        self.index = index
        self.parts: list[p.Part] = []
        self.stop_reason: Any = None
        #: ``(error kind, the CLI's text)`` of a call the CLI reports as failed (``AssistantMessage.error``).
        self.error: tuple[str, str] | None = None
        self.last_ns = time.time_ns()

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


class Thread:
    """The main agent's conversation (kept across a client's turns), or a subagent's: its messages, its run's span,
    the context its spans start in, and its open model step."""

    __slots__ = ("context", "messages", "name", "ready_ns", "run", "step", "system")

    def __init__(self, name: str, system: list[p.Part] | None) -> None:
        self.name = name
        self.system = system
        self.messages: list[p.Message] = []
        #: Its ``invoke_agent`` span while a run is open (None inside a run the application opened itself).
        self.run: StreamState | None = None
        self.context: otel_context.Context | None = None
        self.step: Step | None = None
        #: When its latest input came: where its next model call starts.
        self.ready_ns = time.time_ns()

    def received(self, message: p.Message, now: int) -> None:
        """A message the agent gets (a prompt, a tool result): the next call starts after it."""
        self.messages.append(message)
        self.ready_ns = now

    def open_step(
        self, tracer: Tracer, rt: Runtime, provider: str, endpoint: Endpoint | None, model: Any, message: Any
    ) -> Step | None:
        """The model step an assistant message with a new message id begins (the open one closed first); None after
        a fault (counted)."""
        self.close_step(rt)
        answered = message.model if message.model != blocks.SYNTHETIC_MODEL else None
        messages = HISTORY.of(list(self.messages))
        request = Request(model=model or answered, system=self.system, messages=messages, endpoint=endpoint)
        step = ModelStep(request, provider, context=self.context, start_time=self.ready_ns)
        span = model_steps.start(tracer, rt, "claude_agent_sdk", lambda: step)
        if span is None:
            return None
        self.messages.append(p.message("assistant", []))  # its place; its answer when the step closes
        self.step = Step(span, message.message_id, answered, len(self.messages) - 1)
        return self.step

    def close_step(
        self,
        rt: Runtime,
        usage: Usage | None = None,
        cost: float | None = None,
        stop_reason: Any = None,
    ) -> None:
        """End the open model step (``usage``, ``cost``, ``stop_reason``: the turn's, for its last step)."""
        step, self.step = self.step, None
        if step is None:
            return
        outputs = shapes.split_tool_responses("assistant", step.parts, p.message)
        if step.error is None:
            self.messages[step.index : step.index + 1] = outputs
        else:  # no answer: the call failed
            del self.messages[step.index]
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
        try:
            attrs = step.span.result(response)
            if step.error is not None:
                set_failure(step.span.span, step.error[0], step.error[1], rt)
        except Exception as exc:
            counters.fault("claude_agent_sdk.model_result", exc)
            attrs = {}
        step.span.finish(attrs)

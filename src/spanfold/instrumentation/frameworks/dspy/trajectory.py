"""The state of a running ReAct: what its model steps send once the trajectory is turned back into tool calls and
outputs, and which call id each tool run answers.

A :class:`ReactRun` lives for one ``ReAct.forward`` / ``aforward`` (current in its context); each iteration's module
call is a :class:`Step` (current while it runs), which the model steps inside it read:

* the input: the first step's messages are kept as they were sent; a later step whose messages are the same but for
  the last (the user message holding the trajectory as text) sends the first step's messages and the trajectory's
  calls and outputs instead (:func:`~spanfold.instrumentation.frameworks.dspy.lm_messages.turns`), so each step's
  history extends what the earlier ones showed;
* the output: the step's model call is held (its span open) until ReAct has parsed the answer; it then answers the
  thought and the tool call ReAct parsed, with the step's id (``react_<index>``), which the tool's run takes. A call
  whose answer ReAct could not parse (a retry, a fallback adapter's call) answers what the model said.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from opentelemetry import context as otel_context

from spanfold import counters
from spanfold.instrumentation.frameworks.dspy import lm_messages
from spanfold.instrumentation.frameworks.dspy.runs import react_prefix
from spanfold.instrumentation.invocations.model_steps import StepSpan
from spanfold.semconv import parts as p

_RUN_KEY = otel_context.create_key("spanfold.dspy.react")
_STEP_KEY = otel_context.create_key("spanfold.dspy.react_step")


class ReactRun:
    """One ReAct run: its first step's messages, the tool call ReAct parsed last (until a tool run takes it)."""

    __slots__ = ("first", "lock", "pending", "prefix", "sent")

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.lock = threading.Lock()
        self.sent: list[Any] | None = None  # the first step's messages as sent, but the last
        self.first: list[p.Message] | None = None  # the first step's messages, read
        self.pending: tuple[int, Any] | None = None  # (step index, tool name)

    def inputs(self, sent: list[Any], read: list[p.Message], trajectory: Mapping[str, Any]) -> list[p.Message]:
        """A step's input messages: the first step's, then the trajectory's calls and outputs, when the step sent
        the first step's messages but for the last; else as sent."""
        with self.lock:
            if self.sent is None:
                self.sent, self.first = sent[:-1], read
                return read
            same = len(sent) == len(self.sent) + 1 and sent[:-1] == self.sent
            first = self.first
        if not same or first is None or not lm_messages.indexes(trajectory):
            return read
        return [*first, *lm_messages.turns(trajectory, self.prefix)]

    def asked(self, index: int, name: Any) -> None:
        with self.lock:
            self.pending = (index, name)

    def take(self, name: Any) -> str | None:
        """The call id of a run of the tool ``name``: the step's whose call ReAct parsed last, when it named it."""
        with self.lock:
            pending, self.pending = self.pending, None
        if pending is None or pending[1] != name:
            return None
        return lm_messages.call_id(pending[0], self.prefix)


class Step:
    """One iteration of a ReAct run: its index, the trajectory it is given, its model call held until parsed."""

    __slots__ = ("held", "index", "lock", "run", "trajectory")

    def __init__(self, run: ReactRun, trajectory: Mapping[str, Any]) -> None:
        self.run = run
        self.trajectory = trajectory  # ReAct's own dict: a truncation shortens it in place
        self.index = lm_messages.next_index(trajectory)
        self.lock = threading.Lock()
        self.held: StepSpan | None = None  # a model step whose span stays open until parsed

    def inputs(self, sent: list[Any], read: list[p.Message]) -> list[p.Message]:
        return self.run.inputs(sent, read, self.trajectory)

    def hold(self, call: StepSpan) -> None:
        """Keep ``call`` open until :meth:`parsed`; an earlier call of the step answers what the model said."""
        with self.lock:
            earlier, self.held = self.held, call
        if earlier is not None:
            earlier.settle(None)

    def parsed(self, prediction: Any) -> None:
        """ReAct parsed the step's answer (None: it could not): the held call answers it, its tool run takes its id."""
        with self.lock:
            held, self.held = self.held, None
        output = None
        try:
            if prediction is not None:
                name = getattr(prediction, "next_tool_name", None)
                thought = getattr(prediction, "next_thought", None)
                arguments = getattr(prediction, "next_tool_args", None)
                self.run.asked(self.index, name)
                output = lm_messages.step_call(self.index, self.run.prefix, thought, name, arguments)
        except Exception as exc:
            counters.fault("dspy.react_step", exc)
        if held is not None:
            held.settle(output)


def start_run() -> otel_context.Context:
    """The context a ReAct run's code runs in: a new :class:`ReactRun` current."""
    return otel_context.set_value(_RUN_KEY, ReactRun(react_prefix()))


def current_run() -> ReactRun | None:
    run = otel_context.get_value(_RUN_KEY)
    return run if isinstance(run, ReactRun) else None


def start_step(trajectory: Any) -> tuple[Step, otel_context.Context] | None:
    """The step of the current ReAct run given ``trajectory``, and the context it runs in (None: no run is
    current, or the trajectory is no mapping)."""
    run = current_run()
    if run is None or not isinstance(trajectory, Mapping):
        return None
    step = Step(run, trajectory)
    return step, otel_context.set_value(_STEP_KEY, step)


def current_step() -> Step | None:
    step = otel_context.get_value(_STEP_KEY)
    return step if isinstance(step, Step) else None

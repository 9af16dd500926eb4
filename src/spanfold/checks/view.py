"""One view of a trace for every check: its tool calls in order, and its messages in AgentV's compact shape.

Accepts a :class:`spanfold.trace.Trace` or any JSON value :func:`spanfold.trace.decode.decode` reads (an
Invariant event list, an AgentV document ``{"trace": [TraceEvent, ...]}``, compact messages, ...). Tool
outputs are folded into the calls they answer: by ``tool_call_id``, else the oldest call still waiting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from spanfold.checks.errors import TraceFormatError
from spanfold.trace.agentv import RunMetrics, run_metrics
from spanfold.trace.decode import decode_trace
from spanfold.trace.errors import TraceError
from spanfold.trace.model import Trace

#: What a check accepts as a trace.
TraceLike: TypeAlias = "Trace | Sequence[Mapping[str, Any]] | Mapping[str, Any]"


@dataclass(slots=True)
class Call:
    """A tool call. ``index`` counts calls from 1 across the trace; ``event`` is its event's position (from 1)."""

    index: int
    name: str
    args: Any
    id: str | None = None
    event: int = 0
    output: Any = None
    has_output: bool = False
    error: Any = None


@dataclass(slots=True)
class CompactMessage:
    """A non-tool event with its calls (outputs attached). ``content`` is plain text or None."""

    role: str
    content: str | None
    calls: list[Call] = field(default_factory=list)
    event: int = 0


@dataclass(slots=True)
class TraceView:
    calls: list[Call]
    messages: list[CompactMessage]
    #: The trace itself (AgentV's graders read its messages and metrics: :meth:`agentv`).
    trace: Trace
    _agentv: RunMetrics | None = None

    def agentv(self) -> RunMetrics:
        """The trace's calls, summary and execution metrics as AgentV computes them (once per view)."""
        if self._agentv is None:
            self._agentv = run_metrics(self.trace)
        return self._agentv


class _Builder:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.messages: list[CompactMessage] = []
        self._by_id: dict[str, Call] = {}
        self._cursor = 0  # calls before it all have their output

    def message(self, role: str, content: str | None, event: int) -> CompactMessage:
        msg = CompactMessage(role=role, content=content, event=event)
        self.messages.append(msg)
        return msg

    def call(self, msg: CompactMessage, name: str, args: Any, call_id: str | None) -> None:
        call = Call(index=len(self.calls) + 1, name=name, args=args, id=call_id, event=msg.event)
        self.calls.append(call)
        msg.calls.append(call)
        if call_id is not None:
            self._by_id.setdefault(call_id, call)

    def output(self, call_id: str | None, output: Any, error: Any) -> None:
        call = self._by_id.get(call_id) if call_id is not None else None
        if call is None or call.has_output:
            call = self._oldest_waiting()
        if call is None:
            return  # an output nothing asked for: not part of any call
        call.output, call.error, call.has_output = output, error, True

    def _oldest_waiting(self) -> Call | None:
        while self._cursor < len(self.calls) and self.calls[self._cursor].has_output:
            self._cursor += 1
        return self.calls[self._cursor] if self._cursor < len(self.calls) else None

    def view(self, trace: Trace) -> TraceView:
        return TraceView(calls=self.calls, messages=self.messages, trace=trace)


def _from_model(trace: Trace) -> TraceView:
    b = _Builder()
    for pos, ev in enumerate(trace.events, start=1):
        if ev.role == "tool":
            b.output(ev.tool_call_id, ev.content if not isinstance(ev.content, list) else ev.text(), ev.error)
            continue
        msg = b.message(ev.role, None if ev.content is None else ev.text(), pos)
        for tc in ev.tool_calls:
            b.call(msg, tc.name, tc.arguments, tc.id)
    return b.view(trace)


def view_of(trace: TraceLike | TraceView) -> TraceView:
    """The calls and compact messages of ``trace`` (any shape :func:`spanfold.trace.decode.decode` reads);
    :class:`TraceFormatError` when it is not a trace."""
    if isinstance(trace, TraceView):
        return trace
    if isinstance(trace, Trace):
        return _from_model(trace)
    if isinstance(trace, (str, bytes)) or not isinstance(trace, (Mapping, Sequence)):
        raise TraceFormatError(f"a trace must be an event list, not {type(trace).__name__}")
    try:
        return _from_model(decode_trace(dict(trace) if isinstance(trace, Mapping) else list(trace)))
    except TraceError as exc:
        raise TraceFormatError(str(exc)) from None

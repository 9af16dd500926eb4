"""One view of a trace for every check: its tool calls in order, and its messages in AgentV's compact shape.

Accepts an Invariant event list (dicts, as read from a JSONL line, tool-call ``arguments`` a dict or a JSON
string), a :class:`spanfold.trace.Trace`, or an AgentV document ``{"trace": [TraceEvent, ...]}``. Tool
outputs are folded into the calls they answer: by ``tool_call_id``, else the oldest call still waiting.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from spanfold.checks.errors import TraceFormatError
from spanfold.trace.model import Trace, parse_arguments

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

    def view(self) -> TraceView:
        return TraceView(calls=self.calls, messages=self.messages)


def _text(content: Any) -> str | None:
    """Message content as plain text: strings as they are, text chunks joined, other JSON encoded."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(c.get("text", "")) for c in content if isinstance(c, Mapping) and c.get("type", "text") == "text"
        )
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


def _from_model(trace: Trace) -> TraceView:
    b = _Builder()
    for pos, ev in enumerate(trace.events, start=1):
        if ev.role == "tool":
            b.output(ev.tool_call_id, ev.content if not isinstance(ev.content, list) else ev.text(), ev.error)
            continue
        msg = b.message(ev.role, None if ev.content is None else ev.text(), pos)
        for tc in ev.tool_calls:
            b.call(msg, tc.name, tc.arguments, tc.id)
    return b.view()


def _tool_call(raw: Any, pos: int) -> tuple[str, Any, str | None]:
    if not isinstance(raw, Mapping):
        raise TraceFormatError(f"event {pos}: a tool call must be an object")
    fn = raw.get("function", raw)
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        raise TraceFormatError(f"event {pos}: a tool call needs function.name")
    call_id = raw.get("id")
    return fn["name"], parse_arguments(fn.get("arguments")), None if call_id is None else str(call_id)


def _from_invariant(events: Sequence[Any]) -> TraceView:
    b = _Builder()
    for pos, ev in enumerate(events, start=1):
        if not isinstance(ev, Mapping):
            raise TraceFormatError(f"event {pos} is not an object")
        role = ev.get("role")
        if not isinstance(role, str):
            raise TraceFormatError(f"event {pos} has no role")
        if role == "tool":
            call_id = ev.get("tool_call_id")
            b.output(None if call_id is None else str(call_id), _text(ev.get("content")), ev.get("error"))
            continue
        msg = b.message(role, _text(ev.get("content")), pos)
        calls = ev.get("tool_calls") or []
        if not isinstance(calls, list):
            raise TraceFormatError(f"event {pos}: tool_calls must be a list")
        for raw in calls:
            b.call(msg, *_tool_call(raw, pos))
    return b.view()


_AGENTV_ROLES = {"model_step": "assistant", "message": "user", "error": "error"}


def _from_agentv(events: Iterable[Any]) -> TraceView:
    b = _Builder()
    last: CompactMessage | None = None  # the assistant message later tool_call events belong to
    for pos, ev in enumerate(events, start=1):
        if not isinstance(ev, Mapping) or not isinstance(ev.get("type"), str):
            raise TraceFormatError(f"event {pos} is not an AgentV TraceEvent (no type)")
        kind = ev["type"]
        if kind == "tool_call":
            if last is None:
                last = b.message("assistant", None, pos)
            raw_id = ev.get("id")
            b.call(last, str(ev.get("name")), parse_arguments(ev.get("input")), None if raw_id is None else str(raw_id))
        elif kind == "tool_result":
            call_id = ev.get("id")
            meta = ev.get("metadata")
            error = meta.get("error") if isinstance(meta, Mapping) else None
            b.output(None if call_id is None else str(call_id), ev.get("output"), error)
            last = None
        else:
            meta = ev.get("metadata")
            given = meta.get("role") if isinstance(meta, Mapping) else None
            role = given if isinstance(given, str) else str(_AGENTV_ROLES.get(kind, kind))
            msg = b.message(role, _text(ev.get("text")), pos)
            last = msg if role == "assistant" else None
    return b.view()


def view_of(trace: TraceLike | TraceView) -> TraceView:
    """The calls and compact messages of ``trace``; :class:`TraceFormatError` when it is neither shape."""
    if isinstance(trace, TraceView):
        return trace
    if isinstance(trace, Trace):
        return _from_model(trace)
    if isinstance(trace, Mapping):
        events = trace.get("trace")
        if isinstance(events, list):
            return _from_agentv(events)
        raise TraceFormatError("a trace must be an event list (or an AgentV document with a 'trace' list)")
    if isinstance(trace, (str, bytes)) or not isinstance(trace, Sequence):
        raise TraceFormatError(f"a trace must be an event list, not {type(trace).__name__}")
    return _from_invariant(trace)

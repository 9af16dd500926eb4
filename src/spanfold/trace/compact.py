"""A trace in AgentV's compact message style: each tool call carries its own output and timing.

    - role: assistant
      tool_calls:
        - {tool: get_weather, input: {city: Paris}, output: "18°C", id: call_1,
           start_time: ..., end_time: ..., duration_ms: 3.2}

A tool output is folded into the call it answers (by ``tool_call_id``, else the oldest call still waiting);
``start_time`` is when the model asked for the call (its message's time), ``end_time`` when the result came.
Content is plain text (image chunks have no compact form). Reading it back: :func:`spanfold.trace.decode.decode`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from spanfold.trace.model import Message, Trace

#: Keys of a compact tool call, in the order they are written.
CALL_KEYS = ("tool", "input", "output", "id", "start_time", "end_time", "duration_ms")


def parse_time(value: str | None) -> datetime | None:
    """An ISO 8601 timestamp (``Z`` accepted on Python 3.10), or None."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def duration_ms(start: str | None, end: str | None) -> float | None:
    a, b = parse_time(start), parse_time(end)
    if a is None or b is None or (a.tzinfo is None) != (b.tzinfo is None):
        return None
    return round((b - a).total_seconds() * 1000, 3)


@dataclass(slots=True)
class FoldedCall:
    """A compact tool call (``call``), whether an output answered it, and where that output is."""

    call: dict[str, Any]
    answered: bool = False
    answer: int | None = None  # the position of the tool output answering it


@dataclass(slots=True)
class Folded:
    """A non-tool event of a trace (at ``position`` in its event list) as a compact message, and for each of its
    calls the position of the tool output answering it (None: unanswered)."""

    position: int
    message: dict[str, Any]
    calls: list[FoldedCall]

    @property
    def answers(self) -> list[int | None]:
        return [pending.answer for pending in self.calls]


class _Folder:
    def __init__(self) -> None:
        self.messages: list[Folded] = []
        self.pending: list[FoldedCall] = []
        self.by_id: dict[str, FoldedCall] = {}
        self.cursor = 0

    def message(self, ev: Message, position: int) -> None:
        out: dict[str, Any] = {"role": ev.role}
        folded = Folded(position, out, [])
        if ev.content is not None:
            out["content"] = ev.text()
        if ev.tool_calls:
            out["tool_calls"] = []
            for tc in ev.tool_calls:
                call: dict[str, Any] = {"tool": tc.name, "input": tc.arguments if tc.arguments is not None else {}}
                if tc.id is not None:
                    call["id"] = tc.id
                if ev.timestamp is not None:
                    call["start_time"] = ev.timestamp
                out["tool_calls"].append(call)
                pending = FoldedCall(call)
                folded.calls.append(pending)
                self.pending.append(pending)
                if tc.id is not None:
                    self.by_id.setdefault(tc.id, pending)
        self.messages.append(folded)

    def output(self, ev: Message, position: int) -> None:
        found = self.by_id.get(ev.tool_call_id) if ev.tool_call_id is not None else None
        if found is None or found.answered:
            found = self._oldest_waiting()
        if found is None:
            return  # an output no call asked for has no place in the compact form
        found.answered = True
        found.answer = position
        call = found.call
        call["output"] = ev.text() if isinstance(ev.content, list) else ev.content
        if ev.timestamp is not None:
            call["end_time"] = ev.timestamp
        took = ev.metadata.get("duration_ms")
        took = took if isinstance(took, (int, float)) else duration_ms(call.get("start_time"), ev.timestamp)
        if took is not None:
            call["duration_ms"] = took

    def _oldest_waiting(self) -> FoldedCall | None:
        while self.cursor < len(self.pending) and self.pending[self.cursor].answered:
            self.cursor += 1
        return self.pending[self.cursor] if self.cursor < len(self.pending) else None


def fold(trace: Trace) -> list[Folded]:
    """Each non-tool event of the trace as a compact message, its calls' outputs inside them (keys in any order)."""
    folder = _Folder()
    for position, ev in enumerate(trace.events):
        if ev.role == "tool":
            folder.output(ev, position)
        else:
            folder.message(ev, position)
    return folder.messages


def compact_messages(trace: Trace) -> list[dict[str, Any]]:
    """The trace as AgentV compact messages (JSON-ready)."""
    messages = [folded.message for folded in fold(trace)]
    for msg in messages:
        if "tool_calls" in msg:
            msg["tool_calls"] = [{k: c[k] for k in CALL_KEYS if k in c} for c in msg["tool_calls"]]
    return messages


def final_text(trace: Trace) -> str:
    """The last assistant message's text (what a CLI agent reports as its answer)."""
    for ev in reversed(trace.events):
        if ev.role == "assistant" and ev.content is not None:
            return ev.text()
    return ""


def agentv_cli_document(trace: Trace) -> dict[str, Any]:
    """``{text, output: [compact message], token_usage, duration_ms}``: the JSON a CLI agent hands AgentV."""
    meta = trace.meta
    out: dict[str, Any] = {"text": final_text(trace), "output": compact_messages(trace)}
    if meta.usage_known:  # unknown is left out, never 0
        out["token_usage"] = {"input": meta.usage.input_tokens, "output": meta.usage.output_tokens}
    took = meta.duration_ms if meta.duration_ms is not None else duration_ms(meta.start, meta.end)
    if took is not None:
        out["duration_ms"] = took
    if meta.trace_id:
        out["metadata"] = meta.to_dict()
    return out

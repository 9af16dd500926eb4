"""A trace rendered for a person in a terminal: roles, tool calls with their arguments, tool outputs, errors,
timings, tokens and cost. Plain text lines; ``color=True`` adds ANSI styles (``click.echo`` strips them when piped).
Times and tokens come from the events (AgentV's carry them) or from the metadata's steps (an Invariant line's
``.meta.jsonl``: each model call's and tool run's start, duration, model, tokens and cost,
:mod:`spanfold.trace.timing`); the run's cost from the metadata.
Every text taken from the trace goes through :func:`spanfold.text.visible` first: model output and tool results are
attacker-influenced, so their control characters are printed as ``\x1b``-style text, never sent to the terminal.

Used by ``spanfold show`` and reusable as is (``spanfold demo``)::

    for line in render_trace(trace.events, trace.meta, color=True):
        click.echo(line)
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import click

from spanfold.text import plural, visible
from spanfold.trace.compact import parse_time
from spanfold.trace.model import Message, RunCost, StepTime, ToolCall, TraceMeta, TraceSummary
from spanfold.trace.timing import asides_by_event, steps_by_event

#: Role -> click.style arguments.
ROLE_STYLES: dict[str, dict[str, Any]] = {
    "system": {"fg": "blue"},
    "user": {"fg": "green", "bold": True},
    "assistant": {"fg": "cyan", "bold": True},
    "tool": {"fg": "magenta"},
    "error": {"fg": "red", "bold": True},
}
ROLE_WIDTH = 10


_STYLE = re.compile("\x1b\\[[0-9;]*m")


def _columns(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def wrap_styled(text: str, width: int) -> list[str]:
    """``text`` (which may hold our own colour codes, never other control characters) in lines of at most
    ``width`` terminal columns, broken at a space where there is one (wide characters count two)."""
    if width <= 0 or len(text) <= width:
        return [text]
    lines: list[str] = []
    current: list[str] = []
    column = 0
    space = -1  # index in current of the last space
    for token in re.split(f"({_STYLE.pattern})", text):
        if _STYLE.fullmatch(token):
            current.append(token)
            continue
        for char in token:
            cols = _columns(char)
            if column + cols > width and column > 0:
                if space > 0:
                    lines.append("".join(current[:space]).rstrip())
                    current = current[space + 1 :]
                else:
                    lines.append("".join(current))
                    current = []
                column = sum(0 if _STYLE.fullmatch(t) else _columns(t) for t in current)
                space = -1
            if char == " ":
                space = len(current)
            current.append(char)
            column += cols
    lines.append("".join(current))
    return lines


class _Painter:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, **style: Any) -> str:
        return click.style(text, **style) if self.color and style else text


def format_ms(ms: float) -> str:
    """``204.8 ms``, ``3.20 s``, ``2m05.0s``, ``3h07m``; ``-`` for what is not a duration (NaN, infinite)."""
    if not math.isfinite(ms):
        return "-"
    if abs(ms) >= 3_600_000:
        hours = ms / 3_600_000
        return f"{hours:.3g} h" if abs(hours) >= 10_000 else f"{int(hours)}h{int(ms / 60_000) % 60:02d}m"
    if ms < 1000:
        return f"{ms:.1f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.2f} s"
    minutes, seconds = divmod(ms / 1000, 60)
    return f"{int(minutes)}m{seconds:04.1f}s"


def format_tokens(usage: Any) -> str | None:
    """``"120 in / 20 out tokens"`` from a usage object or dict, or None when it has none."""
    if isinstance(usage, dict):
        inp, out = usage.get("input_tokens"), usage.get("output_tokens")
    else:
        inp, out = getattr(usage, "input_tokens", None), getattr(usage, "output_tokens", None)
    if not inp and not out:
        return None
    return f"{inp or 0} in / {out or 0} out tokens"


def format_cost(amount: float, currency: str = "USD") -> str:
    """``$12.30``, ``$0.0123``, ``$0.000171`` (at most three significant digits below a cent); another currency by its
    code after the amount (``0.0123 EUR``)."""
    if amount >= 1 or amount <= 0:
        text = f"{amount:,.2f}" if amount else "0"
    elif amount >= 0.01:
        text = f"{amount:.4f}"
    else:
        text = f"{amount:.{min(12, 2 - math.floor(math.log10(amount)))}f}".rstrip("0")
    return f"${text}" if currency == "USD" else f"{text} {currency}"


def format_run_cost(cost: RunCost) -> str:
    """``cost $0.0123``, and the model calls no price covers when there are some (``+ 2 calls unpriced``)."""
    text = f"cost {format_cost(cost.total, cost.currency)}"
    if cost.unpriced_steps:
        text += f" + {plural(cost.unpriced_steps, 'call')} unpriced"
    return text


def format_arguments(arguments: Any) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return visible(arguments)
    return visible(json.dumps(arguments, ensure_ascii=False))


def _content_text(msg: Message) -> str:
    """The content as it is printed (control characters made visible, newlines kept)."""
    return visible(_raw_content_text(msg), multiline=True)


def _raw_content_text(msg: Message) -> str:
    if msg.content is None:
        return ""
    if isinstance(msg.content, str):
        return msg.content
    parts = []
    for chunk in msg.content:
        if chunk.get("type") == "text":
            parts.append(str(chunk.get("text", "")))
        else:
            where = chunk.get("image_url") or chunk.get("url") or chunk.get("file_id") or ""
            where = where if isinstance(where, str) else json.dumps(where)
            parts.append(f"[{chunk.get('type')}{': ' + where[:60] if where else ''}]")
    return "".join(parts)


def aside_text(step: StepTime, limit: int | None) -> str:
    """A step beside the conversation as one line: ``text-embedding-3-small, 2 inputs, 12 tokens``;
    ``InMemoryVectorStore top 4 "the query" -> 3 documents: d1 0.91, d2 0.83``."""
    head = [visible(x) for x in (step.operation, step.model, step.store) if x]
    if step.top_k is not None:
        head.append(f"top {step.top_k}")
    if step.inputs is not None:
        head.append(plural(step.inputs, "input"))
    sent = getattr(step.usage, "input_tokens", None) if step.kind == "embeddings" else None
    tokens = f"{sent} tokens" if sent else format_tokens(step.usage)  # an embeddings call answers vectors, no tokens
    if tokens:
        head.append(tokens)
    if step.cost is not None:
        head.append(format_cost(step.cost.amount, step.cost.currency))
    text = ", ".join(head)
    if step.query is not None:
        text += f' "{clip(visible(step.query), limit)}"'
    if step.documents is not None:
        found = [
            f"{visible(str(d.get('id')))} {d['score']:.3g}"
            if isinstance(d.get("score"), (int, float))
            else visible(str(d.get("id")))
            for d in step.documents
        ]
        text += f" -> {plural(len(found), 'document')}" + (f": {clip(', '.join(found), limit)}" if found else "")
    return text


def header(meta: TraceMeta | None, summary: TraceSummary) -> list[str]:
    """The trace's one- or two-line heading: id, agent, models, tokens, cost, duration, counts."""
    first = ["trace"]
    facts: list[str] = []
    if meta is not None:
        if meta.trace_id:
            first.append(visible(meta.trace_id))
        if meta.name:
            first.append(f"({visible(meta.name)})")
        if meta.models:
            facts.append(visible(", ".join(meta.models)))
        tokens = format_tokens(meta.usage) if meta.usage_known else "tokens unknown"
        if tokens and meta.unreported_steps:
            said = "model call" if meta.unreported_steps == 1 else "model calls"
            tokens += f" ({meta.unreported_steps} {said} reported none)"
        if tokens:
            facts.append(tokens)
        cost = meta.run_cost
        if cost is not None:
            facts.append(visible(format_run_cost(cost)))
        if meta.duration_ms is not None:
            facts.append(format_ms(meta.duration_ms))
        if meta.status == "error" and meta.error is not None:
            facts.append(f"error: {visible(str(meta.error.get('type', 'error')))}")
        elif meta.status != "complete":
            facts.append(meta.status)
    calls = sum(summary.tool_calls_by_name.values())
    facts.append(
        f"{plural(summary.event_count, 'event')}, {plural(calls, 'tool call')}, {plural(summary.error_count, 'error')}"
    )
    return [" ".join(first), "  " + " · ".join(facts)]


def clip(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


class _Renderer:
    def __init__(
        self, events: Sequence[Message], meta: TraceMeta | None, color: bool, limit: int | None, width: int | None
    ) -> None:
        self.events = events
        self.limit = limit
        self.width = width
        self.paint = _Painter(color)
        self.steps = steps_by_event(meta.steps, events) if meta is not None else {}
        self.asides = asides_by_event(meta.steps, events) if meta is not None else {}
        self.current = 0  # the position of the event being rendered
        self.origin = self._origin(meta)
        self.timed = any(e.timestamp for e in events) or bool(self.steps)
        self.call_times: dict[str, datetime] = {}
        self.call_names: dict[str, str] = {}
        self.lines: list[str] = []

    def _origin(self, meta: TraceMeta | None) -> datetime | None:
        start = parse_time(meta.start) if meta is not None else None
        if start is not None:
            return start
        return next((t for t in (parse_time(e.timestamp) for e in self.events) if t is not None), None)

    def step(self) -> StepTime | None:
        """The metadata's step whose first event is the one being rendered."""
        return self.steps.get(self.current)

    def time_of(self, msg: Message) -> datetime | None:
        """When the event happened: its own time, else the end of its step."""
        at = parse_time(msg.timestamp)
        step = self.step()
        if at is None and step is not None:
            start = parse_time(step.start)
            if start is not None and step.duration_ms is not None:
                at = start + timedelta(milliseconds=step.duration_ms)
        return at

    def when(self, msg: Message) -> str:
        if not self.timed:
            return ""
        at = self.time_of(msg)
        if at is None or self.origin is None or (at.tzinfo is None) != (self.origin.tzinfo is None):
            return " " * 11
        return self.paint(f"{'+' + format_ms((at - self.origin).total_seconds() * 1000):>10} ", dim=True)

    def emit(self, msg: Message, body: str, *, first: bool = True) -> None:
        indent = " " * (11 if self.timed else 0) + " " * (ROLE_WIDTH + 1)
        role = self.paint(f"{visible(msg.role):<{ROLE_WIDTH}}", **ROLE_STYLES.get(msg.role, {}))
        lead = (self.when(msg) + role + " ") if first else indent
        body_lines = body.split("\n") or [""]
        if self.width is not None:  # long lines wrap under the text, not under the role
            room = max(20, self.width - len(indent))
            body_lines = [part for line in body_lines for part in wrap_styled(line, room)]
        self.lines.append((lead + body_lines[0]).rstrip())
        self.lines.extend((indent + line).rstrip() for line in body_lines[1:])

    def call(self, msg: Message, tc: ToolCall, first: bool) -> None:
        name = self.paint(visible(tc.name), fg="yellow", bold=True)
        ident = self.paint(f"  [{visible(tc.id)}]", dim=True) if tc.id else ""
        self.emit(msg, f"-> {name}({clip(format_arguments(tc.arguments), self.limit)}){ident}", first=first)
        at = self.time_of(msg)
        if tc.id is not None:
            self.call_names[tc.id] = tc.name
            if at is not None:
                self.call_times[tc.id] = at

    def output(self, msg: Message) -> None:
        name = visible(msg.name or self.call_names.get(msg.tool_call_id or "") or "tool")
        ident = f" [{visible(msg.tool_call_id)}]" if msg.tool_call_id else ""
        took = ""
        step = self.step()
        start, end = self.call_times.get(msg.tool_call_id or ""), self.time_of(msg)
        if step is not None and step.duration_ms is not None:  # the tool run's own time
            took = self.paint(f"  ({format_ms(step.duration_ms)})", dim=True)
        elif start is not None and end is not None and (start.tzinfo is None) == (end.tzinfo is None):
            took = self.paint(f"  ({format_ms((end - start).total_seconds() * 1000)})", dim=True)
        text = clip(_content_text(msg), self.limit)
        if msg.error is not None:
            kind = visible(str(msg.error.get("type", "error")))
            text = self.paint(f"!! {kind}: {text}" if text and text != kind else f"!! {kind}", fg="red", bold=True)
        self.emit(msg, f"<- {self.paint(name, fg='yellow')}{self.paint(ident, dim=True)}: {text}{took}")

    def message(self, msg: Message) -> None:
        text = clip(_content_text(msg), self.limit)
        if msg.role == "error":
            text = self.paint(text or visible(str((msg.error or {}).get("type", "error"))), fg="red")
        first = True
        if text or not msg.tool_calls:
            self.emit(msg, text)
            first = False
        for tc in msg.tool_calls:
            self.call(msg, tc, first)
            first = False
        step = self.step()
        model = msg.metadata.get("model")
        model = model if isinstance(model, str) else step.model if step is not None else None
        details = [visible(model)] if model else []
        tokens = format_tokens(msg.metadata.get("usage") or (step.usage if step is not None else None))
        if tokens:
            details.append(tokens)
        if step is not None and step.cost is not None:
            details.append(visible(format_cost(step.cost.amount, step.cost.currency)))
        if step is not None and step.duration_ms is not None:
            details.append(format_ms(step.duration_ms))
        if details:
            self.emit(msg, self.paint(f"({', '.join(details)})", dim=True), first=False)

    def aside(self, step: StepTime) -> None:
        """A step beside the conversation (embeddings, retrieval, rerank, memory), a line of its own."""
        at = parse_time(step.start)
        when = ""
        if self.timed:
            shown = at is not None and self.origin is not None and (at.tzinfo is None) == (self.origin.tzinfo is None)
            offset = (at - self.origin).total_seconds() * 1000 if shown and at and self.origin else None
            when = self.paint(f"{'+' + format_ms(offset):>10} ", dim=True) if offset is not None else " " * 11
        kind = self.paint(f"{step.kind:<{ROLE_WIDTH}}", fg="magenta")
        body = aside_text(step, self.limit)
        if step.duration_ms is not None:
            body += self.paint(f"  ({format_ms(step.duration_ms)})", dim=True)
        if step.error is not None:
            body += self.paint(f"  !! {visible(str(step.error.get('type', 'error')))}", fg="red", bold=True)
        self.lines.append(f"{when}{kind} {body}".rstrip())

    def render(self) -> list[str]:
        for n, msg in enumerate(self.events):
            self.current = n
            for step in self.asides.get(n, ()):
                self.aside(step)
            if msg.role == "tool":
                self.output(msg)
            else:
                self.message(msg)
        for step in self.asides.get(None, ()):
            self.aside(step)
        return self.lines


def render_trace(
    events: Sequence[Message],
    meta: TraceMeta | None = None,
    *,
    color: bool = False,
    max_chars: int | None = None,
    width: int | None = None,
) -> list[str]:
    """The trace as lines for a terminal: a heading, then one block per event (tool calls indented under theirs).
    ``max_chars`` cuts each content, tool output and argument list to that many characters; ``width`` wraps long
    lines to that many columns with a hanging indent (under the text, not under the role)."""
    summary = TraceSummary.of(list(events), (meta.handed or 0) if meta is not None else 0)
    head = header(meta, summary)
    paint = _Painter(color)
    return [
        paint(head[0], bold=True),
        paint(head[1], dim=True),
        *_Renderer(events, meta, color, max_chars, width).render(),
    ]

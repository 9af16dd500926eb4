"""A run's waterfall: each model call and tool run on one time axis, tool runs under the model call that asked for
them, each with its event, tokens, cost and error; the agents the run ran below its own (handoffs, sub-agents: the
metadata's ``agents``) as rows of their own, with the steps and agents that ran under them nested.

The steps are the metadata's (:attr:`~spanfold.trace.model.TraceMeta.steps`, each linked to its first event by
:func:`spanfold.trace.timing.steps_by_event`); a trace whose metadata lists none is drawn from the times its model
outputs, tool outputs and errors carry (an event's timestamp is when its step ended). The messages sent (system,
user) are no steps. A tool run nests under the model call whose output holds its call id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from spanfold.trace.model import ASIDE_KINDS, Message, StepTime, Trace
from spanfold.trace.timing import steps_by_event

#: Keys of a usage record and the name each is shown under (providers and formats spell cached and reasoning tokens
#: in several ways).
USAGE_KEYS = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cached_tokens": "cached_tokens",
    "cache_read_input_tokens": "cached_tokens",
    "cache_read_tokens": "cached_tokens",
    "cached_input_tokens": "cached_tokens",
    "reasoning_tokens": "reasoning_tokens",
    "reasoning_output_tokens": "reasoning_tokens",
    "cache_write_tokens": "cache_write_tokens",
    "cache_creation_input_tokens": "cache_write_tokens",
}


#: What a step beside the conversation (an embeddings call, a retrieval, a rerank, a memory operation) records of
#: itself, shown in its details.
ASIDE_FIELDS = ("operation", "store", "top_k", "inputs", "query", "documents")


def epoch_ms(iso: Any) -> float | None:
    """Milliseconds since the epoch of an ISO 8601 time (to the microsecond), None when it is not one."""
    if not isinstance(iso, str) or not iso:
        return None
    return _epoch_ms(iso)


@lru_cache(maxsize=1 << 18)  # every run's start, read again by each filter and chart over the list
def _epoch_ms(iso: str) -> float | None:
    try:
        moment = datetime.fromisoformat(iso[:-1] + "+00:00" if iso.endswith("Z") else iso)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.timestamp() * 1000.0


def usage_of(*records: Any) -> dict[str, int] | None:
    """The token counts the records hold (the first record that has a kind wins), None when none has any."""
    out: dict[str, int] = {}
    for record in records:
        if not isinstance(record, dict):
            continue
        for key, name in USAGE_KEYS.items():
            value = record.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and name not in out:
                out[name] = value
    return out or None


def cost_of(value: Any) -> dict[str, Any] | None:
    """A cost as ``{"amount", "currency"}`` from what a trace may say: a number (US dollars), or a record with an
    ``amount`` or ``total`` (and a ``currency``), as a dict or an object that gives one (``to_dict``); None when it
    says nothing usable."""
    as_dict = getattr(value, "to_dict", None)
    if callable(as_dict):
        value = as_dict()
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return {"amount": float(value), "currency": "USD"}
    if isinstance(value, dict):
        amount = value.get("amount", value.get("total", value.get("total_usd", value.get("usd"))))
        if isinstance(amount, (int, float)) and not isinstance(amount, bool):
            currency = value.get("currency")
            return {"amount": float(amount), "currency": currency if isinstance(currency, str) else "USD"}
    return None


def trace_cost(meta: dict[str, Any]) -> dict[str, Any] | None:
    """A run's cost, when its metadata says it (``cost`` or ``cost_usd``)."""
    if not meta:
        return None
    return cost_of(meta.get("cost")) or cost_of(meta.get("cost_usd"))


@dataclass(slots=True)
class _Step:
    kind: str
    start: float | None  # ms since the epoch
    took: float | None
    label: str
    event: int | None  # position of its first event (from 0)
    error: dict[str, Any] | None
    usage: dict[str, int] | None = None
    cost: dict[str, Any] | None = None
    call_id: str | None = None
    span_id: str | None = None
    params: dict[str, Any] | None = None  # a model call's request parameters (temperature, max_tokens ...)
    agent: str | None = None  # the span id of the agent it ran under (the metadata's ``parent``)
    aside: dict[str, Any] | None = None  # a step beside the conversation: its store, query, documents ...
    children: list[_Step] = field(default_factory=list)

    def sort_key(self) -> tuple[float, float]:
        return (self.start if self.start is not None else float("inf"), self.took or 0.0)


def _label(step: StepTime) -> str:
    """What a step is called on the waterfall: a model call's (or an embeddings call's) model, a tool run's tool, a
    retrieval's or a memory operation's store (or operation)."""
    if step.kind in ("model", "embeddings"):
        return step.model or ""
    if step.kind == "tool":
        return step.name or step.call_id or ""
    store, operation = getattr(step, "store", None), getattr(step, "operation", None)
    return str(store or operation or step.name or "")


def _from_meta(step: StepTime, event: int | None, events: list[Message]) -> _Step:
    ev = events[event] if event is not None and step.kind not in ASIDE_KINDS else None  # an aside step's event is
    ev_meta = ev.metadata if ev is not None else {}  # the one it precedes: none of its figures are the step's
    usage: Any = step.usage
    as_dict = getattr(usage, "to_dict", None)
    if callable(as_dict):  # every kind of token the metadata records
        raw_usage = as_dict()
    else:
        raw_usage = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens} if usage else None
    model = step.kind == "model"
    aside = {key: getattr(step, key) for key in ASIDE_FIELDS if getattr(step, key) is not None}
    return _Step(
        kind=step.kind,
        start=epoch_ms(step.start),
        took=step.duration_ms,
        label=_label(step),
        event=event,
        error=step.error,
        usage=usage_of(raw_usage, ev_meta.get("usage")) if model else _inputs_only(usage_of(raw_usage)),
        cost=cost_of(getattr(step, "cost", None)) or cost_of(ev_meta.get("cost")),
        call_id=step.call_id,
        span_id=step.span_id,
        params=step.params if model else None,
        agent=step.parent,
        aside=aside if step.kind in ASIDE_KINDS else None,
    )


def _inputs_only(usage: dict[str, int] | None) -> dict[str, int] | None:
    """An embeddings call's tokens: what it was sent (it answers vectors, no tokens)."""
    return {k: v for k, v in usage.items() if k != "output_tokens" or v} if usage else None


def _aside_event(step: StepTime, events: list[Message]) -> int | None:
    """The event a step beside the conversation precedes, as its metadata records it, when the trace has it."""
    return step.event if step.event is not None and 0 <= step.event < len(events) else None


def _agent(raw: dict[str, Any]) -> _Step | None:
    """An agent of the metadata's ``agents`` as a row (None: a record without its span id)."""
    span, took, error, parent = raw.get("span_id"), raw.get("duration_ms"), raw.get("error"), raw.get("parent")
    if not isinstance(span, str):
        return None
    return _Step(
        kind="agent",
        start=epoch_ms(raw.get("start")),
        took=float(took) if isinstance(took, (int, float)) and not isinstance(took, bool) and took >= 0 else None,
        label=str(raw.get("name") or ""),
        event=None,
        error=error if isinstance(error, dict) else None,
        span_id=span,
        agent=parent if isinstance(parent, str) else None,
    )


def _from_events(events: list[Message]) -> list[_Step]:
    names = {c.id: c.name for ev in events for c in ev.tool_calls if c.id}
    out: list[_Step] = []
    for n, ev in enumerate(events):
        if ev.role not in ("assistant", "tool", "error"):
            continue
        took = ev.metadata.get("duration_ms")
        took = float(took) if isinstance(took, (int, float)) and not isinstance(took, bool) and took >= 0 else None
        end = epoch_ms(ev.timestamp)
        if end is None and took is None:
            continue
        tool = ev.role == "tool"
        model = ev.metadata.get("model")
        label = (ev.name or names.get(ev.tool_call_id or "") or ev.tool_call_id or "") if tool else str(model or "")
        error = ev.error or ({"type": "error"} if ev.role == "error" else None)
        out.append(
            _Step(
                kind="tool" if tool else "model",
                start=end - (took or 0.0) if end is not None else None,
                took=took,
                label=label,
                event=n,
                error=error,
                usage=None if tool else usage_of(ev.metadata.get("usage")),
                cost=cost_of(ev.metadata.get("cost")),
                call_id=ev.tool_call_id if tool else None,
            )
        )
    return out


def _nest(steps: list[_Step], events: list[Message], agents: list[_Step] | None = None) -> list[_Step]:
    """The top-level steps in the order they started, each model call's tool runs under it, and each step or agent
    that ran under one of ``agents`` under that agent."""
    asked: dict[str, _Step] = {}
    for step in steps:
        if step.kind == "model" and step.event is not None:
            for call in events[step.event].tool_calls:
                if call.id:
                    asked.setdefault(call.id, step)
    by_span = {a.span_id: a for a in agents or () if a.span_id}
    top: list[_Step] = []
    for step in sorted([*steps, *(agents or ())], key=_Step.sort_key):
        parent = None
        if step.kind == "tool":
            answered = events[step.event].tool_call_id if step.event is not None else None
            parent = asked.get(step.call_id or "") or asked.get(answered or "")
        if parent is None and step.agent is not None and step.agent != step.span_id:
            parent = by_span.get(step.agent)
        if parent is not None:
            parent.children.append(step)
        else:
            top.append(step)
    return top


def waterfall(trace: Trace) -> dict[str, Any]:
    """The waterfall of a run: ``origin`` (ISO time of offset 0), ``span_ms`` (the axis' length) and ``steps`` in the
    order they are drawn, each with its ``offset_ms``, ``duration_ms``, ``depth`` and ``parent`` (a position in
    ``steps``), ``event`` (its first event, from 0), tokens, cost and error; a model call's request parameters
    (``params``) when its metadata records them. An agent below the run's own (``kind`` ``agent``, its name the
    label) is a row too, the steps and agents that ran under it its children: no step of the run's count. A step
    beside the conversation (an embeddings call, a retrieval, a rerank, a memory operation) carries what its metadata
    records of it (:data:`ASIDE_FIELDS`: its store, ``top_k``, query, documents ...), an embeddings call its tokens;
    its ``event`` is the one it precedes."""
    events = trace.events
    agents: list[_Step] = []
    if trace.meta.steps:
        linked = {id(step): n for n, step in steps_by_event(trace.meta.steps, events).items()}
        steps = [
            _from_meta(s, _aside_event(s, events) if s.kind in ASIDE_KINDS else linked.get(id(s)), events)
            for s in trace.meta.steps
        ]
        agents = [a for a in map(_agent, trace.meta.agents) if a is not None]
    else:
        steps = _from_events(events)
    starts = [s.start for s in (*steps, *agents) if s.start is not None]
    origin = epoch_ms(trace.meta.start)
    if origin is None or (starts and min(starts) < origin):
        origin = min(starts) if starts else None
    ends = [s.start + (s.took or 0.0) for s in (*steps, *agents) if s.start is not None]
    run_end = origin + trace.meta.duration_ms if origin is not None and trace.meta.duration_ms is not None else None
    span = max([*ends, *([run_end] if run_end is not None else [])], default=None)
    out: list[dict[str, Any]] = []

    def place(step: _Step, depth: int, parent: int | None) -> None:
        here = len(out)
        item: dict[str, Any] = {
            "kind": step.kind,
            "label": step.label,
            "offset_ms": step.start - origin if step.start is not None and origin is not None else None,
            "duration_ms": step.took,
            "depth": depth,
            "parent": parent,
            "event": step.event,
            "usage": step.usage,
            "cost": step.cost,
            "error": step.error,
        }
        if step.call_id:
            item["call_id"] = step.call_id
        if step.span_id:
            item["span_id"] = step.span_id
        if step.params:
            item["params"] = step.params
        if step.aside:
            item.update(step.aside)
        out.append(item)
        for child in step.children:
            place(child, depth + 1, here)

    for step in _nest(steps, events, agents):
        place(step, 0, None)
    return {
        "origin": _iso(origin),
        "span_ms": max(span - origin, 0.0) if span is not None and origin is not None else None,
        "steps": out,
    }


def _iso(ms: float | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000.0, tz=timezone.utc).isoformat(timespec="microseconds")[:-6] + "Z"

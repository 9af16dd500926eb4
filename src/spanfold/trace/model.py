"""The flat trace: plain typed data shared by the exporter, the writers, the CLI and the checks.

A :class:`Trace` is an ordered list of :class:`Message` events in the Invariant shape (a message with
optional tool calls, or a tool output), plus trace-level :class:`TraceMeta` that never mixes into the
events. No OpenTelemetry imports here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from spanfold.codecs import jsonio
from spanfold.trace.scores import Score

#: AgentV event metadata flag written by :mod:`spanfold.trace.formats` on a timestamp it had to fill in (and read
#: back by :mod:`spanfold.trace.decode`).
TIMESTAMP_INFERRED = "timestamp_inferred"

JSON: TypeAlias = Any
#: Message content: a string, a list of chunks ``{"type": "text", "text": ...}`` /
#: ``{"type": "image", "image_url": ...}``, or None (no content, or content capture off).
Content: TypeAlias = "str | list[dict[str, Any]] | None"

#: How a run ended, as its metadata says: ``complete`` (normally), ``error`` (its last step failed, or it was
#: interrupted: :attr:`TraceMeta.error` says with what), ``incomplete`` (written before it was done), ``truncated``
#: (spans were dropped).
TraceStatus = Literal["complete", "error", "incomplete", "truncated"]
STATUSES: tuple[TraceStatus, ...] = ("complete", "error", "incomplete", "truncated")


@dataclass(slots=True)
class ToolCall:
    """A tool call made by the model. ``arguments`` is a dict, or the raw string when it is not JSON."""

    id: str | None
    name: str
    arguments: dict[str, Any] | str | None = None
    type: str = "function"

    def to_invariant(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "type": self.type, "function": {"name": self.name}}
        out["function"]["arguments"] = self.arguments if self.arguments is not None else {}
        if self.id is None:
            del out["id"]
        return out


@dataclass(slots=True)
class Message:
    """One event: a user/system/assistant message, a tool output (``role="tool"``) or an error.

    ``error`` is set on a failed tool output (``role="tool"``) and on an ``role="error"`` event (a model
    call that failed): ``{"type": ..., "message": ...}``. ``timestamp`` is ISO 8601 (UTC) when known.
    ``name`` is the tool name on tool outputs. ``metadata`` holds per-event extras (model, usage, span id)
    that the Invariant line never carries.
    """

    role: str
    content: Content = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    error: dict[str, Any] | None = None
    timestamp: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        """The content as plain text (chunks joined; images left out)."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(str(c.get("text", "")) for c in self.content if c.get("type") == "text")

    def to_invariant(self, *, timestamps: bool = False) -> dict[str, Any]:
        """This event exactly as the Invariant trace format writes it."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [tc.to_invariant() for tc in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.error is not None:
            out["error"] = self.error
        if timestamps and self.timestamp is not None:
            out["timestamp"] = self.timestamp
        return out


@dataclass(slots=True)
class Usage:
    """Tokens of a model call, or of a run. As the GenAI conventions count them, ``input_tokens`` includes the tokens
    read from and written to a provider's cache, and ``output_tokens`` the reasoning tokens."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.reasoning_tokens += other.reasoning_tokens

    def to_dict(self) -> dict[str, int]:
        """``input_tokens`` and ``output_tokens``, and each of the others that is not 0."""
        out = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        for key in _USAGE_DETAILS:
            value: int = getattr(self, key)
            if value:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Usage:
        """The inverse of :meth:`to_dict` (a count of the wrong type reads as 0)."""
        return cls(*(_int(raw.get(key)) for key in ("input_tokens", "output_tokens", *_USAGE_DETAILS)))


_USAGE_DETAILS = ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens")

#: The kinds a cost is split by: ``input`` (input tokens at the input price: not read from or written to a cache),
#: ``cache_read``, ``cache_write``, ``output`` (output tokens that are not reasoning), ``reasoning``, and ``other``
#: (what a price charges besides tokens, such as a fee per request).
COST_KINDS = ("input", "cache_read", "cache_write", "output", "reasoning", "other")


def _amounts(raw: Any) -> dict[str, float]:
    """A ``{name: amount}`` record (an amount that is not a finite number is left out)."""
    if not isinstance(raw, dict):
        return {}
    return {str(k): number for k, v in raw.items() if (number := finite_number(v)) is not None}


@dataclass(slots=True)
class StepCost:
    """What one model call cost: ``amount`` in ``currency`` (ISO 4217), its ``source`` as the GenAI conventions name
    it (``local``: computed by the recorder; ``provider``: stated by whoever answered the call), who priced it
    (``priced_by``: ``genai-prices``, the user's ``override``, or ``reported``: the span stated it, as LiteLLM's
    ``response_cost``), and the amount by kind of token (:data:`COST_KINDS`, the kinds the call used; empty when the
    cost was stated whole)."""

    amount: float
    currency: str = "USD"
    source: str | None = "local"
    priced_by: str | None = None
    by_kind: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"amount": self.amount, "currency": self.currency}
        if self.source is not None:
            out["source"] = self.source
        if self.priced_by is not None:
            out["priced_by"] = self.priced_by
        if self.by_kind:
            out["by_kind"] = self.by_kind
        return out

    @classmethod
    def from_dict(cls, raw: Any) -> StepCost | None:
        """The inverse of :meth:`to_dict`; None when ``raw`` states no amount and currency."""
        if not isinstance(raw, dict):
            return None
        amount, currency = finite_number(raw.get("amount")), raw.get("currency")
        if amount is None or not isinstance(currency, str):
            return None
        return cls(amount, currency, _str(raw.get("source")), _str(raw.get("priced_by")), _amounts(raw.get("by_kind")))


@dataclass(slots=True)
class RunCost:
    """What a run's model calls cost together: ``total`` in ``currency``, by kind of token (:data:`COST_KINDS`) and
    by model; ``unpriced_steps``: model calls that reported tokens but no price covers (not in the total)."""

    total: float
    currency: str = "USD"
    by_kind: dict[str, float] = field(default_factory=dict)
    by_model: dict[str, float] = field(default_factory=dict)
    unpriced_steps: int = 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"total": self.total, "currency": self.currency}
        if self.by_kind:
            out["by_kind"] = self.by_kind
        if self.by_model:
            out["by_model"] = self.by_model
        if self.unpriced_steps:
            out["unpriced_steps"] = self.unpriced_steps
        return out

    @classmethod
    def from_dict(cls, raw: Any) -> RunCost | None:
        """The inverse of :meth:`to_dict`; None when ``raw`` states no total and currency."""
        if not isinstance(raw, dict):
            return None
        total, currency = finite_number(raw.get("total")), raw.get("currency")
        if total is None or not isinstance(currency, str):
            return None
        by_kind, by_model = _amounts(raw.get("by_kind")), _amounts(raw.get("by_model"))
        return cls(total, currency, by_kind, by_model, _int(raw.get("unpriced_steps")))


#: The steps beside the conversation (embeddings, retrieval, rerank, memory), and every kind of step.
ASIDE_KINDS: Final = ("embeddings", "retrieval", "rerank", "memory")
STEP_KINDS: Final = ("model", "tool", *ASIDE_KINDS)


@dataclass(slots=True)
class StepTime:
    """One model call (``kind="model"``) or tool run (``kind="tool"``) of a trace, for a waterfall: when it started,
    how long it took, its model, tokens and cost or its tool and call id, its error. ``event``: where (from 0) the
    step's first event is in the trace's event list (a model call's output or error, a tool run's output), when it has
    one.

    A step beside the conversation (:data:`ASIDE_KINDS`: ``embeddings``, ``retrieval``, ``rerank``, ``memory``) has no
    event of its own: its ``event`` is the one it precedes (the first event written after it). An embeddings call has
    its ``model``, ``usage``, ``cost`` and ``inputs`` (how many); a retrieval or rerank its ``store``, ``top_k``,
    ``query`` (with content capture on) and ``documents`` (``[{"id", "score", "text"?}]``, as the store returned
    them); a memory operation its ``operation`` (``search_memory`` ...), ``store``, ``query`` and ``documents``.
    A model call's ``params``: the request parameters its span states (``{"temperature": 0.2, "max_tokens": 50}``:
    the conventions' ``gen_ai.request.*``, named after that prefix), when it states any. ``parent``: the span of the
    agent it ran under, when that is one of the run's :attr:`TraceMeta.agents` (not the run's root agent).
    """

    kind: str
    start: str | None = None  # ISO 8601
    duration_ms: float | None = None
    model: str | None = None
    usage: Usage | None = None
    name: str | None = None  # a tool run's tool
    call_id: str | None = None
    error: dict[str, Any] | None = None  # {"type", "message"}
    span_id: str | None = None
    event: int | None = None
    cost: StepCost | None = None  # a model call's (or an embeddings call's), when it was priced
    inputs: int | None = None
    store: str | None = None
    top_k: int | None = None
    query: str | None = None
    documents: list[dict[str, Any]] | None = None
    operation: str | None = None
    params: dict[str, Any] | None = None  # a model call's request parameters, as its span states them
    parent: str | None = None  # the span id of the agent it ran under (one of TraceMeta.agents)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "start": self.start, "duration_ms": self.duration_ms}
        if self.kind == "model" or self.kind == "embeddings":
            out["model"] = self.model
            if self.params:
                out["params"] = self.params
            if self.usage is not None:
                out["usage"] = self.usage.to_dict()
            if self.cost is not None:
                out["cost"] = self.cost.to_dict()
            if self.inputs is not None:
                out["inputs"] = self.inputs
        elif self.kind == "tool":
            out["name"] = self.name
            out["call_id"] = self.call_id
        else:
            aside = {"operation": self.operation, "model": self.model, "store": self.store, "top_k": self.top_k}
            out.update((k, v) for k, v in aside.items() if v is not None)
            if self.query is not None:
                out["query"] = self.query
            if self.documents is not None:
                out["documents"] = self.documents
        if self.error is not None:
            out["error"] = self.error
        if self.span_id is not None:
            out["span_id"] = self.span_id
        if self.parent is not None:
            out["parent"] = self.parent
        if self.event is not None:
            out["event"] = self.event
        return out

    @classmethod
    def from_dict(cls, raw: Any) -> StepTime | None:
        """The inverse of :meth:`to_dict` (a field of the wrong type is left out; None: not a step at all)."""
        if not isinstance(raw, dict) or raw.get("kind") not in STEP_KINDS:
            return None
        usage = raw.get("usage")
        documents = raw.get("documents")
        params = raw.get("params")
        top_k = raw.get("top_k")
        inputs = raw.get("inputs")
        error = raw.get("error")
        event = raw.get("event")
        took = finite_number(raw.get("duration_ms"))
        return cls(
            kind=raw["kind"],
            start=_str(raw.get("start")),
            duration_ms=took if took is None or took >= 0 else None,
            model=_str(raw.get("model")),
            usage=Usage.from_dict(usage) if isinstance(usage, dict) else None,
            name=_str(raw.get("name")),
            call_id=_str(raw.get("call_id")),
            error=error if isinstance(error, dict) else None,
            span_id=_str(raw.get("span_id")),
            event=event if isinstance(event, int) and not isinstance(event, bool) and event >= 0 else None,
            cost=StepCost.from_dict(raw.get("cost")),
            inputs=inputs if isinstance(inputs, int) and not isinstance(inputs, bool) else None,
            store=_str(raw.get("store")),
            top_k=top_k if isinstance(top_k, int) and not isinstance(top_k, bool) else None,
            query=_str(raw.get("query")),
            documents=[d for d in documents if isinstance(d, dict)] if isinstance(documents, list) else None,
            operation=_str(raw.get("operation")),
            params=params if isinstance(params, dict) and params else None,
            parent=_str(raw.get("parent")),
        )


#: Who a run is for and what it belongs to (``spanfold.context``; read off other producers' spans too): the metadata
#: keys, each written only when set: ``user_id`` and ``session_id`` (text), ``tags`` (a list of text), ``metadata``
#: (an object), ``prompt`` (``{"name", "version"}``). In :attr:`TraceMeta.extra`; :meth:`TraceMeta.context`.
CONTEXT_KEYS = ("user_id", "session_id", "tags", "metadata", "prompt")


@dataclass(slots=True)
class TraceMeta:
    """Trace-level facts, written beside the events (never inside them)."""

    trace_id: str
    name: str | None = None  # agent name, when the run had an invoke_agent root
    service: str | None = None
    models: list[str] = field(default_factory=list)
    #: The token totals of the model calls that reported their tokens (:attr:`usage_known`: whether any did).
    usage: Usage = field(default_factory=Usage)
    start: str | None = None  # ISO 8601
    end: str | None = None
    duration_ms: float | None = None
    status: TraceStatus = "complete"
    #: What the run ended with, when its status is ``error`` (``{"type", "message"}``; written only then).
    error: dict[str, Any] | None = None
    span_count: int = 0
    #: How many leading events the run was handed (the history its first call sent: earlier turns, the question),
    #: not produced; the rest its steps produced. None: not known (a trace written without it).
    handed: int | None = None
    #: Each model call and tool run, in the order they started (written when there are any).
    steps: list[StepTime] = field(default_factory=list)
    #: Model calls that reported no tokens (a stream sent without ``include_usage``, a failed call): not in
    #: :attr:`usage`, written as ``usage.unreported_steps`` when there are some.
    unreported_steps: int = 0
    #: Whether the token totals are known: False when model calls ran and none reported tokens (``usage`` then holds
    #: no totals: ``{"unreported_steps": n}``), never 0 for unknown.
    usage_known: bool = True
    #: How many steps the metadata lists (``len(steps)``), kept when a reader leaves the steps out (``steps=False``);
    #: None: not known (metadata without a ``steps`` list).
    step_count: int | None = None
    #: Extra facts: the OTel trace ids a stitched run spans, truncation counters, what the run cost (``cost``: a
    #: :class:`RunCost` record, :attr:`run_cost`; ``cost_usd``: its total in US dollars, AgentV's name, when every
    #: model call that reported tokens was priced), ...
    extra: dict[str, Any] = field(default_factory=dict)
    #: The scores given to the run after it ended (``spanfold.score``), in the order written: read from the trace
    #: directory's ``traces.scores.jsonl`` by :mod:`spanfold.trace.read`, never written in the metadata line.
    scores: list[Score] = field(default_factory=list)

    def context(self) -> dict[str, Any]:
        """Who the run is for and what it belongs to, as its metadata states it (:data:`CONTEXT_KEYS` present)."""
        return {key: self.extra[key] for key in CONTEXT_KEYS if self.extra.get(key) is not None}

    @property
    def providers(self) -> list[str]:
        """The providers the run's model and embeddings calls went to, as its metadata records them (``providers``:
        each call's ``gen_ai.provider.name``, else ``gen_ai.system``; sorted), empty when it records none."""
        providers = self.extra.get("providers") if self.extra else None
        return [p for p in providers if isinstance(p, str) and p] if isinstance(providers, list) else []

    @property
    def agents(self) -> list[dict[str, Any]]:
        """The agents the run ran below its root agent (handoffs, sub-agents), as its metadata records them
        (``agents``: ``{"name", "start", "duration_ms", "span_id", "parent"?, "error"?}`` each, in the order they
        started; a step's :attr:`StepTime.parent` names one); empty when it records none. No step: not counted."""
        agents = self.extra.get("agents") if self.extra else None
        return [a for a in agents if isinstance(a, dict)] if isinstance(agents, list) else []

    @property
    def run_cost(self) -> RunCost | None:
        """What the run's model calls cost, as its metadata records it (``cost``), or None."""
        return RunCost.from_dict(self.extra.get("cost"))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "trace_id": self.trace_id,
            "name": self.name,
            "service": self.service,
            "models": self.models,
            "usage": self.usage_dict(),
            "start": self.start,
            "end": self.end,
            "duration_ms": self.duration_ms,
            "status": self.status,
        }
        if self.error is not None:
            out["error"] = self.error
        out["span_count"] = self.span_count
        if self.handed is not None:
            out["handed"] = self.handed
        if self.steps:
            out["steps"] = [step.to_dict() for step in self.steps]
        out.update(self.extra)
        return out

    def usage_dict(self) -> dict[str, int]:
        """``usage`` as the metadata writes it: the totals when known, and the model calls that reported no tokens
        (``unreported_steps``) when there are some."""
        out = self.usage.to_dict() if self.usage_known else {}
        if self.unreported_steps:
            out["unreported_steps"] = self.unreported_steps
        return out

    @property
    def steps_taken(self) -> int | None:
        """The run's steps: how many model calls and tool runs it took (the steps beside the conversation, embeddings
        or retrievals, are not counted); None when the metadata does not say."""
        if self.steps:
            return sum(1 for step in self.steps if step.kind in ("model", "tool"))
        return self.step_count

    @classmethod
    def from_dict(cls, raw: dict[str, Any], *, steps: bool = True) -> TraceMeta:
        """The inverse of :meth:`to_dict`; a field of the wrong type is left at its default, unknown keys go to
        :attr:`extra`. ``steps=False``: without the steps (what a list of many traces holds of each)."""
        usage = raw.get("usage")
        tokens = usage if isinstance(usage, dict) else {}
        status = raw.get("status")
        models = raw.get("models")
        error = raw.get("error")
        listed = raw.get("steps") if steps else None
        counted = raw.get("steps")
        handed = raw.get("handed")
        return cls(
            trace_id=_str(raw.get("trace_id")) or "",
            name=_str(raw.get("name")),
            service=_str(raw.get("service")),
            models=[str(m) for m in models] if isinstance(models, list) else [],
            usage=Usage.from_dict(tokens),
            start=_str(raw.get("start")),
            end=_str(raw.get("end")),
            duration_ms=finite_number(raw.get("duration_ms")),
            status=status if status in STATUSES else "complete",
            error=error if isinstance(error, dict) else None,
            span_count=_int(raw.get("span_count")),
            handed=handed if isinstance(handed, int) and not isinstance(handed, bool) and handed >= 0 else None,
            steps=[s for s in map(StepTime.from_dict, listed) if s is not None] if isinstance(listed, list) else [],
            unreported_steps=_int(tokens.get("unreported_steps")),
            # unknown only as the metadata writes it: model calls without tokens and no totals
            usage_known="input_tokens" in tokens
            or "output_tokens" in tokens
            or not _int(tokens.get("unreported_steps")),
            step_count=sum(1 for step in counted if isinstance(step, dict) and step.get("kind") in ("model", "tool"))
            if isinstance(counted, list)
            else None,
            extra={k: v for k, v in raw.items() if k not in _META_KEYS},
        )


_META_KEYS = frozenset(
    (
        "trace_id",
        "name",
        "service",
        "models",
        "usage",
        "start",
        "end",
        "duration_ms",
        "status",
        "error",
        "span_count",
        "handed",
        "steps",
    )
)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def finite_number(value: Any) -> float | None:
    """A finite number (``NaN``, ``Infinity`` and ``1e999``, which Python's JSON reader accepts, read as absent)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer too big for a float
        return None
    return number if math.isfinite(number) else None


@dataclass(slots=True)
class Trace:
    """A folded run: ordered events plus metadata."""

    events: list[Message]
    meta: TraceMeta

    def to_invariant(self, *, timestamps: bool = False) -> list[dict[str, Any]]:
        return [e.to_invariant(timestamps=timestamps) for e in self.events]

    def tool_calls(self) -> list[ToolCall]:
        return [tc for e in self.events for tc in e.tool_calls]

    def produced(self) -> list[Message]:
        """The events the run produced (after those it was handed, :attr:`TraceMeta.handed`)."""
        handed = self.meta.handed
        return self.events[handed:] if handed else self.events

    def summary(self) -> TraceSummary:
        """AgentV's summary: every event counted, and the tool calls the run made (not those of its history)."""
        return TraceSummary.of(self.events, self.meta.handed or 0)


@dataclass(slots=True)
class TraceSummary:
    """AgentV's TraceSummary: computable from any trace."""

    event_count: int
    tool_names: list[str]
    tool_calls_by_name: dict[str, int]
    error_count: int

    @classmethod
    def of(cls, events: list[Message], handed: int = 0) -> TraceSummary:
        """The summary of ``events``, whose first ``handed`` were the run's history: their tool calls were not the
        run's (they count as events, not as calls)."""
        # Each tool call and each tool output is an AgentV event of its own; a message with tool calls and no text
        # is only its calls; an error event is an event and an error.
        counts: dict[str, int] = {}
        n_events = errors = 0
        for n, e in enumerate(events):
            calls = e.tool_calls
            if calls:
                if n >= handed:
                    for tc in calls:
                        counts[tc.name] = counts.get(tc.name, 0) + 1
                n_events += len(calls)
                if e.role in ("tool", "error") or e.content:
                    n_events += 1
            else:
                n_events += 1
            if e.error is not None or e.role == "error":
                errors += 1
        names = sorted(counts)
        return cls(
            event_count=n_events,
            tool_names=names,
            tool_calls_by_name={name: counts[name] for name in names},
            error_count=errors,
        )

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> TraceSummary:
        """AgentV's camelCase record (fields of the wrong type read as empty)."""
        names = raw.get("toolNames")
        by_name = raw.get("toolCallsByName")
        return cls(
            event_count=_int(raw.get("eventCount")),
            tool_names=[str(n) for n in names] if isinstance(names, list) else [],
            tool_calls_by_name={str(k): _int(v) for k, v in by_name.items()} if isinstance(by_name, dict) else {},
            error_count=_int(raw.get("errorCount")),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "eventCount": self.event_count,
            "toolNames": self.tool_names,
            "toolCallsByName": self.tool_calls_by_name,
            "errorCount": self.error_count,
        }


def parse_arguments(raw: Any) -> dict[str, Any] | str | None:
    """Tool-call arguments as a dict when they are a JSON object, else kept as given (a string)."""
    if raw is None or isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = jsonio.loads(raw)
        except ValueError:
            return raw
        return value if isinstance(value, dict) else raw
    return str(raw)

"""Trace metadata, beside the events (DESIGN "Export formats"): the models a trace used, its token totals, start,
end and duration, its service and name, how it ended (its status, and the error it ended with), what it cost, and each
model call's and tool run's start, duration, model, tokens, cost and error (a waterfall); and the metadata an event
gets from its model step.

Tokens a model call did not report (a stream sent without ``include_usage``, a failed call) are unknown, never 0: the
run's ``usage`` totals the calls that reported theirs and counts the others (``usage.unreported_steps``); when none
reported any, ``usage`` holds no totals at all. The run's steps are its ``steps`` entries, one per model call and tool
run: the one count of steps every reader shows.

A run ended with an error (status ``error``) when a root agent span failed (an exception, Ctrl-C's
``KeyboardInterrupt`` too, left the run) or its last step (the one that ended last) failed; else normally
(``complete``). Written before it was done (``incomplete``) or with spans dropped (``truncated``) is the run's to say
(:attr:`~spanfold.exporter.runs.run.Run.status`), and the less complete of the two is the trace's
(:func:`~spanfold.exporter.runs.run.worst`).

Who the run is for and what it belongs to (``spanfold.context``, ``spanfold.agent``'s keywords, OpenInference's
``using_session`` / ``using_user`` / ``using_tags`` / ``using_metadata``, Langfuse's ``propagate_attributes``), read
off its spans: ``user_id``, ``session_id``, ``tags``, ``metadata``, ``prompt`` (:class:`_RunContext`), only those set.

What the run cost (:mod:`~.cost`): ``cost`` (the total, by kind of token and by model, and how many model calls that
reported tokens no price covers) and, when every one was priced in US dollars, ``cost_usd`` (the total, as AgentV
names it); each model step's ``cost`` in ``steps``.

The stage after the fold: the fold tallies a trace's steps as it takes them (:class:`Tally`) and ends with
:func:`run_meta` (a run) or :func:`trace_meta` (one trace's spans); the event metadata (:func:`step_metadata`,
:func:`iso`, :func:`span_hex`) it reads as it goes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Final

from spanfold import semconv
from spanfold.codecs import jsonio
from spanfold.exporter.fold.cost import Costs, annotate
from spanfold.exporter.records import SpanRecord
from spanfold.exporter.runs.run import Run, worst
from spanfold.exporter.steps import AgentSpan, AsideStep, ModelStep, ToolStep
from spanfold.pricing.overrides import PriceOverrides
from spanfold.trace.model import StepTime, TraceMeta, Usage


@lru_cache(maxsize=256)  # the steps of a run, and runs close in time, share their second
def _second(sec: int) -> str:
    """``2025-01-31T12:00:00``: a second since the epoch, UTC."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))


@lru_cache(maxsize=4096)  # the events of one step share its timestamp
def iso(ns: int) -> str:
    """ISO 8601 UTC with milliseconds: ``2025-01-31T12:00:00.123Z``."""
    sec, rem = divmod(ns, 1_000_000_000)
    return f"{_second(sec)}.{rem // 1_000_000:03d}Z"


@lru_cache(maxsize=4096)  # every event of a step names its span
def span_hex(span_id: int) -> str:
    return format(span_id, "016x")


def trace_hex(trace_id: int) -> str:
    return format(trace_id, "032x")


def step_metadata(step: ModelStep) -> dict[str, Any]:
    """What a model step's first output event (and its error event) carries: span, model, provider, response id,
    finish reasons, usage."""
    meta: dict[str, Any] = {"span_id": span_hex(step.span_id)}
    if step.model:
        meta["model"] = step.model
    if step.provider:
        meta["provider"] = step.provider
    if step.response_id:
        meta["response_id"] = step.response_id
    if step.finish_reasons:
        meta["finish_reasons"] = step.finish_reasons
    if step.usage is not None:
        meta["usage"] = {"input_tokens": step.usage.input_tokens, "output_tokens": step.usage.output_tokens}
    return meta


class Tally:
    """The steps of a trace as the fold takes them (model calls and tool runs), and its models and token totals;
    ``prices``: the user's, over the table's, for what the steps cost."""

    __slots__ = ("models", "prices", "reported", "steps", "unreported", "usage")

    def __init__(self, prices: PriceOverrides | None = None) -> None:
        self.models: set[str] = set()
        self.usage = Usage()
        self.reported = 0  # model calls that reported their tokens
        self.unreported = 0  # model calls that did not: unknown, never counted as 0
        self.steps: list[ModelStep | ToolStep | AsideStep] = []
        self.prices = prices

    def add(self, step: ModelStep | ToolStep | AsideStep) -> None:
        """A step taken (an embeddings call's tokens are its own and its cost the run's, never the model calls'
        token totals)."""
        self.steps.append(step)
        if isinstance(step, ModelStep):
            if step.model:
                self.models.add(step.model)
            if step.usage is not None:
                self.usage.add(step.usage)
                self.reported += 1
            else:
                self.unreported += 1


def _error(error: dict[str, Any] | None) -> dict[str, Any] | None:
    """``{"type", "message"}`` of a step's or an agent's error (the message only when there is one)."""
    if error is None:
        return None
    out: dict[str, Any] = {"type": str(error.get("type") or "error")}
    if error.get("message"):
        out["message"] = str(error["message"])
    return out


def iso_micro(ns: int) -> str:
    """ISO 8601 UTC with microseconds: ``2025-01-31T12:00:00.123456Z`` (a step's start: steps a few microseconds
    apart stay in order)."""
    sec, rem = divmod(ns, 1_000_000_000)
    return f"{_second(sec)}.{rem // 1_000:06d}Z"


def _aside(step: AsideStep, out: StepTime, costs: Costs | None) -> StepTime:
    """An embeddings call, retrieval, rerank or memory operation as the metadata lists it."""
    out.kind, out.model, out.operation = step.kind, step.model, step.operation
    out.inputs, out.store, out.top_k, out.query, out.documents = (
        step.inputs,
        step.store,
        step.top_k,
        step.query,
        step.documents,
    )
    if step.usage is not None:
        out.usage = Usage(step.usage.input_tokens, step.usage.output_tokens)
        if costs is not None:
            out.cost = costs.price(step)
    return out


def step_time(step: ModelStep | ToolStep | AsideStep, costs: Costs | None = None) -> StepTime:
    """A step as the metadata lists it (its start and its duration to the microsecond; a model call's cost, priced
    by ``costs``; an embeddings call's alike)."""
    took = round(max(step.end_ns - step.start_ns, 0) / 1e6, 3)
    out = StepTime("tool", iso_micro(step.start_ns), took, error=_error(step.error), span_id=span_hex(step.span_id))
    if isinstance(step, AsideStep):
        return _aside(step, out, costs)
    if isinstance(step, ModelStep):
        out.kind, out.model = "model", step.model
        if step.usage is not None:
            usage = step.usage
            out.usage = Usage(
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens,
                usage.reasoning_tokens,
            )
        if costs is not None:
            out.cost = costs.price(step)
    else:
        out.name, out.call_id = step.name, step.call_id
    return out


def ending_error(
    roots: Sequence[AgentSpan], steps: Sequence[ModelStep | ToolStep | AsideStep]
) -> dict[str, Any] | None:
    """What the run ended with: the error of a root agent that failed (the last one to end), else the error of the
    step that ended last, else None (it ended normally)."""
    failed = [a for a in roots if a.error is not None]
    if failed:
        return _error(max(failed, key=lambda a: (a.end_ns, a.span_id)).error)
    last = max(steps, key=lambda s: (s.end_ns, s.span_id), default=None)
    return _error(last.error) if last is not None else None


def trace_meta(trace_id: str, records: Sequence[SpanRecord], roots: Sequence[AgentSpan], tally: Tally) -> TraceMeta:
    """A trace's metadata: span count, start, end and duration, service (of its first span's resource), name (the
    earliest root agent's), models and token totals, how it ended (status ``error`` and the error, or ``complete``),
    its steps in the order they started (each names its span: the writers find its first event by it,
    :func:`spanfold.trace.formats.meta_dict`), and what it cost."""
    meta = TraceMeta(trace_id=trace_id, span_count=len(records))
    if records:
        start = min([r.start_ns for r in records])
        end = max([r.end_ns for r in records])
        meta.start, meta.end, meta.duration_ms = iso(start), iso(end), (end - start) / 1e6
        service = records[0].resource.get(semconv.SERVICE_NAME)
        meta.service = str(service) if service is not None else None
    if roots:
        meta.name = min(roots, key=lambda a: (a.start_ns, a.span_id)).name
    meta.models = sorted(tally.models)
    meta.usage = tally.usage
    meta.unreported_steps = tally.unreported
    meta.usage_known = tally.reported > 0 or not tally.unreported
    ordered = sorted(tally.steps, key=lambda s: (s.start_ns, s.end_ns, s.span_id))
    costs = Costs(tally.prices)
    meta.steps = [step_time(step, costs) for step in ordered]
    cost = costs.run()
    if cost is not None:
        meta.extra["cost"] = cost.to_dict()
        if cost.currency == "USD" and not cost.unpriced_steps:
            meta.extra["cost_usd"] = cost.total
    meta.error = ending_error(roots, ordered)
    if meta.error is not None:
        meta.status = "error"
    meta.extra.update(_who(records, roots))
    for record in records:  # a span spanfold ended as the process stopped: the run was cut short, and by what
        stopped = record.attributes.get(semconv.SPANFOLD_ENDED_BY)
        if isinstance(stopped, str):  # incomplete, not failed: its error says what stopped it
            meta.status = "truncated" if meta.status == "truncated" else "incomplete"
            meta.extra["ended_by"] = stopped
            break
    return meta


#: The span attributes that name the end user, newest first (``enduser.id`` is the older convention's; Langfuse's older
#: SDKs' own name last).
_USER_ID_ATTRIBUTES: Final = (semconv.USER_ID, semconv.ENDUSER_ID, semconv.LANGFUSE_USER_ID)
#: The span attributes that name the session (OpenInference's, which Langfuse reads too; Langfuse's older name).
_SESSION_ID_ATTRIBUTES: Final = (semconv.OPENINFERENCE_SESSION_ID, semconv.LANGFUSE_SESSION_ID)
_TAG_ATTRIBUTES: Final = (semconv.OPENINFERENCE_TAGS, semconv.LANGFUSE_TRACE_TAGS)
_METADATA_ATTRIBUTES: Final = (semconv.OPENINFERENCE_METADATA, semconv.LANGFUSE_TRACE_METADATA)
_PROMPT_ATTRIBUTES: Final = (
    (semconv.PROMPT_NAME, semconv.PROMPT_VERSION),
    (semconv.LANGFUSE_PROMPT_NAME, semconv.LANGFUSE_PROMPT_VERSION),
)


def _first_text(attrs: Any, keys: tuple[str, ...]) -> str | None:
    return next((attrs[k] for k in keys if isinstance(attrs.get(k), str) and attrs[k]), None)


class _RunContext:
    """Who a run is for and what it belongs to, as its spans say (``spanfold.context`` writes them; OpenInference's
    ``using_*`` and Langfuse's ``propagate_attributes`` too), gathered over the spans in the order they started: the
    first span that names a user, a session or a prompt names the run's (the outermost context: the run's own);
    tags add up (no repeats, in order); each metadata key is the first span's that states it."""

    __slots__ = ("_parsed", "metadata", "prompt", "session_id", "tags", "user_id")

    def __init__(self) -> None:
        self.user_id: str | None = None
        self.session_id: str | None = None
        self.tags: list[str] = []
        self.metadata: dict[str, Any] = {}
        self.prompt: dict[str, str] | None = None
        self._parsed: dict[str, Any] = {}  # JSON text -> its value: every span of a context carries the same text

    def _json(self, text: str) -> Any:
        if text not in self._parsed:
            try:
                self._parsed[text] = jsonio.loads(text)
            except ValueError:
                self._parsed[text] = None
        return self._parsed[text]

    def read(self, attrs: Any) -> None:
        if self.user_id is None:
            self.user_id = _first_text(attrs, _USER_ID_ATTRIBUTES)
        if self.session_id is None:
            self.session_id = _first_text(attrs, _SESSION_ID_ATTRIBUTES)
        if self.prompt is None:
            for name_key, version_key in _PROMPT_ATTRIBUTES:
                name = attrs.get(name_key)
                if isinstance(name, str) and name:
                    version = attrs.get(version_key)
                    self.prompt = {"name": name}
                    if isinstance(version, (str, int)) and not isinstance(version, bool) and version != "":
                        self.prompt["version"] = str(version)
                    break
        for key in _TAG_ATTRIBUTES:
            tags = attrs.get(key)
            if isinstance(tags, str):  # a producer that writes the list as JSON text
                tags = self._json(tags)
            if isinstance(tags, (list, tuple)):
                self.tags.extend(t for t in tags if isinstance(t, str) and t and t not in self.tags)
        found = False
        for key in _METADATA_ATTRIBUTES:
            raw = attrs.get(key)
            value = self._json(raw) if isinstance(raw, str) else None
            if isinstance(value, dict):
                found = True
                for name, item in value.items():
                    self.metadata.setdefault(str(name), item)
        if not found:  # Langfuse's SDKs: one attribute per key (spanfold writes the JSON too: read once, above)
            prefix = semconv.LANGFUSE_TRACE_METADATA_PREFIX
            for key, item in attrs.items():
                if key.startswith(prefix) and len(key) > len(prefix):
                    self.metadata.setdefault(key[len(prefix) :], item)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.user_id is not None:
            out["user_id"] = self.user_id
        if self.session_id is not None:
            out["session_id"] = self.session_id
        if self.tags:
            out["tags"] = self.tags
        if self.metadata:
            out["metadata"] = {k: list(v) if isinstance(v, tuple) else v for k, v in self.metadata.items()}
        if self.prompt is not None:
            out["prompt"] = self.prompt
        return out


def _who(records: Sequence[SpanRecord], roots: Sequence[AgentSpan]) -> dict[str, Any]:
    """The run's root agent span (``root_span_id``), the conversation the run belongs to, and who it is for and what
    it belongs to, as the application or framework named them: ``conversation_id`` (the earliest root agent's
    ``gen_ai.conversation.id``, else the first span that carries one), ``user_id``, ``session_id``, ``tags``,
    ``metadata``, ``prompt`` (``{"name", "version"}``): :class:`_RunContext`. So runs can be grouped by session, user,
    tag and prompt. Nothing is made up: absent, not written."""
    out: dict[str, Any] = {}
    if roots:  # the run's root span, where a backend shows what is said of the whole run (a check's outcome)
        out["root_span_id"] = span_hex(min(roots, key=lambda a: (a.start_ns, a.span_id)).span_id)
    named = [a for a in roots if a.conversation_id]
    if named:
        out["conversation_id"] = min(named, key=lambda a: (a.start_ns, a.span_id)).conversation_id or ""
    context = _RunContext()
    for record in sorted(records, key=lambda r: (r.start_ns, r.span_id)):
        attrs = record.attributes
        if "conversation_id" not in out and isinstance(attrs.get(semconv.CONVERSATION_ID), str):
            out["conversation_id"] = attrs[semconv.CONVERSATION_ID]
        context.read(attrs)
    out.update(context.to_dict())
    return out


def run_meta(run: Run, roots: Sequence[AgentSpan], tally: Tally) -> TraceMeta:
    """A run's metadata (:func:`trace_meta`, named after its first trace, and its run's id when that trace holds
    other runs too: ``<trace id>-<run id>``): its status the less complete of the run's and the one the fold found
    (an error is kept); a stitched run's, or one sharing its trace, lists its OTel trace ids (``otel_trace_ids``).
    Each model step priced here gets its cost on its span too (:func:`~.cost.annotate`), for a writer of spans."""
    first = trace_hex(run.trace_ids[0])
    meta = trace_meta(first if run.run_id is None else f"{first}-{run.run_id}", run.records, roots, tally)
    annotate(run.records, meta.steps)
    meta.status = worst(meta.status, run.status)
    if run.stitched or run.run_id is not None:
        meta.extra["otel_trace_ids"] = [trace_hex(t) for t in run.trace_ids]
    return meta

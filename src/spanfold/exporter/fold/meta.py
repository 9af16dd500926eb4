"""Trace metadata, beside the events (DESIGN "Export formats"): the models a trace used, its token totals, start,
end and duration, its service and name, the providers its calls went to (``providers``), how it ended (its status, and
the error it ended with), what it cost, and each model call's and tool run's start, duration, model, tokens, cost and
error (a waterfall; a model call's request parameters, ``params``, as its span states them); and the metadata an event
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
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Final

from spanfold import semconv
from spanfold.codecs import jsonio
from spanfold.exporter.dialects.dispatch import error_of
from spanfold.exporter.fold.cost import Costs, annotate
from spanfold.exporter.records import SpanRecord
from spanfold.exporter.runs.run import Run, worst
from spanfold.exporter.steps import AgentSpan, AsideStep, ModelStep, Step, ToolStep
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

    __slots__ = ("models", "prices", "providers", "reported", "steps", "unreported", "usage")

    def __init__(self, prices: PriceOverrides | None = None) -> None:
        self.models: set[str] = set()
        #: The providers of its model calls and embeddings calls (``gen_ai.provider.name``, else ``gen_ai.system``).
        self.providers: set[str] = set()
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
            if step.provider:
                self.providers.add(step.provider)
            if step.model:
                self.models.add(step.model)
            if step.usage is not None:
                self.usage.add(step.usage)
                self.reported += 1
            else:
                self.unreported += 1
        elif isinstance(step, AsideStep) and step.kind == "embeddings" and step.provider:
            self.providers.add(step.provider)


def _error(error: dict[str, Any] | None) -> dict[str, Any] | None:
    """``{"type", "message"}`` of a step's or an agent's error (the message only when there is one)."""
    if error is None:
        return None
    out: dict[str, Any] = {"type": str(error.get("type") or "error")}
    if error.get("message"):
        out["message"] = str(error["message"])
    return out


#: The request parameters a model call's span may state (the conventions' ``gen_ai.request.*`` but the model), each
#: kept in its step's ``params`` under its name after ``gen_ai.request.``.
_REQUEST_PARAMS: Final = tuple(
    (key.removeprefix("gen_ai.request."), key)
    for key in (
        semconv.REQUEST_TEMPERATURE,
        semconv.REQUEST_MAX_TOKENS,
        semconv.REQUEST_TOP_P,
        semconv.REQUEST_TOP_K,
        semconv.REQUEST_FREQUENCY_PENALTY,
        semconv.REQUEST_PRESENCE_PENALTY,
        semconv.REQUEST_STOP_SEQUENCES,
        semconv.REQUEST_SEED,
        semconv.REQUEST_CHOICE_COUNT,
    )
)


def request_params(attrs: Any) -> dict[str, Any] | None:
    """The request parameters a model call's span states (``{"temperature": 0.2, "max_tokens": 50, ...}``: numbers,
    text and lists of them, as the span carries them); None when it states none."""
    out: dict[str, Any] = {}
    for name, key in _REQUEST_PARAMS:
        value = attrs.get(key)
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            out[name] = [v for v in value if isinstance(v, (str, int, float))]
        elif isinstance(value, (str, int, float)):
            out[name] = value
    return out or None


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


def trace_meta(
    trace_id: str,
    records: Sequence[SpanRecord],
    roots: Sequence[AgentSpan],
    tally: Tally,
    steps: Mapping[int, Step | None] | None = None,
) -> TraceMeta:
    """A trace's metadata: span count, start, end and duration, service (of its first span's resource), name (the
    earliest root agent's), models and token totals, how it ended (status ``error`` and the error, or ``complete``),
    its steps in the order they started (each names its span: the writers find its first event by it,
    :func:`spanfold.trace.formats.meta_dict`), what it cost, and the agents it ran below its own (:func:`_agents`;
    ``steps``: the trace's steps by span id, as its dialects read them, to know its agent spans by)."""
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
    if tally.providers:
        meta.extra["providers"] = sorted(tally.providers)
    cost = costs.run()
    if cost is not None:
        meta.extra["cost"] = cost.to_dict()
        if cost.currency == "USD" and not cost.unpriced_steps:
            meta.extra["cost_usd"] = cost.total
    meta.error = ending_error(roots, ordered)
    if meta.error is not None:
        meta.status = "error"
    calls = {step.span_id: out for step, out in zip(ordered, meta.steps, strict=True) if isinstance(step, ModelStep)}
    found: list[SpanRecord] = []
    meta.extra.update(_who(records, roots, calls, (steps or {}, found)))
    if found:
        _agents(meta, records, roots, found, zip(ordered, meta.steps, strict=True), steps)
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


def _who(
    records: Sequence[SpanRecord],
    roots: Sequence[AgentSpan],
    calls: dict[int, StepTime] | None = None,
    agents: tuple[Mapping[int, Step | None], list[SpanRecord]] | None = None,
) -> dict[str, Any]:
    """The run's root agent span (``root_span_id``), the conversation the run belongs to, and who it is for and what
    it belongs to, as the application or framework named them: ``conversation_id`` (the earliest root agent's
    ``gen_ai.conversation.id``, else the first span that carries one), ``user_id``, ``session_id``, ``tags``,
    ``metadata``, ``prompt`` (``{"name", "version"}``): :class:`_RunContext`. So runs can be grouped by session, user,
    tag and prompt. Nothing is made up: absent, not written. On the way, each model call of ``calls`` (its metadata
    step, by span id) gets the request parameters its span states (:func:`request_params`), and ``agents`` (the
    trace's steps by span id, a list) gathers its agent spans in the order they started (:func:`_is_agent`)."""
    out: dict[str, Any] = {}
    if roots:  # the run's root span, where a backend shows what is said of the whole run (a check's outcome)
        out["root_span_id"] = span_hex(min(roots, key=lambda a: (a.start_ns, a.span_id)).span_id)
    named = [a for a in roots if a.conversation_id]
    if named:
        out["conversation_id"] = min(named, key=lambda a: (a.start_ns, a.span_id)).conversation_id or ""
    context = _RunContext()
    for record in sorted(records, key=lambda r: (r.start_ns, r.span_id)):
        attrs = record.attributes
        if calls and (call := calls.get(record.span_id)) is not None:
            call.params = request_params(attrs)
        elif agents is not None and _is_agent(record, attrs, agents[0]):
            agents[1].append(record)
        if "conversation_id" not in out and isinstance(attrs.get(semconv.CONVERSATION_ID), str):
            out["conversation_id"] = attrs[semconv.CONVERSATION_ID]
        context.read(attrs)
    out.update(context.to_dict())
    return out


def _is_agent(record: SpanRecord, attrs: Any, steps: Mapping[int, Step | None]) -> bool:
    """An agent's span: one its dialect read as an agent run, or an invocation (``invoke_agent``, ``invoke_workflow``,
    ``handle_conversation_turn``) the fold groups no thread by (an OpenAI Agents SDK agent inside its turn)."""
    return steps.get(record.span_id).__class__ is AgentSpan or attrs.get(semconv.OPERATION_NAME) in _INVOCATIONS


_INVOCATIONS: Final = semconv.INVOCATION_OPERATIONS


def _agent_name(record: SpanRecord, step: Step | None) -> str | None:
    if isinstance(step, AgentSpan) and step.name:
        return step.name
    attrs = record.attributes
    for key in (semconv.AGENT_NAME, semconv.WORKFLOW_NAME):
        if isinstance(attrs.get(key), str) and attrs[key]:
            return str(attrs[key])
    return record.name.partition(" ")[2] or record.name


def _agents(
    meta: TraceMeta,
    records: Sequence[SpanRecord],
    roots: Sequence[AgentSpan],
    found: list[SpanRecord],
    steps: Any,
    dialect_steps: Mapping[int, Step | None] | None = None,
) -> None:
    """The agents a run ran below its own root agent (handoffs, sub-agents, a graph's nodes that are agents), in
    ``agents``: each ``{"name", "start", "duration_ms", "span_id", "parent"?, "error"?}`` in the order they started,
    ``parent`` the span of the nearest agent above it, when that is not the run's root; and each step's ``parent``
    alike. A run with no agent but its root is left as it was. The steps (and so the run's step count) are unchanged:
    an agent is no step."""
    root = span_hex(min(roots, key=lambda a: (a.start_ns, a.span_id)).span_id) if roots else None
    if all(span_hex(r.span_id) == root for r in found):
        return
    ids = {r.span_id for r in found}
    parents = {r.span_id: r.parent_id for r in records}
    nearest: dict[int, int | None] = {}  # span -> the nearest agent at or above it

    def above(span_id: int) -> str | None:
        """The span of the nearest agent above a span (None: none, or the run's root)."""
        path: list[int] = []
        at = parents.get(span_id)
        got: int | None = None
        while at is not None:
            if at in nearest:
                got = nearest[at]
                break
            path.append(at)
            if at in ids:
                got = at
                break
            at = parents.get(at)
            if len(path) > len(parents):  # a cycle in bad input
                break
        for sid in path:
            nearest[sid] = got
        name = span_hex(got) if got is not None else None
        return None if name == root else name

    listed: list[dict[str, Any]] = []
    for record in found:
        span = span_hex(record.span_id)
        if span == root:
            continue
        agent: dict[str, Any] = {
            "name": _agent_name(record, (dialect_steps or {}).get(record.span_id)),
            "start": iso_micro(record.start_ns),
            "duration_ms": round(max(record.end_ns - record.start_ns, 0) / 1e6, 3),
            "span_id": span,
        }
        parent = above(record.span_id)
        if parent is not None:
            agent["parent"] = parent
        error = _error(error_of(record, record.attributes))
        if error is not None:
            agent["error"] = error
        listed.append(agent)
    meta.extra["agents"] = listed
    for step, out in steps:
        out.parent = above(step.span_id)


def run_meta(run: Run, roots: Sequence[AgentSpan], tally: Tally) -> TraceMeta:
    """A run's metadata (:func:`trace_meta`, named after its first trace, and its run's id when that trace holds
    other runs too: ``<trace id>-<run id>``): its status the less complete of the run's and the one the fold found
    (an error is kept); a stitched run's, or one sharing its trace, lists its OTel trace ids (``otel_trace_ids``).
    Each model step priced here gets its cost on its span too (:func:`~.cost.annotate`), for a writer of spans."""
    first = trace_hex(run.trace_ids[0])
    meta = trace_meta(first if run.run_id is None else f"{first}-{run.run_id}", run.records, roots, tally, run.steps)
    annotate(run.records, meta.steps)
    meta.status = worst(meta.status, run.status)
    if run.stitched or run.run_id is not None:
        meta.extra["otel_trace_ids"] = [trace_hex(t) for t in run.trace_ids]
    return meta

"""Stitching at the source: the model calls and tool runs of one zero-code agent run share one trace id.

An agent that opens no ``invoke_agent`` span makes one OTel trace per model call: N unrelated traces in Jaeger,
Langfuse or MLflow. Here, on the calling thread, an un-parented call that continues a live conversation by the rule
of :mod:`spanfold.stitching.evidence` (one of its responses continued, its ``gen_ai.conversation.id``, its failed
call's very request list re-sent by the same thread or task, or a history past one of its model outputs that names
no other live conversation) starts its span as a child of the conversation's first span; an un-parented tool run
joins the conversation whose model asked for it: the one waiting on its tool-call id, or the one waiting in the
execution context the run is in (:func:`spanfold.stitching.evidence.tool_call`). Any other call starts a conversation
of its own, under the run's external parent when there is one (a W3C ``TRACEPARENT``); when the evidence pointed at
more than one conversation the split is counted.

What decides lives in :mod:`spanfold.stitching`: the rule (:mod:`~spanfold.stitching.evidence`), the live
conversations' bookkeeping (:mod:`~spanfold.stitching.live`) and where a call was made
(:mod:`~spanfold.stitching.contexts`: each un-parented call's turn is recorded in its execution context, which a tool
run and a re-sent request list are judged from). This module hands it what the calling thread sees.

Under an external parent every run shares the caller's trace id, so each span placed here also carries its run's id
(``spanfold.run.id``: the hex span id of the run's first span); the fold keys flat traces by it.

The fingerprints (:mod:`spanfold.stitching.fingerprints`) are computed from the messages as recorded with capture on
and no redaction, whatever the user's settings: with capture off they are computed all the same (hashes kept in
memory, never written), so two runs that differ only in their text still stay apart. The request's own list object
is kept by its conversation until the next call or the conversation's end (identity evidence: a loop that re-sends
its list is one run even when another user's history reads the same).

The parent is a *remote* copy of the first span's context: that span has ended and left the process by the time a
later call starts, so every later call is the local root of its part of the trace, as the exporter expects.

Bounded like the exporter's stitcher: conversations idle for ``idle`` seconds are closed, at most ``limit`` are open
(the least recently active closed first). Thread-safe: one lock around the index.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Hashable, Mapping
from typing import Any, NamedTuple

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import NonRecordingSpan, Span, SpanContext

from spanfold import semconv
from spanfold.codecs import jsonio
from spanfold.codecs.json_prefix import ArrayPrefixCache
from spanfold.config import ASKING_IDLE_FACTOR, Config
from spanfold.content.runtime import Runtime
from spanfold.semconv import shapes
from spanfold.stitching import contexts, evidence
from spanfold.stitching.fingerprints import Fingerprint, message_prints, tool_calls
from spanfold.stitching.live import Live
from spanfold.stitching.pairing import Call, args_key

#: The runtime fingerprints are computed under: the messages as they are, whatever the user records.
FULL = Runtime(capture_content=True, redaction=None)


def records_all(rt: Runtime) -> bool:
    """Whether what ``rt`` records is the messages as they are (its attributes serve the fingerprints as they are;
    Runtimes compare by identity, so this compares what they do)."""
    return rt.capture_content and rt.redaction is None


#: Parsed input histories, each message through its fingerprints (only the new tail of a re-sent history is parsed).
_INPUTS = ArrayPrefixCache(element=message_prints)
#: System instructions (their JSON text) -> the chain's seed; a process has a few prompts.
_SEEDS: dict[str, int] = {}
_SEEDS_LIMIT = 256


def _seed(system: Any) -> int:
    if not isinstance(system, str):
        return 0
    found = _SEEDS.get(system)
    if found is None:
        if len(_SEEDS) >= _SEEDS_LIMIT:
            _SEEDS.clear()
        try:
            found = evidence.seed(jsonio.loads(system))
        except ValueError:
            found = hash(system)
        _SEEDS[system] = found
    return found


def _input_chain(seed: int, inputs: str) -> list[int]:
    """:func:`evidence.chain` of a history text's fingerprints (only what is new since a text it extends is parsed)."""
    return evidence.chain(seed, [fp for prints in _INPUTS.loads(inputs) if isinstance(prints, tuple) for fp in prints])


def _caller() -> Hashable:
    """Who makes the call: the running asyncio task, else the thread (a retry comes from the one that failed)."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop
        task = None
    return task if task is not None else threading.get_ident()


#: The object a request's history is in (:func:`request_list`): its identity is evidence.
Sent = list[Any] | str


class Conversation:
    """One stitched run: the context its later calls start in, its keys, the tool calls it waits on, and the request
    list its latest call sent."""

    __slots__ = (
        "_context",
        "_first",
        "asking",
        "keys",
        "retry",
        "run_id",
        "running",
        "sent",
        "sent_origin",
        "touched",
        "waiting",
    )

    def __init__(self, first: SpanContext, now: float) -> None:
        self._first = first  # the context, not the span: an ended span still holds its attributes
        #: The run's id under an external parent (``spanfold.run.id``): its first span's id.
        self.run_id = format(first.span_id, "016x")
        self._context: otel_context.Context | None = None
        self.keys: list[Hashable] = []
        self.waiting: list[Call[Conversation]] = []
        #: Tool runs of the conversation whose spans have not ended: it is not idle while one runs (a tool slower
        #: than ``idle`` seconds does not split the run).
        self.running: list[Span] = []
        self.touched = now
        #: Its latest call asked for tools: the run waits on them, for ``ASKING_IDLE_FACTOR`` times the window.
        self.asking = False
        #: The request list its latest call sent (kept: its id is the identity evidence), and the retry key of its
        #: latest call when that failed.
        self.sent: Sent | None = None
        self.sent_origin = 0  # the history it held then (a list re-sent unchanged is no run's trimmed list)
        self.retry: Hashable | None = None

    def waits(self) -> bool:
        """Whether a tool call of its model is still unanswered."""
        return any(not call.answered for call in self.waiting)

    def busy(self, now: float) -> bool:
        """Whether one of its tool runs is still running; one that ended since the last look counts as activity
        when it ended (the SDK span's end time; now when it has none), and is forgotten."""
        still = []
        for span in self.running:
            if span.is_recording():
                still.append(span)
                continue
            end = getattr(span, "end_time", None)
            ago = max(0.0, (time.time_ns() - end) / 1e9) if isinstance(end, int) else 0.0
            self.touched = max(self.touched, now - ago)
        self.running = still
        return bool(still)

    @property
    def context(self) -> otel_context.Context:
        """A remote copy of the first span's context, made when a later call first joins (most runs of one call
        never need it)."""
        if self._context is None:
            sc = self._first
            remote = SpanContext(sc.trace_id, sc.span_id, True, trace_flags=sc.trace_flags, trace_state=sc.trace_state)
            self._context = otel_trace.set_span_in_context(NonRecordingSpan(remote))
        return self._context


def _retry_key(sent: Sent, caller: Hashable, origin: int) -> Hashable:
    """The name a failed call leaves for its retry: the very list, from the same caller, with the same history."""
    return ("retry", id(sent), caller, origin)


class Turn:
    """One un-parented model call: the context its span starts in, and what it adds to its conversation when done."""

    __slots__ = ("_first", "_owner", "claimed", "context", "conversation", "names", "origin", "sent", "server")

    def __init__(
        self,
        owner: Conversations,
        conversation: Conversation | None,
        origin: int,
        names: list[Hashable],
        sent: Sent | None,
    ) -> None:
        self._owner = owner
        self.conversation = conversation
        self.context = conversation.context if conversation is not None else owner.parent
        self.origin = origin  # the chained hash of its inputs: what its outputs extend
        self.names = names  # the conversation id of the request
        self.sent = sent
        self.claimed: Hashable | None = None  # the response it continues
        self.server: Hashable = None  # the endpoint it was sent to: a response id names a response there
        self._first: SpanContext | None = None

    def started(self, span: Span) -> None:
        """The call's span started: a call that extends nothing opens a conversation under it when it ends (with what
        it adds, under one lock: until then no later call or tool run could find it). Under an external parent the
        span names its run (``spanfold.run.id``)."""
        if self.conversation is None:
            self._first = span.get_span_context()
            if self._owner.parent is not None:
                name_run(span)

    def done(self, outputs: Mapping[str, Any] | None) -> None:
        """The call ended with ``outputs`` (its result attributes with capture on), or failed (None)."""
        names = list(self.names)
        prints: list[Fingerprint] = []
        calls: list[tuple[Any, Any, Any]] = []
        if outputs is None:
            if self.sent is not None:
                names.append(_retry_key(self.sent, _caller(), self.origin))
        else:
            messages, _ = shapes.first_choice(_parsed(outputs.get(semconv.OUTPUT_MESSAGES)))
            prints = [fp for msg in messages for fp in message_prints(msg)]
            response_id = outputs.get(semconv.RESPONSE_ID)
            if response_id:
                names.append(("response", self.server, response_id))
            calls = tool_calls(messages)
        self.conversation = self._owner.register(self, names, prints, calls, answered=outputs is not None)
        self.sent = None  # its conversation keeps the list while it is the latest sent; this turn need not


def _parsed(value: Any) -> list[Any]:
    if not isinstance(value, str):
        return []
    try:
        parsed = jsonio.loads(value)
    except ValueError:
        return []
    return parsed if isinstance(parsed, list) else []


def request_list(request: Mapping[str, Any]) -> Sent | None:
    """The object holding a request's history (``messages``, ``input``, ``contents``): its list, or the text a
    Responses API ``input`` (a ``contents``) is given as, whose very object a retry sends again too."""
    for key in ("messages", "input", "contents"):
        value = request.get(key)
        if type(value) is list or type(value) is str:
            return value
    return None


def name_run(span: Span) -> None:
    """A span that starts a run of its own under an external parent (an agent run, a tool run no conversation asked
    for) names the run by its own id (``spanfold.run.id``)."""
    span.set_attribute(semconv.SPANFOLD_RUN_ID, format(span.get_span_context().span_id, "016x"))


class ToolPlace(NamedTuple):
    """Where an un-parented tool run goes: :meth:`Conversations.tool_context`."""

    context: otel_context.Context | None
    conversation: Conversation | None
    call_id: str | None
    #: Its run's id to put on its span (``spanfold.run.id``), under an external parent.
    run_id: str | None = None


#: ``ToolPlace.run_id`` of a tool run that is a run of its own under an external parent: its span's id names it.
OWN_RUN = ""


class Conversations:
    """The live conversations of the process, found by the evidence a call brings (:mod:`spanfold.stitching`)."""

    def __init__(
        self,
        *,
        stitch: bool = True,
        parent: otel_context.Context | None = None,
        idle: float = 30.0,
        limit: int = 2000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stitch = stitch
        self.parent = parent  # the run's external parent (TRACEPARENT), for calls that start a conversation
        self.idle = idle
        self.limit = limit
        self._clock = clock
        self._lock = threading.Lock()
        self._live: Live[Conversation] = Live()  # the open ones: their evidence, their tool calls, their windows
        #: id(request list) -> the open conversation whose latest call sent it.
        self._sent: dict[int, Conversation] = {}

    def __len__(self) -> int:
        return len(self._live)

    # --- the calling thread ------------------------------------------------------------------------------

    def turn(self, attrs: Mapping[str, Any], sent: Sent | None = None) -> Turn:
        """Where an un-parented model call with these request attributes (capture on, no redaction) belongs;
        ``sent``: the list object the request's history is in (:func:`request_list`)."""
        seed = _seed(attrs.get(semconv.SYSTEM_INSTRUCTIONS))
        inputs = attrs.get(semconv.INPUT_MESSAGES)
        history = _input_chain(seed, inputs) if isinstance(inputs, str) else []
        origin = history[-1] if history else seed
        server = (attrs.get(semconv.SERVER_ADDRESS), attrs.get(semconv.SERVER_PORT))
        names: list[Hashable] = [
            ("response", server, attrs[k]) for k in semconv.PREVIOUS_RESPONSE_ATTRIBUTES if attrs.get(k)
        ]
        conversation_id = attrs.get(semconv.CONVERSATION_ID)
        own: list[Hashable] = [("conversation", conversation_id)] if conversation_id else []
        here = contexts.turns_here()
        with self._lock:
            self._expire()
            owner = self._owner_of(sent, here)
            if owner is not None and owner.retry is not None:
                names.append(_retry_key(sent, _caller(), origin))  # type: ignore[arg-type]
            decision = self._live.index.find(
                [*names, *own],
                history,
                owner,
                here=contexts.conversations_here(here, self._live),
                changed=owner is not None and owner.sent_origin != origin,
            )
            conv = decision.conversation
            if conv is not None:
                self._touch(conv)
            self._live.index.begin(origin, conv)
        turn = Turn(self, conv, origin, own, sent)
        turn.claimed = decision.claimed
        turn.server = server
        contexts.remember(here, turn)
        return turn

    def _owner_of(self, sent: Sent | None, here: tuple[contexts.Placed, ...]) -> Conversation | None:
        """The open conversation whose latest call sent the very list ``sent``, when that call was made in this
        execution context (a list object two users' code shares, a constant, names no one)."""
        if sent is None:
            return None
        conv = self._sent.get(id(sent))
        if conv is None or conv.sent is not sent:
            return None
        return conv if any(turn.conversation is conv for turn in here) else None

    def tool_context(self, call_id: Any, name: Any, arguments: Any, conversation_id: Any = None) -> ToolPlace:
        """The context an un-parented tool run starts in (its conversation's: the one its model call asked, by
        :func:`~spanfold.stitching.evidence.tool_call`, else the one its ``gen_ai.conversation.id`` names), the
        conversation to tell :meth:`running` (None: none), and the id of the model's call it answers when the run
        brought none."""
        with self._lock:
            self._expire()
            by_id = call_id is not None
            call = self._live.tool(str(call_id) if by_id else None, name, arguments, contexts.waiting_here(self._live))
            conv = call.owner if call is not None else None
            if conv is None and conversation_id:
                holders = self._live.index.holders(("conversation", conversation_id))
                conv = holders[0] if len(holders) == 1 else None
            if conv is None:  # a run of its own: under an external parent, its span's own id names it
                return ToolPlace(self.parent, None, None, OWN_RUN if self.parent is not None else None)
            self._touch(conv)
            answered = None
            if call is not None and not by_id and args_key(call.arguments) == args_key(arguments):
                answered = call.id  # the model's call, by name and arguments (by name alone is order, not evidence)
            return ToolPlace(conv.context, conv, answered, conv.run_id if self.parent is not None else None)

    def running(self, conv: Conversation, span: Span) -> None:
        """A tool run of ``conv`` started ``span``: the conversation stays open until it ends (ended ones are let go
        here too, so an active conversation holds only the spans still running)."""
        with self._lock:
            conv.running = [s for s in conv.running if s.is_recording()]
            conv.running.append(span)

    # --- the index ---------------------------------------------------------------------------------------

    def _touch(self, conv: Conversation, now: float | None = None) -> Conversation:
        self._live.windows.touch(conv, self._clock() if now is None else now)
        return conv

    def register(
        self,
        turn: Turn,
        names: list[Hashable],
        outputs: list[Fingerprint],
        calls: list[tuple[Any, Any, Any]],
        *,
        answered: bool = True,
    ) -> Conversation | None:
        """What ``turn``'s call adds to its conversation: its names, its output (fingerprints: the tool-call ids its
        model made and the history past it, :meth:`~spanfold.stitching.live.Live.answered`), the tool calls it asked
        for (``answered``: it gave a result; a failed call leaves the conversation waiting as it was, and a response
        it continued may be continued by its retry). A call that joined none opens a conversation under its span's
        context. The conversation, or None when it closed meanwhile."""
        conv = turn.conversation
        with self._lock:
            index = self._live.index
            index.end(turn.origin, conv)
            if not answered and turn.claimed is not None:
                index.unclaim(turn.claimed)
            if conv is None:
                if turn._first is None:
                    return None
                conv = Conversation(turn._first, self._clock())
                fresh = True
            elif conv not in self._live:
                return None  # closed meanwhile
            else:
                fresh = False
            if conv.retry is not None:  # a later call ended: the failed one is no longer retried
                index.release(conv, conv.retry)
                conv.retry = None
            for key in names:
                self._live.hold(conv, key)
                if isinstance(key, tuple) and key[0] == "retry":
                    conv.retry = key
            self._live.answered(conv, turn.origin, outputs)
            self._remember_sent(conv, turn.sent)
            conv.sent_origin = turn.origin
            self._live.expect(conv, calls)
            if answered:
                conv.asking = bool(calls)
            if fresh:  # the most recently active: queued last, touched now
                windows = self._live.windows
                windows.add(conv)
                while len(windows) > self.limit and (oldest := windows.oldest()) is not None:
                    self._close(oldest)
            else:
                self._touch(conv)
            return conv

    def _remember_sent(self, conv: Conversation, sent: Sent | None) -> None:
        if conv.sent is not None and conv.sent is not sent and self._sent.get(id(conv.sent)) is conv:
            del self._sent[id(conv.sent)]
        conv.sent = sent
        if sent is not None:
            self._sent[id(sent)] = conv

    def _expire(self) -> None:
        now = self._clock()
        before, asking_before = now - self.idle, now - self.idle * ASKING_IDLE_FACTOR
        windows = self._live.windows
        while (conv := windows.due(before, asking_before)) is not None:
            if conv.busy(now):  # a tool still runs: active now
                conv.touched = now
            if not windows.past(conv, before, asking_before):  # active meanwhile (a tool run ended): later
                self._touch(conv, conv.touched)  # its window counts from the tool's end
                continue
            self._close(conv)

    def _close(self, conv: Conversation) -> None:
        self._live.close(conv)
        self._remember_sent(conv, None)
        conv.retry = None


_active: list[Conversations | None] = [None]


def active() -> Conversations | None:
    """The conversations of the running ``init()`` (None: no stitching, no external parent)."""
    return _active[0]


def activate(conversations: Conversations | None) -> None:
    _active[0] = conversations


def from_environment(environ: Mapping[str, str] | None = None, *, cfg: Config | None = None) -> Conversations:
    """Conversations as ``cfg`` (``init()``'s options) or else the environment asks: ``SPANFOLD_STITCH``,
    ``SPANFOLD_STITCH_IDLE``, ``SPANFOLD_MAX_TRACES_IN_FLIGHT``; and ``TRACEPARENT`` / ``TRACESTATE`` (W3C trace
    context: the parent of the run, so a harness or a calling service gets it inside its own trace)."""
    from spanfold import config

    env = os.environ if environ is None else environ
    try:
        cfg = cfg if cfg is not None else config.load({}, env)
        on, idle, limit = cfg.stitch, cfg.stitch_idle, cfg.max_traces_in_flight
    except config.ConfigError:
        on, idle, limit = True, 30.0, 2000
    parent = external_parent(env.get("TRACEPARENT"), env.get("TRACESTATE"))
    return Conversations(stitch=on, parent=parent, idle=idle, limit=limit)


def ensure() -> None:
    """Conversations for instrumentors used without ``init()`` (``opentelemetry-instrument``), from the environment."""
    if _active[0] is None:
        activate(from_environment())


def external_parent(traceparent: str | None, tracestate: str | None = None) -> otel_context.Context | None:
    """The context of a W3C ``traceparent`` header value (None when absent or malformed)."""
    if not traceparent:
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier = {"traceparent": traceparent.strip()}
    if tracestate:
        carrier["tracestate"] = tracestate.strip()
    ctx = TraceContextTextMapPropagator().extract(carrier)
    return ctx if otel_trace.get_current_span(ctx).get_span_context().is_valid else None

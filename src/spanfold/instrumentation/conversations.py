"""Stitching at the source: the model calls and tool runs of one zero-code agent run share one trace id.

An agent that opens no ``invoke_agent`` span makes one OTel trace per model call: N unrelated traces in Jaeger,
Langfuse or MLflow. Here, on the calling thread, an un-parented call whose input history extends a live
conversation's history (the inputs and first-choice outputs of one of its calls), that continues one of its responses
(``previous_response_id``), or that names its ``gen_ai.conversation.id``, starts its span as a child of the
conversation's first span; an un-parented tool run joins the conversation whose model asked for it (by tool-call id,
else by name and arguments, else by name: :mod:`spanfold.pairing`). A call that extends nothing starts a
conversation of its own, under the run's external parent when there is one (a W3C ``TRACEPARENT``).

The fingerprints (:mod:`spanfold.semconv.fingerprints`) are computed from the messages as recorded with capture on
and no redaction, whatever the user's settings: with capture off they are computed all the same (hashes kept in
memory, never written), so two runs that differ only in their text still stay apart. Two runs that share only a
system prompt stay two traces (a key holds a call's outputs too, which differ by their tool-call ids or text), and
concurrent runs never cross.

The parent is a *remote* copy of the first span's context: that span has ended and left the process by the time a
later call starts, so every later call is the local root of its part of the trace, as the exporter expects.

Bounded like the exporter's stitcher: conversations idle for ``idle`` seconds are closed, at most ``limit`` are open
(the least recently active closed first). Thread-safe: one lock around the index.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import NonRecordingSpan, Span, SpanContext

from spanfold import jsonio, semconv
from spanfold.config import ASKING_IDLE_FACTOR, Config
from spanfold.idle_windows import IdleWindows
from spanfold.json_prefix import ArrayPrefixCache
from spanfold.pairing import Call, Pairing
from spanfold.runtime import Runtime
from spanfold.semconv import shapes
from spanfold.semconv.fingerprints import Fingerprint, message_prints, tool_calls

#: The runtime fingerprints are computed under: the messages as they are, whatever the user records.
FULL = Runtime(capture_content=True, redaction=None)


def records_all(rt: Runtime) -> bool:
    """Whether what ``rt`` records is the messages as they are (its attributes serve the fingerprints as they are;
    Runtimes compare by identity, so this compares what they do)."""
    return rt.capture_content and rt.redaction is None


#: Parsed input histories, each message through its fingerprints (only the new tail of a re-sent history is parsed).
_INPUTS = ArrayPrefixCache(element=message_prints)
#: The message structures the instrumentation shares (:data:`spanfold.jsonio.SHARED`), by identity: its history cache
#: gives the same structure for the same message from call to call. Each entry: the message, the chain value before
#: it and the chain's values over its fingerprints (a re-sent history with the same beginning hashes nothing again).
#: Entries are tuples replaced whole (thread-safe without a lock); emptied when full.
_PRINTS: dict[int, tuple[Any, int, tuple[int, ...]]] = {}
_PRINTS_LIMIT = 2048


def _input_chain(seed: int, inputs: str) -> list[int]:
    """:func:`_chain` of a history text's fingerprints, in order: from the structures shared with it when there are
    some (each message looked up by identity, its chain values reused when what came before it is the same), else
    parsed (only what is new since a text it extends)."""
    shared = jsonio.SHARED.peek(inputs)
    if not isinstance(shared, list):
        return _chain(seed, [fp for prints in _INPUTS.loads(inputs) if isinstance(prints, tuple) for fp in prints])
    out: list[int] = []
    h = seed
    for message in shared:
        entry = _PRINTS.get(id(message))
        if entry is None or entry[0] is not message or entry[1] != h:
            if len(_PRINTS) >= _PRINTS_LIMIT:
                _PRINTS.clear()
            entry = _PRINTS[id(message)] = (message, h, tuple(_chain(h, message_prints(message))))
        values = entry[2]
        if values:
            out += values
            h = values[-1]
    return out


class Conversation:
    """One stitched run: the context its later calls start in, its index keys, the tool calls it waits on."""

    __slots__ = ("_context", "_first", "asking", "keys", "running", "touched", "waiting")

    def __init__(self, first: SpanContext, now: float) -> None:
        self._first = first  # the context, not the span: an ended span still holds its attributes
        self._context: otel_context.Context | None = None
        self.keys: list[Hashable] = []
        self.waiting: list[Call[Conversation]] = []
        #: Tool runs of the conversation whose spans have not ended: it is not idle while one runs (a tool slower
        #: than ``idle`` seconds does not split the run).
        self.running: list[Span] = []
        self.touched = now
        #: Its latest call asked for tools: the run waits on them, for ``ASKING_IDLE_FACTOR`` times the window.
        self.asking = False

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


def _chain(seed: int, prints: Iterable[Fingerprint]) -> list[int]:
    out, h = [], seed
    for fp in prints:
        h = hash((h, fp))
        out.append(h)
    return out


def _parsed(value: Any) -> list[Any]:
    if not isinstance(value, str):
        return []
    parsed = jsonio.SHARED.peek(value)  # the structure the instrumentation just encoded, when it shares it
    if parsed is None:
        parsed = jsonio.loads(value)
    return parsed if isinstance(parsed, list) else []


class Turn:
    """One un-parented model call: the context its span starts in, and what it adds to its conversation when done."""

    __slots__ = ("_first", "_inputs", "_owner", "_seed", "context", "conversation", "keys")

    def __init__(
        self,
        owner: Conversations,
        conversation: Conversation | None,
        seed: int,
        inputs: list[int],
        keys: list[Hashable],
    ) -> None:
        self._owner = owner
        self.conversation = conversation
        self.context = conversation.context if conversation is not None else owner.parent
        self._seed = seed
        self._inputs = inputs
        self.keys = keys  # response / conversation ids of the request
        self._first: SpanContext | None = None

    def started(self, span: Span) -> None:
        """The call's span started: a call that extends nothing opens a conversation under it when it ends (with what
        it adds, under one lock: until then no later call or tool run could find it)."""
        if self.conversation is None:
            self._first = span.get_span_context()

    def done(self, outputs: Mapping[str, Any] | None) -> None:
        """The call ended with ``outputs`` (its result attributes with capture on), or failed (None)."""
        conv, first = self.conversation, self._first
        if conv is None and first is None:
            return
        keys = list(self.keys)
        calls: list[tuple[Any, Any, Any]] = []
        last = self._inputs[-1] if self._inputs else self._seed
        if outputs is None:
            keys.append(last)  # a retry re-sends the same inputs
        else:
            messages, _ = shapes.first_choice(_parsed(outputs.get(semconv.OUTPUT_MESSAGES)))
            prints = [fp for msg in messages for fp in message_prints(msg)]
            if prints:
                keys.append(_chain(last, prints)[-1])
            response_id = outputs.get(semconv.RESPONSE_ID)
            if response_id:
                keys.append(("response", response_id))
            calls = tool_calls(messages)
        self.conversation = self._owner.register(conv, keys, calls, answered=outputs is not None, first=first)


class Conversations:
    """The live conversations of the process, found by the hash of a history they may be extended by."""

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
        self._windows: IdleWindows[Conversation] = IdleWindows()  # the open ones, by the window that closes them
        #: Keys: a history's chained hash (an int), ("response", id), ("conversation", id).
        self._index: dict[Hashable, Conversation] = {}
        self._calls: Pairing[Conversation] = Pairing()

    def __len__(self) -> int:
        return len(self._windows)

    # --- the calling thread ------------------------------------------------------------------------------

    def turn(self, attrs: Mapping[str, Any]) -> Turn:
        """Where an un-parented model call with these request attributes (capture on, no redaction) belongs."""
        system = attrs.get(semconv.SYSTEM_INSTRUCTIONS)
        seed = hash(system) if isinstance(system, str) else 0
        inputs = attrs.get(semconv.INPUT_MESSAGES)
        chain = _input_chain(seed, inputs) if isinstance(inputs, str) else []
        ids: list[Hashable] = [("response", attrs[k]) for k in semconv.PREVIOUS_RESPONSE_ATTRIBUTES if attrs.get(k)]
        conversation_id = attrs.get(semconv.CONVERSATION_ID)
        if conversation_id:
            ids.append(("conversation", conversation_id))
        with self._lock:
            self._expire()
            conv = self._find(ids, chain)
        own: list[Hashable] = [("conversation", conversation_id)] if conversation_id else []
        return Turn(self, conv, seed, chain, own)

    def tool_context(
        self, call_id: Any, name: Any, arguments: Any, conversation_id: Any = None
    ) -> tuple[otel_context.Context | None, Any]:
        """The context an un-parented tool run starts in (its conversation's: the one waiting for its call, else the
        one its ``gen_ai.conversation.id`` names), and the conversation to tell :meth:`running` (None: none)."""
        with self._lock:
            self._expire()
            call = self._calls.answer(str(call_id) if call_id is not None else None, name, arguments)
            conv = call.owner if call is not None else None
            if conv is None and conversation_id:
                conv = self._index.get(("conversation", conversation_id))
            if conv is None:
                return self.parent, None
            self._touch(conv)
            return conv.context, conv

    def running(self, conv: Conversation, span: Span) -> None:
        """A tool run of ``conv`` started ``span``: the conversation stays open until it ends (ended ones are let go
        here too, so an active conversation holds only the spans still running)."""
        with self._lock:
            conv.running = [s for s in conv.running if s.is_recording()]
            conv.running.append(span)

    # --- the index ---------------------------------------------------------------------------------------

    def _find(self, ids: list[Hashable], chain: list[int]) -> Conversation | None:
        for key in ids:
            conv = self._index.get(key)
            if conv is not None:
                return self._touch(conv)
        for h in reversed(chain):  # the longest history it extends
            conv = self._index.get(h)
            if conv is not None:
                return self._touch(conv)
        return None

    def _touch(self, conv: Conversation, now: float | None = None) -> Conversation:
        self._windows.touch(conv, self._clock() if now is None else now)
        return conv

    def register(
        self,
        conv: Conversation | None,
        keys: list[Hashable],
        calls: list[tuple[Any, Any, Any]],
        *,
        answered: bool = True,
        first: SpanContext | None = None,
    ) -> Conversation | None:
        """What a call of ``conv`` adds: its keys, the tool calls it asked for (``answered``: it gave a result; a
        failed call leaves the conversation waiting as it was). ``conv`` None: the call opens a conversation under
        ``first`` (its span's context). The conversation, or None when it closed meanwhile."""
        with self._lock:
            if conv is None:
                if first is None:
                    return None
                conv = Conversation(first, self._clock())
                fresh = True
            elif conv not in self._windows:
                return None  # closed meanwhile
            else:
                fresh = False
            for key in keys:
                self._index[key] = conv
                conv.keys.append(key)
            for call_id, name, arguments in calls:
                conv.waiting.append(self._calls.expect(conv, call_id, name, arguments))
            if answered:
                conv.asking = bool(calls)
            if fresh:  # the most recently active: queued last, touched now
                self._windows.add(conv)
                while len(self._windows) > self.limit and (oldest := self._windows.oldest()) is not None:
                    self._close(oldest)
            else:
                self._touch(conv)
            return conv

    def _expire(self) -> None:
        now = self._clock()
        before, asking_before = now - self.idle, now - self.idle * ASKING_IDLE_FACTOR
        while (conv := self._windows.due(before, asking_before)) is not None:
            if conv.busy(now):  # a tool still runs: active now
                conv.touched = now
            if not self._windows.past(conv, before, asking_before):  # active meanwhile (a tool run ended): later
                self._touch(conv, conv.touched)  # its window counts from the tool's end
                continue
            self._close(conv)

    def _close(self, conv: Conversation) -> None:
        self._windows.remove(conv)
        for key in conv.keys:
            if self._index.get(key) is conv:
                del self._index[key]
        for call in conv.waiting:
            self._calls.drop(call)
        conv.keys.clear()
        conv.waiting.clear()


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

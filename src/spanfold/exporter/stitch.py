"""Zero-code stitching (DESIGN folding rule 5): un-parented model calls of one run joined into one conversation.

An agent that never opens an ``invoke_agent`` span makes one OTel trace per model call (and per ``@tool`` call). A
new call joins an open conversation when its input history extends that conversation's history (the inputs and
first-choice outputs of one of its calls), when it continues one of its responses (``previous_response_id``), or
shares its ``gen_ai.conversation.id``; a tool span joins the conversation waiting on its call id, or, without an id,
the conversation that has waited longest on a call with its name and arguments (else its name): each waiting call
takes one tool run, so concurrent runs making the same call get one each (:mod:`~spanfold.pairing`, the
unit the fold pairs tool results with). Lookups are hashes: a rolling hash over the message fingerprints, so finding
the conversation a call extends costs O(its inputs), never a comparison with every open conversation.

A conversation whose latest call gave a final answer (outputs, none of them a tool call, no error) is *answered*: the
stitcher keeps those apart (:meth:`Stitcher.answered_before`) so that a receiver can write a run as soon as it is
provably over (``spanfold serve --final-wait``) instead of after the idle window.

A :class:`Conversation` owns what its members bring: their spans, their steps (parsed once, handed on to the fold)
and their attribute bytes (counted as they join; the assembler bounds them). Pure bookkeeping: no threads, no I/O
(the assembler closes conversations and writes them).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field

from spanfold.exporter.events import INPUTS, Fingerprint, fingerprint, message_events, system_event
from spanfold.exporter.meta import worst
from spanfold.exporter.records import SpanRecord
from spanfold.exporter.steps import AgentSpan, ModelStep, Step, ToolStep
from spanfold.idle_windows import IdleWindows
from spanfold.pairing import Call, Pairing
from spanfold.semconv.shapes import first_choice
from spanfold.trace.model import TraceStatus


@dataclass(slots=True, eq=False)
class Conversation:
    """Member traces of one stitched run, in the order they completed, and the attribute bytes of their spans
    (the assembler bounds them)."""

    serial: int
    trace_ids: list[int] = field(default_factory=list)
    records: list[SpanRecord] = field(default_factory=list)
    steps: dict[int, Step | None] = field(default_factory=dict)
    status: TraceStatus = "complete"
    keys: list[Hashable] = field(default_factory=list)
    waiting: list[Call[Conversation]] = field(default_factory=list)
    touched: float = 0.0
    attribute_bytes: int = 0
    #: When the stitcher last looked at it as answered: its latest call gave a final answer (no tool call, no error),
    #: the run may be over (:meth:`Stitcher.answered_before` orders by it).
    answer_seen: float = 0.0
    #: Its latest model call asked for tools: the run waits on them (however long a plain function takes), so it
    #: stays open for the longer window (:meth:`Stitcher.idle`).
    asking: bool = False

    def add(
        self,
        trace_id: int,
        records: list[SpanRecord],
        steps: dict[int, Step | None],
        status: TraceStatus,
        attribute_bytes: int = 0,
    ) -> None:
        if trace_id not in self.trace_ids:
            self.trace_ids.append(trace_id)
        self.records.extend(records)
        self.steps.update(steps)
        self.status = worst(self.status, status)
        self.attribute_bytes += attribute_bytes


def stitch_root(records: Iterable[SpanRecord], steps: dict[int, Step | None]) -> ModelStep | ToolStep | None:
    """The root step of a trace that may be stitched: its first local root (un-parented, or the part of a trace whose
    parent is elsewhere: the later calls of a run stitched at the source, a run under an external ``traceparent``,
    several of which may arrive together) when that is a model call or a tool run, and no agent span anywhere (such a
    trace is its own conversation)."""
    root: SpanRecord | None = None
    for r in records:
        if r.is_local_root and (root is None or (r.start_ns, r.span_id) < (root.start_ns, root.span_id)):
            root = r
    if root is None or any(isinstance(s, AgentSpan) for s in steps.values()):
        return None
    step = steps.get(root.span_id)
    return step if isinstance(step, (ModelStep, ToolStep)) else None


def _chain(seed: int, fps: Iterable[Fingerprint]) -> list[int]:
    """Rolling hashes of every prefix of ``fps``."""
    out = []
    h = seed
    for fp in fps:
        h = hash((h, fp))
        out.append(h)
    return out


def _fingerprints(messages: Iterable[dict[str, object]]) -> list[Fingerprint]:
    return [fp for m in messages for fp in INPUTS.prints(m)]


class Stitcher:
    """Open conversations and the hash index that finds the one a new trace belongs to."""

    def __init__(self) -> None:
        self._windows: IdleWindows[Conversation] = IdleWindows()
        self._index: dict[Hashable, Conversation] = {}
        self._calls: Pairing[Conversation] = Pairing()  # calls waiting for their tool run
        self._serial = 0
        self.answered: OrderedDict[int, Conversation] = OrderedDict()  # final answer given; least recently seen first

    @property
    def open(self) -> OrderedDict[int, Conversation]:
        """The open conversations, least recently active first."""
        return self._windows.open

    @property
    def asking(self) -> OrderedDict[int, Conversation]:
        """The open conversations whose latest call asked for tools (the longer window), least recently active first."""
        return self._windows.asking

    @property
    def resting(self) -> OrderedDict[int, Conversation]:
        """The other open conversations, least recently active first."""
        return self._windows.resting

    def __len__(self) -> int:
        return len(self._windows)

    def _new(self) -> Conversation:
        self._serial += 1
        conv = Conversation(self._serial)
        self._windows.add(conv)
        return conv

    def _touch(self, conv: Conversation, now: float) -> None:
        self._windows.touch(conv, now)

    def _register(self, conv: Conversation, key: Hashable) -> None:
        self._index[key] = conv
        conv.keys.append(key)

    def _lookup(self, key: Hashable) -> Conversation | None:
        conv = self._index.get(key)
        return conv if conv is not None and conv in self._windows else None

    # --- model calls -------------------------------------------------------------------------------------

    def _seed(self, step: ModelStep) -> int:
        return hash(fingerprint(system_event(step.system_instructions)) if step.system_instructions else None)

    def _find_model(self, step: ModelStep, prefixes: list[int]) -> Conversation | None:
        if step.previous_response_id is not None:
            conv = self._lookup(("response", step.previous_response_id))
            if conv is not None:
                return conv
        if step.conversation_id is not None:
            conv = self._lookup(("conversation", step.conversation_id))
            if conv is not None:
                return conv
        for h in reversed(prefixes):  # the longest history it extends
            conv = self._lookup(("history", h))
            if conv is not None:
                return conv
        return None

    def _register_model(self, conv: Conversation, step: ModelStep, seed: int, inputs: list[Fingerprint]) -> bool:
        """Index the call's history, response and conversation ids and its tool calls; True for a final answer."""
        outs, _ = first_choice(step.outputs)
        out_events = [e for m in outs for e in message_events(m, {})]
        history = _chain(seed, [*inputs, *(fingerprint(e) for e in out_events)])
        if out_events or step.error is not None:  # a retry of a failed call re-sends the same inputs
            self._register(conv, ("history", history[-1] if history else seed))
        if step.response_id is not None:
            self._register(conv, ("response", step.response_id))
        if step.conversation_id is not None:
            self._register(conv, ("conversation", step.conversation_id))
        final = bool(out_events) and step.error is None
        if step.error is None:  # a failed call leaves the run waiting as it was (as at the source): it is retried
            conv.asking = False
        for e in out_events:
            for tc in e.tool_calls:
                final = False
                conv.asking = True
                conv.waiting.append(self._calls.expect(conv, tc.id, tc.name, tc.arguments))
        return final

    # --- tool runs ---------------------------------------------------------------------------------------

    def _find_tool(self, step: ToolStep) -> Conversation | None:
        call = self._calls.answer(step.call_id, step.name, step.arguments)
        return call.owner if call is not None else None

    # --- public ------------------------------------------------------------------------------------------

    def add(
        self,
        root: ModelStep | ToolStep,
        trace_id: int,
        records: list[SpanRecord],
        steps: dict[int, Step | None],
        status: TraceStatus,
        now: float,
        *,
        attribute_bytes: int = 0,
    ) -> Conversation:
        """Join the trace to the conversation it continues, or open a new one; returns it. ``attribute_bytes``: of the
        trace's spans (the conversation counts them)."""
        member = self.member(trace_id)  # the parts of one trace (a run stitched at the source) go together
        final = False
        if isinstance(root, ModelStep):
            seed = self._seed(root)
            inputs = _fingerprints(root.inputs)
            conv = member or self._find_model(root, _chain(seed, inputs)) or self._new()
            final = self._register_model(conv, root, seed, inputs)
        else:
            conv = member or self._find_tool(root) or self._new()
        if member is None:
            self._register(conv, ("trace", trace_id))
        conv.add(trace_id, records, steps, status, attribute_bytes)
        self._touch(conv, now)
        self.answered.pop(conv.serial, None)
        if final:
            conv.answer_seen = now
            self.answered[conv.serial] = conv
        return conv

    def member(self, trace_id: int) -> Conversation | None:
        """The open conversation holding part of the trace ``trace_id``."""
        return self._lookup(("trace", trace_id))

    def join(self, conv: Conversation, record: SpanRecord, step: Step | None, size: int, now: float) -> None:
        """One more span of a trace the conversation holds (a span that arrived after its trace's part was folded)."""
        conv.add(record.trace_id, [record], {record.span_id: step}, "complete", size)
        if isinstance(step, ModelStep) and record.is_local_root:  # a call of the run: a final answer ends it
            self.answered.pop(conv.serial, None)
            if self._register_model(conv, step, self._seed(step), _fingerprints(step.inputs)):
                conv.answer_seen = now
                self.answered[conv.serial] = conv
        self._touch(conv, now)

    def answered_before(self, before: float) -> list[Conversation]:
        """The answered conversations last seen before ``before`` (still open: the caller closes them or calls
        :meth:`seen_again`)."""
        out = []
        for conv in self.answered.values():
            if conv.answer_seen >= before:
                break
            out.append(conv)
        return out

    def seen_again(self, conv: Conversation, now: float) -> None:
        """Look at an answered conversation again later (its process is still sending)."""
        conv.answer_seen = now
        self.answered.move_to_end(conv.serial)

    def oldest_answer(self) -> float | None:
        return next(iter(self.answered.values())).answer_seen if self.answered else None

    def idle(
        self,
        before: float,
        busy: Callable[[Conversation], bool] | None = None,
        now: float = 0.0,
        asking_before: float | None = None,
    ) -> list[Conversation]:
        """Close and return the conversations last active before ``before`` (those whose latest call asked for tools:
        before ``asking_before``, when given); one that is ``busy`` (a span of its trace started and has not ended:
        a slow tool run) counts as active at ``now`` instead."""
        out = []
        while (conv := self._windows.due(before, before if asking_before is None else asking_before)) is not None:
            if busy is not None and busy(conv):
                self._touch(conv, now)
                continue
            out.append(self.close(conv))
        return out

    def idle_deadline(self, idle: float, asking_idle: float) -> float | None:
        """When :meth:`idle` next has a conversation to close, given the two windows (None: none is open)."""
        return self._windows.deadline(idle, asking_idle)

    def oldest_touch(self) -> float | None:
        oldest = self._windows.oldest()
        return oldest.touched if oldest is not None else None

    def close(self, conv: Conversation) -> Conversation:
        self._windows.remove(conv)
        self.answered.pop(conv.serial, None)
        for key in conv.keys:
            if self._index.get(key) is conv:
                del self._index[key]
        conv.keys.clear()
        for call in conv.waiting:  # calls never answered: out of the queues
            self._calls.drop(call)
        conv.waiting.clear()
        return conv

    def close_all(self) -> list[Conversation]:
        return [self.close(c) for c in list(self.open.values())]

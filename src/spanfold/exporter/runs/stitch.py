"""Zero-code stitching (DESIGN folding rule 5): un-parented model calls of one run joined into one conversation, by
the rule of :mod:`spanfold.stitching.evidence`, the one the source applies.

An agent that never opens an ``invoke_agent`` span makes one OTel trace per model call (and per ``@tool`` call).
Calls and tool runs whose run the source decided (:mod:`spanfold.stitching.conversations`; the span says
so: ``spanfold.stitched``) carry their run's trace id, and a call the source kept apart has a trace of its own: the
stitcher follows those trace ids and decides nothing for them. Other producers' un-parented calls are decided here: a
call joins the one live conversation its evidence names (a ``previous_response_id`` of one of its responses, its
``gen_ai.conversation.id``, or a *distinctive* history past one of its model outputs: one whose tool-call ids no other
live conversation's model made; text anyone's call could give, or a stored history could read, is no evidence here,
where nobody knows which thread sent it: a counted split); a tool span joins the conversation waiting on its call id
when exactly one does, and without an id none (:func:`~spanfold.stitching.evidence.tool_call`). Lookups are
hashes, never a comparison with every open conversation.

A conversation whose latest call gave a final answer (outputs, none of them a tool call, no error) is *answered*: the
stitcher keeps those apart (:meth:`Stitcher.answered_before`) so that a receiver can write a run as soon as it is
provably over (``spanfold serve --final-wait``) instead of after the idle window.

A :class:`Conversation` owns what its members bring: their spans, their steps (parsed once, handed on to the fold)
and their attribute bytes (counted as they join). Pure bookkeeping of one process's open conversations: no threads,
no I/O; :mod:`.grouping` decides when one closes and hands it on as a :class:`~.run.Run`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field

from spanfold import semconv
from spanfold.exporter.records import SpanRecord
from spanfold.exporter.runs.run import part_key, worst
from spanfold.exporter.steps import AgentSpan, ModelStep, Step, ToolStep
from spanfold.semconv.shapes import first_choice
from spanfold.stitching import evidence
from spanfold.stitching.fingerprints import tool_calls
from spanfold.stitching.live import Live
from spanfold.stitching.pairing import Call
from spanfold.trace.model import TraceStatus


@dataclass(slots=True, eq=False)
class Conversation:
    """Member traces of one stitched run, in the order they completed, and the attribute bytes of their spans
    (:mod:`.grouping` bounds them)."""

    serial: int
    #: Its run's id within traces other runs share (``spanfold.run.id``); None: its traces are its own.
    run_id: str | None = None
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

    def left_asking(self) -> bool:
        """Whether its last step (by start) is a model call that asked for tools: nothing ran them, the run was not
        over (its calls may have arrived together, so :attr:`asking` alone does not tell)."""
        last: ModelStep | ToolStep | None = None
        for step in self.steps.values():
            if not isinstance(step, (ModelStep, ToolStep)) or (isinstance(step, ModelStep) and step.error):
                continue
            if last is None or step.start_ns >= last.start_ns:
                last = step
        return isinstance(last, ModelStep) and bool(tool_calls(first_choice(last.outputs)[0]))


def placed_at_source(record: SpanRecord) -> bool:
    """Whether the source decided the span's zero-code run (``spanfold.stitched``): its trace id tells, and the fold
    decides nothing more for it."""
    return record.attributes.get(semconv.SPANFOLD_STITCHED) is True


def stitch_root(
    records: Iterable[SpanRecord], steps: dict[int, Step | None]
) -> tuple[SpanRecord, ModelStep | ToolStep] | None:
    """The root of a trace that may be stitched, and its step: its first local root (un-parented, or the part of a
    trace whose parent is elsewhere: the later calls of a run stitched at the source, a run under an external
    ``traceparent``, several of which may arrive together) when that is a model call or a tool run, and no agent span
    anywhere (such a trace is its own conversation)."""
    root: SpanRecord | None = None
    for r in records:
        if r.is_local_root and (root is None or (r.start_ns, r.span_id) < (root.start_ns, root.span_id)):
            root = r
    if root is None or any(isinstance(s, AgentSpan) for s in steps.values()):
        return None
    step = steps.get(root.span_id)
    return (root, step) if isinstance(step, (ModelStep, ToolStep)) else None


class Stitcher:
    """Open conversations, the evidence each holds, and the traces each is made of."""

    def __init__(self) -> None:
        self._live: Live[Conversation] = Live()  # the open ones: their evidence, their tool calls, their windows
        #: Part key (:func:`~.run.part_key`: a trace id, with a run id) -> the open conversation holding that part.
        self._members: dict[Hashable, Conversation] = {}
        self._serial = 0
        self.answered: OrderedDict[int, Conversation] = OrderedDict()  # final answer given; least recently seen first

    @property
    def open(self) -> OrderedDict[int, Conversation]:
        """The open conversations, least recently active first."""
        return self._live.windows.open

    @property
    def asking(self) -> OrderedDict[int, Conversation]:
        """The open conversations whose latest call asked for tools (the longer window), least recently active first."""
        return self._live.windows.asking

    @property
    def resting(self) -> OrderedDict[int, Conversation]:
        """The other open conversations, least recently active first."""
        return self._live.windows.resting

    def __len__(self) -> int:
        return len(self._live)

    def _new(self, run_id: str | None = None) -> Conversation:
        self._serial += 1
        conv = Conversation(self._serial, run_id)
        self._live.windows.add(conv)
        return conv

    def _touch(self, conv: Conversation, now: float) -> None:
        self._live.windows.touch(conv, now)

    # --- model calls -------------------------------------------------------------------------------------

    @staticmethod
    def _history(step: ModelStep) -> list[int]:
        return evidence.chain(evidence.seed(step.system_instructions), evidence.history_prints(step.inputs))

    @staticmethod
    def _names(step: ModelStep) -> list[Hashable]:
        names: list[Hashable] = []
        if step.previous_response_id is not None:
            names.append(("response", step.previous_response_id))
        if step.conversation_id is not None:
            names.append(("conversation", step.conversation_id))
        return names

    def _find_model(self, step: ModelStep, history: list[int]) -> Conversation | None:
        return self._live.index.find(self._names(step), history, claim=step.error is None).conversation

    def _register_model(self, conv: Conversation, step: ModelStep, history: list[int] | None) -> bool:
        """What the call shows of its run: True for a final answer. ``history``: its input history, when the call is
        evidence other calls may be found by (its history past its output, its response and conversation ids, the
        tool calls it asked for); None for a call placed at the source."""
        outs, _ = first_choice(step.outputs)
        calls = tool_calls(outs)
        if history is not None:
            origin = history[-1] if history else evidence.seed(step.system_instructions)
            if step.error is None:  # a failed call adds no history: equal text is no retry
                self._live.answered(conv, origin, evidence.history_prints(outs))
            elif history:  # its request sent again is its retry or another run's: a counted split, never a join
                self._live.hold(conv, evidence.failed_key(origin))
            if step.response_id is not None:
                self._live.hold(conv, ("response", step.response_id))
            if step.conversation_id is not None:
                self._live.hold(conv, ("conversation", step.conversation_id))
            self._live.expect(conv, calls)
        if step.error is None:  # a failed call leaves the run waiting as it was (as at the source): it is retried
            conv.asking = bool(calls)
        return bool(outs) and step.error is None and not calls

    # --- tool runs ---------------------------------------------------------------------------------------

    def _find_tool(self, step: ToolStep) -> Conversation | None:
        """The conversation waiting on the run's call id, when exactly one does (the fold does not see where a run
        ran: a run without an id is a run of its own, :func:`~spanfold.stitching.evidence.tool_call`)."""
        call = self._live.tool(step.call_id, step.name, step.arguments, None)
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
        placed: bool = False,
        run_id: str | None = None,
    ) -> Conversation:
        """Join the trace to the conversation it continues, or open a new one; returns it. ``attribute_bytes``: of the
        trace's spans (the conversation counts them); ``placed``: spanfold's own root, whose conversation the source
        decided (only its trace id, with its ``run_id`` when it names one, joins it)."""
        part = part_key(trace_id, run_id)
        member = self.member(part)  # the parts of one run's trace (a run stitched at the source) go together
        final = False
        if isinstance(root, ModelStep):
            history = None if placed else self._history(root)
            found = self._find_model(root, history) if member is None and history is not None else None
            conv = member or found or self._new(run_id)
            final = self._register_model(conv, root, history)
        else:
            conv = member or (None if placed else self._find_tool(root)) or self._new(run_id)
        if member is None:
            self._members[part] = conv
            conv.keys.append(("trace", part))
        conv.add(trace_id, records, steps, status, attribute_bytes)
        self._touch(conv, now)
        self.answered.pop(conv.serial, None)
        if final:
            conv.answer_seen = now
            self.answered[conv.serial] = conv
        return conv

    def member(self, part: Hashable) -> Conversation | None:
        """The open conversation holding a part of a trace (:func:`~.run.part_key`)."""
        conv = self._members.get(part)
        return conv if conv is not None and conv in self._live else None

    def join(self, conv: Conversation, record: SpanRecord, step: Step | None, size: int, now: float) -> None:
        """One more span of a trace the conversation holds (a span that arrived after its trace's part was folded)."""
        conv.add(record.trace_id, [record], {record.span_id: step}, "complete", size)
        if isinstance(step, ModelStep) and record.is_local_root:  # a call of the run: a final answer ends it
            self.answered.pop(conv.serial, None)
            history = None if placed_at_source(record) else self._history(step)
            if self._register_model(conv, step, history):
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
        while (conv := self._live.windows.due(before, before if asking_before is None else asking_before)) is not None:
            if busy is not None and busy(conv):
                self._touch(conv, now)
                continue
            out.append(self.close(conv))
        return out

    def idle_deadline(self, idle: float, asking_idle: float) -> float | None:
        """When :meth:`idle` next has a conversation to close, given the two windows (None: none is open)."""
        return self._live.windows.deadline(idle, asking_idle)

    def oldest_touch(self) -> float | None:
        oldest = self._live.windows.oldest()
        return oldest.touched if oldest is not None else None

    def close(self, conv: Conversation) -> Conversation:
        self.answered.pop(conv.serial, None)
        for key in conv.keys:
            if isinstance(key, tuple) and key[0] == "trace" and self._members.get(key[1]) is conv:
                del self._members[key[1]]
        self._live.close(conv)  # its trace keys are none of the index's: releasing them does nothing
        return conv

    def close_all(self) -> list[Conversation]:
        return [self.close(c) for c in list(self.open.values())]

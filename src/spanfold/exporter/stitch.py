"""Zero-code stitching (DESIGN folding rule 5): un-parented model calls of one run joined into one conversation.

An agent that never opens an ``invoke_agent`` span makes one OTel trace per model call (and per ``@tool`` call). A
new call joins an open conversation when its input history extends that conversation's history (the inputs and
first-choice outputs of one of its calls), when it continues one of its responses (``previous_response_id``), or
shares its ``gen_ai.conversation.id``; a tool span joins the conversation waiting on its call id, or, without an id,
the conversation that has waited longest on a call with its name and arguments (else its name): each waiting call
takes one tool run, so concurrent runs making the same call get one each. Lookups are hashes: a rolling hash over
the message fingerprints, so finding the conversation a call extends costs O(its inputs), never a comparison with
every open conversation.

Pure bookkeeping: no threads, no I/O (the processor closes conversations and writes them).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from spanfold.exporter.dialects import AgentSpan, ModelStep, Step, ToolStep
from spanfold.exporter.events import INPUTS, Fingerprint, args_key, fingerprint, message_events, system_event
from spanfold.exporter.records import SpanRecord
from spanfold.trace.model import TraceStatus

_STATUS_RANK: dict[TraceStatus, int] = {"complete": 0, "incomplete": 1, "truncated": 2}


@dataclass(slots=True, eq=False)
class _Waiting:
    """A tool call a conversation waits on; ``taken`` once a tool run answered it (or the conversation closed)."""

    conv: Conversation
    call_id: str | None
    keys: tuple[Hashable, ...]
    taken: bool = False


@dataclass(slots=True, eq=False)
class Conversation:
    """Member traces of one stitched run, in the order they completed."""

    serial: int
    trace_ids: list[int] = field(default_factory=list)
    records: list[SpanRecord] = field(default_factory=list)
    steps: dict[int, Step | None] = field(default_factory=dict)
    status: TraceStatus = "complete"
    keys: list[Hashable] = field(default_factory=list)
    waiting: list[_Waiting] = field(default_factory=list)
    touched: float = 0.0
    attribute_bytes: int = 0  # of its members' spans (the assembler bounds it)

    def add(self, trace_id: int, records: list[SpanRecord], steps: dict[int, Step | None], status: TraceStatus) -> None:
        self.trace_ids.append(trace_id)
        self.records.extend(records)
        self.steps.update(steps)
        if _STATUS_RANK[status] > _STATUS_RANK[self.status]:
            self.status = status


def stitch_root(records: Iterable[SpanRecord], steps: dict[int, Step | None]) -> ModelStep | ToolStep | None:
    """The root step of a trace that may be stitched: one un-parented root that is a model call or a tool run, and no
    agent span anywhere (such a trace is its own conversation)."""
    root: SpanRecord | None = None
    for r in records:
        if r.parent_id is None:
            if root is not None:
                return None
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
        self.open: OrderedDict[int, Conversation] = OrderedDict()  # least recently active first
        self._index: dict[Hashable, Conversation] = {}
        #: Calls waiting for their tool run: by call id, and in arrival order by (name, arguments) and by name.
        self._calls: dict[str, _Waiting] = {}
        self._queues: dict[Hashable, deque[_Waiting]] = {}
        self._serial = 0

    def __len__(self) -> int:
        return len(self.open)

    def _new(self) -> Conversation:
        self._serial += 1
        conv = Conversation(self._serial)
        self.open[conv.serial] = conv
        return conv

    def _register(self, conv: Conversation, key: Hashable) -> None:
        self._index[key] = conv
        conv.keys.append(key)

    def _lookup(self, key: Hashable) -> Conversation | None:
        conv = self._index.get(key)
        return conv if conv is not None and conv.serial in self.open else None

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

    def _register_model(self, conv: Conversation, step: ModelStep, seed: int, inputs: list[Fingerprint]) -> None:
        outs = step.outputs
        if len(outs) > 1 and all(m.get("role", "assistant") == "assistant" for m in outs):
            outs = outs[:1]
        out_events = [e for m in outs for e in message_events(m, {})]
        history = _chain(seed, [*inputs, *(fingerprint(e) for e in out_events)])
        if out_events or step.error is not None:  # a retry of a failed call re-sends the same inputs
            self._register(conv, ("history", history[-1] if history else seed))
        if step.response_id is not None:
            self._register(conv, ("response", step.response_id))
        if step.conversation_id is not None:
            self._register(conv, ("conversation", step.conversation_id))
        for e in out_events:
            for tc in e.tool_calls:
                self._wait(conv, tc.id, ("signature", tc.name, args_key(tc.arguments)), ("tool", tc.name))

    # --- tool runs ---------------------------------------------------------------------------------------

    def _wait(self, conv: Conversation, call_id: str | None, *keys: Hashable) -> None:
        waiting = _Waiting(conv, call_id, keys)
        conv.waiting.append(waiting)
        if call_id is not None:
            self._calls[call_id] = waiting
        for key in keys:
            self._queues.setdefault(key, deque()).append(waiting)

    def _trim(self, key: Hashable) -> deque[_Waiting] | None:
        """The queue of ``key`` without the answered calls at its head (dropped when empty)."""
        queue = self._queues.get(key)
        while queue and queue[0].taken:
            queue.popleft()
        if queue is not None and not queue:
            del self._queues[key]
            return None
        return queue

    def _take(self, waiting: _Waiting | None) -> Conversation | None:
        if waiting is None or waiting.taken:
            return None
        waiting.taken = True
        for key in waiting.keys:
            self._trim(key)
        return waiting.conv

    def _find_tool(self, step: ToolStep) -> Conversation | None:
        if step.call_id is not None:
            return self._take(self._calls.pop(step.call_id, None))
        name = step.name or ""
        for key in (("signature", name, args_key(step.arguments)), ("tool", name)):
            queue = self._trim(key)
            if queue:
                return self._take(queue[0])
        return None

    # --- public ------------------------------------------------------------------------------------------

    def add(
        self,
        root: ModelStep | ToolStep,
        trace_id: int,
        records: list[SpanRecord],
        steps: dict[int, Step | None],
        status: TraceStatus,
        now: float,
    ) -> Conversation:
        """Join the trace to the conversation it continues, or open a new one; returns it."""
        if isinstance(root, ModelStep):
            seed = self._seed(root)
            inputs = _fingerprints(root.inputs)
            conv = self._find_model(root, _chain(seed, inputs)) or self._new()
            self._register_model(conv, root, seed, inputs)
        else:
            conv = self._find_tool(root) or self._new()
        conv.add(trace_id, records, steps, status)
        conv.touched = now
        self.open.move_to_end(conv.serial)
        return conv

    def idle(self, before: float) -> list[Conversation]:
        """Close and return the conversations last active before ``before``."""
        out = []
        while self.open:
            conv = next(iter(self.open.values()))
            if conv.touched >= before:
                break
            out.append(self.close(conv))
        return out

    def oldest_touch(self) -> float | None:
        return next(iter(self.open.values())).touched if self.open else None

    def close(self, conv: Conversation) -> Conversation:
        self.open.pop(conv.serial, None)
        for key in conv.keys:
            if self._index.get(key) is conv:
                del self._index[key]
        conv.keys.clear()
        for waiting in conv.waiting:  # calls never answered: out of the queues
            self._take(waiting)
            if waiting.call_id is not None and self._calls.get(waiting.call_id) is waiting:
                del self._calls[waiting.call_id]
        conv.waiting.clear()
        return conv

    def close_all(self) -> list[Conversation]:
        return [self.close(c) for c in list(self.open.values())]

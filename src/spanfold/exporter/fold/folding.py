"""Fold a run's steps into a flat event list (DESIGN "Folding"), then its metadata. Pure: no threads, no I/O.

1. The fold reads steps, never a span's attributes: a run brings them (:func:`fold_run`, the stage after the runs:
   :mod:`spanfold.exporter.runs`); :func:`fold` reads one trace's spans through their dialects first
   (:func:`~spanfold.exporter.dialects.dispatch.steps_of`).
2. Steps are taken in time order: a model step at its start, a tool result at its end (ties: end, span id).
3. A conversation per thread (nearest ``invoke_agent`` ancestor, else ``gen_ai.conversation.id``, else one thread).
   Each model step appends only the input messages its thread has not shown yet (:mod:`~.history`), then its
   outputs (the first choice, :func:`~spanfold.semconv.shapes.first_choice`; other choices go to that event's
   metadata), then its error. A model step made inside a memory operation (mem0 extracting facts) is the memory's
   work: tallied (tokens, cost, a metadata step), never the conversation's events.
4. Every tool call has an id: the producer's, else one made of its model step's span id and its place there
   (:func:`~.events.made_call_id`, the same in every fold of the same spans).
5. One output per call, paired with it: a tool span answers the waiting call with its id, else with its name and
   arguments, in order (:mod:`~spanfold.stitching.pairing`); an output the next step's inputs send answers with its
   id, else (Gemini, Ollama) the thread's oldest call still waiting for one, with its name when it has one. When both
   a tool span and the next step's inputs hold a call's output they are merged into the one event, where the span put
   it: the span gives its time, error and call id, the inputs the output text as the model received it; an empty
   field never overwrites a known one. Results of parallel calls keep the model's order.
6. Trace metadata (models, token totals, start/end, cost) is tallied as the steps go, and written last (:mod:`~.meta`).

Cost is linear in the attribute bytes: one parse per attribute, hash lookups, no pairwise comparisons.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from spanfold import counters
from spanfold.exporter.dialects.dispatch import steps_of
from spanfold.exporter.fold.events import (
    Fingerprint,
    fingerprint,
    message_events,
    name_calls,
    note_calls,
    system_event,
)
from spanfold.exporter.fold.history import InputEvents, Thread
from spanfold.exporter.fold.meta import Tally, iso, run_meta, span_hex, step_metadata, trace_meta
from spanfold.exporter.fold.nested_tools import merge_nested_tool_steps
from spanfold.exporter.records import SpanRecord
from spanfold.exporter.runs.run import Run
from spanfold.exporter.steps import AgentSpan, AsideStep, ModelStep, Step, ToolStep
from spanfold.pricing.overrides import PriceOverrides
from spanfold.semconv.shapes import first_choice
from spanfold.stitching.pairing import Call, Pairing
from spanfold.trace.model import Message, Trace, TraceMeta

__all__ = ["drop_duplicate_calls", "fold", "fold_run", "iso", "span_hex"]


def _richness(step: ModelStep) -> tuple[int, int, int]:
    """More content first (a producer recording content beats one that does not), then the outer span."""
    return (len(step.outputs), len(step.inputs), -step.start_ns)


def _nested(a: ModelStep, b: ModelStep) -> bool:
    """One span's time window holds the other's."""
    return (a.start_ns <= b.start_ns and b.end_ns <= a.end_ns) or (b.start_ns <= a.start_ns and a.end_ns <= b.end_ns)


def drop_duplicate_calls(steps: dict[int, Step]) -> None:
    """One API call recorded by two producers (the anthropic SDK's own span beside another instrumentation's) is
    one model step: model steps with the same parent and response id whose time windows nest are the same call; the
    richest is kept, the others counted. (Separate calls answered with one id, as mock servers do, never nest.)"""
    kept: dict[tuple[int | None, str], list[ModelStep]] = {}
    for step in list(steps.values()):
        if not isinstance(step, ModelStep) or step.response_id is None:
            continue
        same = kept.setdefault((step.parent_id, step.response_id), [])
        twin = next((other for other in same if _nested(other, step)), None)
        if twin is None:
            same.append(step)
            continue
        loser = step if _richness(twin) >= _richness(step) else twin
        if loser is twin:
            same[same.index(twin)] = step
        del steps[loser.span_id]
        counters.incr("fold.duplicate_model_steps")


def drop_nested_calls(steps: dict[int, Step], parents: Mapping[int, int | None]) -> None:
    """A model step inside another model step is one call seen twice: a framework's model span (pydantic-ai's
    ``chat``, Strands' ``chat``, ADK's ``call_llm``) around the span an SDK patch made of the call it sends. A model
    step whose nearest step ancestor (through spans that are not steps) is a model step joins that step's group;
    each group keeps one step: the one with the most content (outputs, then inputs), the innermost on a tie (the
    provider's span, closest to the wire). It takes the usage and response id of the others when it has none, so
    the call's tokens count once. Linear: each span's nearest step ancestor is found once (memoised)."""
    nearest: dict[int, int | None] = {}

    def step_above(span_id: int) -> int | None:
        path: list[int] = []
        parent = parents.get(span_id)
        found: int | None = None
        while parent is not None and parent not in nearest and parent not in steps and len(path) <= len(parents):
            path.append(parent)
            parent = parents.get(parent)
        if parent is not None:
            found = parent if parent in steps else nearest.get(parent)
        for sid in path:
            nearest[sid] = found
        return found

    top: dict[int, tuple[int, int]] = {}  # model step -> (the outermost model step of its group, its depth)

    def top_of(span_id: int) -> tuple[int, int]:
        chain: list[int] = []
        current = span_id
        while current not in top:
            above = step_above(current)
            if above is None or above in chain or above == span_id or not isinstance(steps.get(above), ModelStep):
                top[current] = (current, 0)
                break
            chain.append(current)
            current = above
        root, depth = top[current]
        for sid in reversed(chain):
            depth += 1
            top[sid] = (root, depth)
        return top[span_id]

    groups: dict[int, list[tuple[int, ModelStep]]] = {}  # the outermost model step's span id -> (depth, step)
    for step in [s for s in steps.values() if isinstance(s, ModelStep)]:
        root, depth = top_of(step.span_id)
        groups.setdefault(root, []).append((depth, step))
    for group in groups.values():
        if len(group) < 2:
            continue
        keep = max(group, key=lambda item: (len(item[1].outputs), len(item[1].inputs), item[0]))[1]
        for _, other in group:
            if other is not keep:
                keep.usage = keep.usage or other.usage
                keep.response_id = keep.response_id or other.response_id
                del steps[other.span_id]
                counters.incr("fold.duplicate_model_steps")


class _FoldThread(Thread):
    """A thread of the fold: its history, and the batch of tool calls its last model step made, with the results
    held until the whole batch is answered (so parallel results keep the model's order)."""

    __slots__ = ("batch", "held")

    def __init__(self, agent: str | None) -> None:
        super().__init__(agent)
        self.batch: list[Call[_FoldThread]] = []
        self.held: dict[Call[_FoldThread], Message] = {}


#: Content that says nothing: it never overwrites an output a tool span recorded.
_EMPTY: tuple[object, ...] = (None, "", [])


def error_text(err: dict[str, Any]) -> str:
    """An error event's text: ``type: message``, the type written once (a message that already starts with it, as
    an OTel status description does, is written as it is)."""
    kind, message = str(err.get("type")), err.get("message")
    if not message:
        return kind
    message = str(message)
    short = kind.rpartition(".")[2]
    return message if message.startswith((f"{kind}:", f"{short}:")) else f"{kind}: {message}"


class _Folder:
    def __init__(
        self, records: list[SpanRecord], steps: Mapping[int, Step | None], prices: PriceOverrides | None = None
    ) -> None:
        self.records = records
        self.parents = {r.span_id: r.parent_id for r in records}
        self.steps: dict[int, Step] = {}
        for r in records:
            step = steps.get(r.span_id)
            if step is not None:
                self.steps[r.span_id] = step
        if len(self.steps) > 1:  # a step seen twice takes two
            drop_duplicate_calls(self.steps)
            # One call seen twice is one process's nesting: a remote parent (a later call of a run stitched at the
            # source, under a remote copy of the run's first call) is another call.
            local = {r.span_id: None if r.parent_is_remote else r.parent_id for r in records}
            drop_nested_calls(self.steps, local)
            # A tool run seen twice may cross processes: an MCP server's span under the client's, through the
            # context the request carried (a remote parent).
            merge_nested_tool_steps(self.steps, self.parents)
        self.agents = {sid: s for sid, s in self.steps.items() if isinstance(s, AgentSpan)}
        self._agent_of: dict[int, AgentSpan | None] = {}
        self.threads: dict[Hashable, _FoldThread] = {}
        self.events: list[Message] = []
        self.call_names: dict[str, str] = {}
        self.shown_tool_ids: set[str] = set()
        self.calls: Pairing[_FoldThread] = Pairing()
        #: The tool outputs shown, by call id; those a tool span made and no step's inputs have sent yet (by
        #: identity); the calls whose output a step's inputs sent.
        self.outputs_by_id: dict[str, Message] = {}
        self.unsent: set[int] = set()
        self.sent_calls: set[Call[_FoldThread]] = set()
        self.tally = Tally(prices)
        self.inputs = InputEvents(self.call_names)
        #: A model step's first event it produced (its first output, else its error), by span id; and every event a
        #: step produced (outputs, errors, tool runs' outputs), by identity: the rest were handed to the run.
        self.first_output: dict[int, Message] = {}
        self.produced: set[int] = set()
        #: A step beside the conversation (embeddings, retrieval ...): the position of the event written after it.
        self.precedes: dict[int, int] = {}

    # --- threads -----------------------------------------------------------------------------------------

    def agent_of(self, span_id: int) -> AgentSpan | None:
        """The nearest ``invoke_agent`` ancestor (memoised; cycles in bad input end the walk)."""
        path: list[int] = []
        found: AgentSpan | None = None
        parent = self.parents.get(span_id)
        seen: set[int] = set()
        while parent is not None and parent not in seen:
            if parent in self._agent_of:
                found = self._agent_of[parent]
                break
            seen.add(parent)
            path.append(parent)
            if parent in self.agents:
                found = self.agents[parent]
                break
            parent = self.parents.get(parent)
        for sid in path:
            if sid in self.agents:
                self._agent_of[sid] = self.agents[sid]
                break
            self._agent_of[sid] = found
        return found

    def thread_of(self, step: ModelStep | ToolStep) -> _FoldThread:
        agent = self.agent_of(step.span_id)
        key: Hashable
        if agent is not None:
            key = ("agent", agent.conversation_id or agent.span_id)
        elif step.conversation_id is not None:
            key = ("conversation", step.conversation_id)
        else:
            key = ("default",)
        thread = self.threads.get(key)
        if thread is None:
            thread = self.threads[key] = _FoldThread(agent.name if agent is not None else None)
        return thread

    # --- events ------------------------------------------------------------------------------------------

    def emit(
        self,
        thread: _FoldThread,
        msg: Message,
        ts: int | None,
        span_id: int | None,
        *,
        history: bool = True,
        fp: Fingerprint | None = None,
    ) -> None:
        """Append an event (``ts``/``span_id`` None: already set on it; ``fp``: its fingerprint, when known)."""
        self.emit_all(thread, ((msg, fp),), ts, span_id, history=history)

    def emit_all(
        self,
        thread: _FoldThread,
        shown: Iterable[tuple[Message, Fingerprint | None]],
        ts: int | None,
        span_id: int | None,
        *,
        history: bool = True,
    ) -> None:
        """:meth:`emit` each of ``shown`` in turn, at one time and span (a step's new input events)."""
        stamp = iso(ts) if ts is not None else None
        span = span_hex(span_id) if span_id is not None else None
        agent = thread.agent
        events = self.events
        for msg, fp in shown:
            if stamp is not None:
                msg.timestamp = stamp
            if span is not None:
                msg.metadata.setdefault("span_id", span)
            if agent is not None:
                msg.metadata.setdefault("agent", agent)
            events.append(msg)
            if history:
                thread.add(fp if fp is not None else fingerprint(msg), msg)
            if msg.role == "tool" and msg.tool_call_id is not None:
                self.shown_tool_ids.add(msg.tool_call_id)
                self.outputs_by_id.setdefault(msg.tool_call_id, msg)
                self.calls.answer(msg.tool_call_id)

    def expect(self, thread: _FoldThread, msg: Message) -> None:
        """The tool calls of an output message now wait for results (in the model's order)."""
        for tc in msg.tool_calls:
            thread.batch.append(self.calls.expect(thread, tc.id, tc.name, tc.arguments))

    def release(self, thread: _FoldThread) -> None:
        """Emit the tool results held for the thread's last batch of calls, in the model's order."""
        batch, held, thread.batch, thread.held = thread.batch, thread.held, [], {}
        for call in batch:
            result = held.get(call)
            if result is not None:
                self.emit(thread, result, None, None)  # time and span were set when it was held

    def sent(self, shown: Message, sent: Message) -> None:
        """A tool output a step's inputs send, merged into the one a tool span recorded (the first time it is sent:
        a later, summarised copy changes nothing): the output text as the model received it; the span keeps its
        time, error and call id, and a failed run's text stays its error's. An empty field never overwrites a known
        one."""
        if id(shown) not in self.unsent:
            return
        self.unsent.discard(id(shown))
        if sent.content not in _EMPTY and (shown.error is None or shown.content in _EMPTY):
            shown.content = sent.content
        if shown.name is None:
            shown.name = sent.name

    def answered_by_inputs(
        self,
        thread: _FoldThread,
        step: ModelStep,
        new: list[tuple[Message, Fingerprint]],
        batch: list[Call[_FoldThread]],
        held: dict[Call[_FoldThread], Message],
    ) -> tuple[list[tuple[Message, Fingerprint]], dict[Call[_FoldThread], Message]]:
        """Pair the tool outputs among a step's new input events with the calls they answer (module doc, 5); the
        calls of new input messages get their ids. Returns the events still to show, in order, and (when results
        are held, to be shown in the model's order) the outputs that answer calls of the batch."""
        rest: list[tuple[Message, Fingerprint]] = []
        answers: dict[Call[_FoldThread], Message] = {}
        by_id = {call.id: call for call in batch}
        earlier: deque[Call[_FoldThread]] = deque()  # the calls of new input messages, each waiting for its output
        made = 0
        for item in new:
            msg, fp = item
            if msg.role != "tool":
                if msg.tool_calls:
                    made = name_calls(msg, step.span_id, "in", made)
                    note_calls(self.call_names, msg)
                    earlier.extend([Call(thread, tc.id, tc.name, tc.arguments) for tc in msg.tool_calls])
                rest.append(item)
                continue
            call = self.waiting_call(msg, by_id, batch, held, earlier)
            if call is not None and call in held:
                self.sent_calls.add(call)
                self.sent(held[call], msg)
                continue
            if msg.tool_call_id is not None and msg.tool_call_id in self.shown_tool_ids:
                shown = self.outputs_by_id.get(msg.tool_call_id)
                if shown is not None:
                    self.sent(shown, msg)
                continue  # its output came from the tool span
            if call is not None:
                self.sent_calls.add(call)
                msg.tool_call_id = call.id
                msg.name = msg.name or call.name or None
                fp = fingerprint(msg)
                if held and by_id.get(call.id) is call:
                    answers[call] = msg
                    continue
            rest.append((msg, fp))
        return rest, answers

    def waiting_call(
        self,
        msg: Message,
        by_id: dict[str | None, Call[_FoldThread]],
        batch: list[Call[_FoldThread]],
        held: dict[Call[_FoldThread], Message],
        earlier: deque[Call[_FoldThread]],
    ) -> Call[_FoldThread] | None:
        """The call an input tool output answers: by its id; without one, the oldest call waiting for its output
        among the calls of the step's new input messages before it, else of the thread's last batch (one a tool span
        answered only while its result is held), with the output's tool name when it has one."""
        if msg.tool_call_id is not None:
            return by_id.get(msg.tool_call_id)
        while earlier and earlier[0] in self.sent_calls:  # answered in order: each call is passed over once
            earlier.popleft()
        for call in earlier:
            if call not in self.sent_calls and (msg.name is None or call.name == msg.name):
                return call
        for call in batch:
            if call in self.sent_calls or (call.answered and call not in held):
                continue
            if msg.name is None or call.name == msg.name:
                return call
        return None

    # --- steps -------------------------------------------------------------------------------------------

    def model(self, step: ModelStep) -> None:
        thread = self.thread_of(step)
        self.tally.add(step)
        batch, held, thread.batch, thread.held = thread.batch, thread.held, [], {}
        new = thread.unseen(step.inputs, self.inputs, self.sent)
        new, answers = self.answered_by_inputs(thread, step, new, batch, held)
        if held:  # the batch's results in the model's order: a tool span's, else the one these inputs send
            for call in batch:
                result = held.get(call)
                if result is not None:
                    self.emit(thread, result, None, None)  # time and span were set when it was held
                elif call in answers:
                    self.emit(thread, answers[call], step.start_ns, step.span_id)
        if step.system_instructions is not None:
            system = system_event(step.system_instructions)
            fp = fingerprint(system)
            if fp != thread.system:
                thread.system = fp
                self.emit(thread, system, step.start_ns, step.span_id, history=False)
        self.emit_all(thread, new, step.start_ns, step.span_id)
        self.outputs(thread, step)
        if step.error is not None:
            err = step.error
            failed = Message(role="error", content=error_text(err), error=err, metadata=step_metadata(step))
            self.first_output.setdefault(step.span_id, failed)
            self.produced.add(id(failed))
            self.emit(thread, failed, step.end_ns, step.span_id, history=False)

    def outputs(self, thread: _FoldThread, step: ModelStep) -> None:
        outs, more = first_choice(step.outputs)
        others = [e.to_invariant() for m in more for e in message_events(m, self.call_names)]
        first = True
        made = 0
        for raw in outs:
            for msg in message_events(raw, self.call_names):
                fp = fingerprint(msg)  # as the next step's inputs send it back: without the ids made here
                made = name_calls(msg, step.span_id, "", made)
                note_calls(self.call_names, msg)
                if first:
                    msg.metadata.update(step_metadata(step))
                    if others:
                        msg.metadata["choices"] = others
                    first = False
                    self.first_output.setdefault(step.span_id, msg)
                self.produced.add(id(msg))
                self.emit(thread, msg, step.end_ns, step.span_id, fp=fp)
                self.expect(thread, msg)

    def tool(self, step: ToolStep) -> None:
        self.tally.add(step)  # the metadata's steps and the run's status count every tool run, shown or not
        if step.call_id is not None and step.call_id in self.shown_tool_ids:
            self.late(step, step.call_id)
            return  # already shown (from the next step's inputs)
        call = self.calls.answer(step.call_id, step.name, step.arguments)
        call_id = step.call_id if step.call_id is not None else (call.id if call is not None else None)
        if call_id is not None and call_id in self.shown_tool_ids:
            self.late(step, call_id)
            return
        err = step.error
        content = step.result
        if err is not None:
            content = err.get("message") or err.get("type")
        name = step.name if step.name is not None else (call.name if call is not None else None)
        msg = Message(role="tool", content=content, tool_call_id=call_id, name=name, error=err)
        msg.timestamp = iso(step.end_ns)
        msg.metadata["span_id"] = span_hex(step.span_id)
        self.unsent.add(id(msg))
        self.produced.add(id(msg))
        if call is None:
            self.emit(self.thread_of(step), msg, step.end_ns, step.span_id)
            return
        if call.id is not None:
            self.shown_tool_ids.add(call.id)
        thread = call.owner
        if any(c is call for c in thread.batch):
            thread.held[call] = msg
            if all(c.answered for c in thread.batch):
                self.release(thread)
        else:
            self.emit(thread, msg, step.end_ns, step.span_id)

    def late(self, step: ToolStep, call_id: str) -> None:
        """A tool span whose output a step's inputs showed first: what it knows that the event lacks (its error)."""
        shown = self.outputs_by_id.get(call_id)
        if shown is not None and shown.error is None and step.error is not None:
            shown.error = step.error

    # --- the whole trace ---------------------------------------------------------------------------------

    def run(self) -> list[Message]:
        order: list[tuple[tuple[int, int, int], ModelStep | ToolStep | AsideStep]] = []
        for step in self.steps.values():
            if isinstance(step, (ModelStep, AsideStep)):
                order.append(((step.start_ns, step.end_ns, step.span_id), step))
            elif isinstance(step, ToolStep):
                order.append(((step.end_ns, step.end_ns, step.span_id), step))
        order.sort(key=lambda item: item[0])
        for _, step in order:
            if isinstance(step, ModelStep):
                if self.in_memory_operation(step.span_id):  # the memory's own work: counted, not the conversation
                    self.tally.add(step)
                    continue
                self.model(step)
            elif isinstance(step, ToolStep):
                self.tool(step)
            else:  # beside the conversation: a metadata step, before the next event written
                self.tally.add(step)
                self.precedes[step.span_id] = len(self.events)
        for thread in self.threads.values():
            self.release(thread)
        return self.events

    def in_memory_operation(self, span_id: int) -> bool:
        """Whether a memory operation (mem0's ``add`` extracting facts with a model call of its own) is the nearest
        step above the span, before any agent: its model calls are the memory's work, not the agent's conversation
        (their tokens and cost are the run's all the same)."""
        seen: set[int] = set()
        parent = self.parents.get(span_id)
        while parent is not None and parent not in seen:
            seen.add(parent)
            step = self.steps.get(parent)
            if isinstance(step, AsideStep):
                return step.kind == "memory"
            if isinstance(step, AgentSpan):
                return False
            parent = self.parents.get(parent)
        return False

    def roots(self) -> list[AgentSpan]:
        """The agent spans with no agent above them."""
        return [a for a in self.agents.values() if self.agent_of(a.span_id) is None]

    def place(self, meta: TraceMeta) -> TraceMeta:
        """What the metadata learns from the events as folded: how many leading events the run was handed (the
        history its first call sent, up to the first event a step produced) and, for each model call, the event it
        produced first (not the first of its inputs, which may be an earlier turn's)."""
        events = self.events
        meta.handed = next((n for n, e in enumerate(events) if id(e) in self.produced), len(events))
        if self.first_output and meta.steps:
            position = {id(e): n for n, e in enumerate(events)}
            for step in meta.steps:
                if step.kind == "model" and step.span_id is not None:
                    msg = self.first_output.get(int(step.span_id, 16))
                    if msg is not None:
                        step.event = position.get(id(msg))
        if self.precedes:  # a step beside the conversation: the event it precedes, when one came after it
            for step in meta.steps:
                at = self.precedes.get(int(step.span_id, 16)) if step.span_id is not None else None
                if at is not None and at < len(events):
                    step.event = at
        return meta


def fold_run(run: Run, prices: PriceOverrides | None = None) -> Trace:
    """The flat trace of a run (one trace, or a stitched conversation), from the steps it brings, and its metadata
    (``prices``: the user's, over the table's, for what its model calls cost). Never raises on bad span data: faults
    are counted."""
    folder = _Folder(run.records, run.steps, prices)
    events = folder.run()
    return Trace(events=events, meta=folder.place(run_meta(run, folder.roots(), folder.tally)))


def fold(
    spans: Iterable[SpanRecord],
    *,
    trace_id: str,
    steps: Mapping[int, Step | None] | None = None,
    prices: PriceOverrides | None = None,
) -> Trace:
    """The flat trace of one trace's spans, the whole way: each span through its dialect (``steps``: those already
    read, by span id, not read again), the fold, the metadata (``prices`` as :func:`fold_run`'s). Never raises on bad
    span data: faults are counted."""
    records = list(spans)
    folder = _Folder(records, steps_of(records, steps), prices)
    events = folder.run()
    return Trace(events=events, meta=folder.place(trace_meta(trace_id, records, folder.roots(), folder.tally)))

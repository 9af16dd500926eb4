"""Fold one trace's spans into a flat event list (DESIGN "Folding"). Pure: no threads, no I/O.

1. Every span goes through its dialect into a step (:mod:`spanfold.exporter.dialects`).
2. Steps are taken in time order: a model step at its start, a tool result at its end (ties: end, span id).
3. A conversation per thread (nearest ``invoke_agent`` ancestor, else ``gen_ai.conversation.id``, else one thread).
   Each model step appends only the input messages its thread has not shown yet: a fingerprint -> positions map
   and a cursor that advances as messages match, so a repeated message after the cursor is new, and messages an
   agent dropped or summarised never remove what was shown. Then its outputs (the first choice; other choices
   go to that event's metadata), then its error.
4. Tool results come from ``execute_tool`` spans when there are any (their own time and errors), else from the next
   step's ``tool`` input messages, never both (by tool-call id; a tool span without an id adopts the id of the
   pending call with its name and arguments, in order). Results of parallel calls keep the model's order.

Cost is linear in the attribute bytes: one parse per attribute, hash lookups, no pairwise comparisons.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections import deque
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from spanfold import counters
from spanfold.exporter.dialects import AgentSpan, ModelStep, Step, ToolStep, safe_step
from spanfold.exporter.events import Fingerprint, args_key, fingerprint, message_events, system_event
from spanfold.exporter.records import SpanRecord
from spanfold.semconv import PART_TOOL_CALL_RESPONSE
from spanfold.trace.model import Message, Trace, TraceMeta, Usage

SERVICE_NAME = "service.name"


@lru_cache(maxsize=4096)  # the events of one step share its timestamp
def iso(ns: int) -> str:
    """ISO 8601 UTC with milliseconds: ``2025-01-31T12:00:00.123Z``."""
    sec, rem = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + f".{rem // 1_000_000:03d}Z"


@lru_cache(maxsize=4096)  # every event of a step names its span
def span_hex(span_id: int) -> str:
    return format(span_id, "016x")


@dataclass(slots=True, eq=False)
class _Call:
    """A tool call the model made, waiting for its result."""

    id: str | None
    name: str
    args_key: str | None
    thread: _Thread
    result: Message | None = None
    done: bool = False


@dataclass(slots=True, eq=False)
class _Thread:
    """One conversation: what it has shown (fingerprints by position) and the tool calls it waits on."""

    agent: str | None
    length: int = 0
    positions: dict[Fingerprint, list[int]] = field(default_factory=dict)
    system: Fingerprint | None = None
    batch: list[_Call] = field(default_factory=list)
    #: The last model step's inputs and, for the leading ones that were all shown already, the cursor after each: a
    #: step that starts with the very same message objects (a parsed history shares them) resumes from there.
    last_inputs: list[dict[str, Any]] = field(default_factory=list)
    cursors: list[int] = field(default_factory=list)

    def resume(self, inputs: list[dict[str, Any]]) -> int:
        """How many leading ``inputs`` are the last step's own, matched then (``cursors`` says where they ended)."""
        last, n, limit = self.last_inputs, 0, min(len(self.cursors), len(inputs))
        while n < limit and inputs[n] is last[n]:
            n += 1
        return n

    def find(self, fp: Fingerprint, cursor: int, limit: int) -> int | None:
        """The first position of ``fp`` in ``[cursor, limit)``."""
        seen = self.positions.get(fp)
        if not seen:
            return None
        i = bisect_left(seen, cursor)
        return seen[i] if i < len(seen) and seen[i] < limit else None

    def match(self, fps: tuple[Fingerprint, ...], cursor: int, limit: int) -> int | None:
        """The cursor after matching all of ``fps`` in order from ``cursor`` (before ``limit``), else None."""
        for fp in fps:
            pos = self.find(fp, cursor, limit)
            if pos is None:
                return None
            cursor = pos + 1
        return cursor

    def add(self, fp: Fingerprint) -> None:
        self.positions.setdefault(fp, []).append(self.length)
        self.length += 1


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


class _Folder:
    def __init__(self, records: list[SpanRecord], steps: Mapping[int, Step | None] | None) -> None:
        self.records = records
        self.parents = {r.span_id: r.parent_id for r in records}
        self.steps: dict[int, Step] = {}
        for r in records:
            step = steps.get(r.span_id) if steps is not None and r.span_id in steps else safe_step(r)
            if step is not None:
                self.steps[r.span_id] = step
        drop_duplicate_calls(self.steps)
        self.agents = {sid: s for sid, s in self.steps.items() if isinstance(s, AgentSpan)}
        self._agent_of: dict[int, AgentSpan | None] = {}
        self.threads: dict[Hashable, _Thread] = {}
        self.events: list[Message] = []
        self.call_names: dict[str, str] = {}
        self.shown_tool_ids: set[str] = set()
        self.by_id: dict[str, _Call] = {}
        self.by_signature: dict[tuple[str, str | None], deque[_Call]] = {}
        self.by_name: dict[str, deque[_Call]] = {}
        self.usage = Usage()
        self.models: set[str] = set()
        #: id(input message) -> (the message, its events' fingerprints): a history message seen in an earlier step
        #: (the same parsed object: :mod:`spanfold.exporter.json_prefix`) is matched without converting it again.
        self.history: dict[int, tuple[dict[str, Any], tuple[Fingerprint, ...]]] = {}

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

    def thread_of(self, step: ModelStep | ToolStep) -> _Thread:
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
            thread = self.threads[key] = _Thread(agent=agent.name if agent is not None else None)
        return thread

    # --- events ------------------------------------------------------------------------------------------

    def emit(
        self,
        thread: _Thread,
        msg: Message,
        ts: int | None,
        span_id: int | None,
        *,
        history: bool = True,
        fp: Fingerprint | None = None,
    ) -> None:
        """Append an event (``ts``/``span_id`` None: already set on it; ``fp``: its fingerprint, when known)."""
        if ts is not None:
            msg.timestamp = iso(ts)
        if span_id is not None:
            msg.metadata.setdefault("span_id", span_hex(span_id))
        if thread.agent is not None:
            msg.metadata.setdefault("agent", thread.agent)
        self.events.append(msg)
        if history:
            thread.add(fp if fp is not None else fingerprint(msg))
        if msg.role == "tool" and msg.tool_call_id is not None:
            self.shown_tool_ids.add(msg.tool_call_id)
            call = self.by_id.pop(msg.tool_call_id, None)
            if call is not None:
                call.done = True

    def note_calls(self, msg: Message) -> None:
        for tc in msg.tool_calls:
            if tc.id is not None:
                self.call_names[tc.id] = tc.name

    def expect(self, thread: _Thread, msg: Message) -> None:
        """The tool calls of an output message now wait for results (in the model's order)."""
        for tc in msg.tool_calls:
            call = _Call(tc.id, tc.name, args_key(tc.arguments), thread)
            if tc.id is not None:
                self.by_id[tc.id] = call
            self.by_signature.setdefault((tc.name, call.args_key), deque()).append(call)
            self.by_name.setdefault(tc.name, deque()).append(call)
            thread.batch.append(call)

    def release(self, thread: _Thread, step: ModelStep | None = None) -> None:
        """Emit the tool results held for the thread's last batch of calls, in the model's order. A call of the batch
        with no tool span gets its result from ``step``'s inputs, in its place (only when some result is held: else
        the inputs give the model's order by themselves)."""
        batch, thread.batch = thread.batch, []
        held = any(call.result is not None for call in batch)
        answers = self.input_answers(step) if held and step is not None else {}
        for call in batch:
            if call.result is not None:
                result, call.result = call.result, None
                self.emit(thread, result, None, None)  # time and span were set when it was held
            elif call.id in answers and call.id not in self.shown_tool_ids and step is not None:
                self.emit(thread, answers[call.id], step.start_ns, step.span_id)

    def input_answers(self, step: ModelStep) -> dict[str | None, Message]:
        """The tool results among a step's input messages, by call id."""
        out: dict[str | None, Message] = {}
        for raw in step.inputs:
            parts = raw.get("parts") or ()
            if raw.get("role") == "tool" or any(p.get("type") == PART_TOOL_CALL_RESPONSE for p in parts):
                for msg in message_events(raw, self.call_names):
                    if msg.role == "tool" and msg.tool_call_id is not None:
                        out[msg.tool_call_id] = msg
        return out

    # --- steps -------------------------------------------------------------------------------------------

    def model(self, step: ModelStep) -> None:
        thread = self.thread_of(step)
        self.release(thread, step)
        if step.model:
            self.models.add(step.model)
        if step.usage is not None:
            self.usage.add(step.usage)
        if step.system_instructions is not None:
            system = system_event(step.system_instructions)
            fp = fingerprint(system)
            if fp != thread.system:
                thread.system = fp
                self.emit(thread, system, step.start_ns, step.span_id, history=False)
        # Inputs match what earlier steps showed, in order: the cursor only moves forward, so a message repeated
        # after its first match is new; messages this step appends are never matched by its own later inputs.
        inputs = step.inputs
        skip = thread.resume(inputs)
        cursors = thread.cursors[:skip]
        cursor, shown = (cursors[-1] if skip else 0), thread.length
        prefix = True  # every input so far was shown already
        for i in range(skip, len(inputs)):
            cursor, matched = self.input(thread, step, inputs[i], cursor, shown)
            prefix = prefix and matched
            if prefix:
                cursors.append(cursor)
        thread.last_inputs, thread.cursors = inputs, cursors
        self.outputs(thread, step)
        if step.error is not None:
            err = step.error
            text = f"{err['type']}: {err['message']}" if err.get("message") else str(err["type"])
            self.emit(
                thread,
                Message(role="error", content=text, error=err, metadata=self.step_metadata(step)),
                step.end_ns,
                step.span_id,
                history=False,
            )

    def input(self, thread: _Thread, step: ModelStep, raw: dict[str, Any], cursor: int, shown: int) -> tuple[int, bool]:
        """Match one input message from ``cursor`` against the first ``shown`` events, emit what is new: the cursor
        after it, and whether all of it was shown already."""
        seen = self.history.get(id(raw))
        if seen is not None and seen[0] is raw:
            matched = thread.match(seen[1], cursor, shown)
            if matched is not None:  # all of it (its calls were noted when it was first seen)
                return matched, True
        events = message_events(raw, self.call_names)
        prints = tuple([fingerprint(msg) for msg in events])
        shown_all = True
        for msg, fp in zip(events, prints, strict=True):
            self.note_calls(msg)
            pos = thread.find(fp, cursor, shown)
            if pos is not None:
                cursor = pos + 1
                continue
            shown_all = False
            if msg.role == "tool" and msg.tool_call_id in self.shown_tool_ids:
                continue  # its result came from the tool span
            self.emit(thread, msg, step.start_ns, step.span_id, fp=fp)
        self.history[id(raw)] = (raw, prints)
        return cursor, shown_all

    def outputs(self, thread: _Thread, step: ModelStep) -> None:
        outs = step.outputs
        others: list[dict[str, Any]] = []
        if len(outs) > 1 and all(m.get("role", "assistant") == "assistant" for m in outs):  # choices
            others = [e.to_invariant() for m in outs[1:] for e in message_events(m, self.call_names)]
            outs = outs[:1]
        first = True
        for raw in outs:
            for msg in message_events(raw, self.call_names):
                self.note_calls(msg)
                if first:
                    msg.metadata.update(self.step_metadata(step))
                    if others:
                        msg.metadata["choices"] = others
                    first = False
                self.emit(thread, msg, step.end_ns, step.span_id)
                self.expect(thread, msg)

    @staticmethod
    def step_metadata(step: ModelStep) -> dict[str, Any]:
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

    def pending_call(self, step: ToolStep) -> _Call | None:
        if step.call_id is not None:
            return self.by_id.get(step.call_id)
        name = step.name or ""
        for queue in (self.by_signature.get((name, args_key(step.arguments))), self.by_name.get(name)):
            while queue:
                call = queue.popleft()
                if not call.done:
                    return call
        return None

    def tool(self, step: ToolStep) -> None:
        call = self.pending_call(step)
        call_id = step.call_id if step.call_id is not None else (call.id if call is not None else None)
        if call_id is not None and call_id in self.shown_tool_ids:
            return  # already shown (from the next step's inputs)
        err = step.error
        content = step.result
        if err is not None:
            content = err.get("message") or err.get("type")
        msg = Message(role="tool", content=content, tool_call_id=call_id, name=step.name, error=err)
        msg.timestamp = iso(step.end_ns)
        msg.metadata["span_id"] = span_hex(step.span_id)
        if call is None or call.done:
            self.emit(self.thread_of(step), msg, step.end_ns, step.span_id)
            return
        call.done = True
        if call.id is not None:
            self.by_id.pop(call.id, None)
            self.shown_tool_ids.add(call.id)
        thread = call.thread
        if any(c is call for c in thread.batch):
            call.result = msg
            if all(c.done for c in thread.batch):
                self.release(thread)
        else:
            self.emit(thread, msg, step.end_ns, step.span_id)

    # --- the whole trace ---------------------------------------------------------------------------------

    def run(self) -> list[Message]:
        order: list[tuple[tuple[int, int, int], ModelStep | ToolStep]] = []
        for step in self.steps.values():
            if isinstance(step, ModelStep):
                order.append(((step.start_ns, step.end_ns, step.span_id), step))
            elif isinstance(step, ToolStep):
                order.append(((step.end_ns, step.end_ns, step.span_id), step))
        order.sort(key=lambda item: item[0])
        for _, step in order:
            if isinstance(step, ModelStep):
                self.model(step)
            else:
                self.tool(step)
        for thread in self.threads.values():
            self.release(thread)
        return self.events

    def meta(self, trace_id: str) -> TraceMeta:
        meta = TraceMeta(trace_id=trace_id, span_count=len(self.records))
        if self.records:
            start = min(r.start_ns for r in self.records)
            end = max(r.end_ns for r in self.records)
            meta.start, meta.end, meta.duration_ms = iso(start), iso(end), (end - start) / 1e6
            service = self.records[0].resource.get(SERVICE_NAME)
            meta.service = str(service) if service is not None else None
        roots = [a for a in self.agents.values() if self.agent_of(a.span_id) is None]
        if roots:
            meta.name = min(roots, key=lambda a: (a.start_ns, a.span_id)).name
        meta.models = sorted(self.models)
        meta.usage = self.usage
        return meta


def fold(spans: Iterable[SpanRecord], *, trace_id: str, steps: Mapping[int, Step | None] | None = None) -> Trace:
    """The flat trace of one trace's spans (or a stitched conversation's). ``steps``: spans already normalised
    (by span id), so no attribute is parsed twice. Never raises on bad span data: faults are counted."""
    records = list(spans)
    folder = _Folder(records, steps)
    events = folder.run()
    return Trace(events=events, meta=folder.meta(trace_id))

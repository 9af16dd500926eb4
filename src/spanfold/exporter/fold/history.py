"""One conversation's history as the fold has shown it, and the matching of a model step's inputs against it
(DESIGN folding rule 3).

Each model call re-sends its history. :class:`Thread` keeps, for the events it has shown, a fingerprint ->
positions map and matches a step's input messages from a cursor that only moves forward: a message is "shown" when
its fingerprint occurs at or after the cursor, among the events shown before the step began; a repeated message
after its first match is new, and what an agent dropped or summarised never removes what was shown.
:meth:`Thread.unseen` returns what a step adds. Costs: a hash lookup and a bisect per input message; a step that
starts with the very same message objects as the last one (a parsed history shares them,
:mod:`spanfold.codecs.json_prefix`) resumes after them without looking at them again.

Tool outputs: every shown output is also found by :data:`ANY_TOOL_OUTPUT`, the fingerprint of an output re-sent
without a call id (Gemini's ``function_response``, Ollama's ``tool`` messages): such an output is the next shown
output at the cursor, by order. When a re-sent output matches a shown one, :meth:`Thread.unseen` hands both to its
``received`` callback (what the model was sent, beside what a tool span recorded: the fold merges them).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from spanfold.exporter.fold.events import INPUTS, Fingerprint, fingerprint, fresh_event, message_events, note_calls
from spanfold.exporter.steps import SemconvMessage
from spanfold.trace.model import Message

#: The fingerprint of a tool output without a call id: it matches any shown tool output, the next one at the cursor.
ANY_TOOL_OUTPUT: Final[Fingerprint] = ("tool", None)


class InputEvents:
    """The events of input messages and their fingerprints, converted once per message object within one fold.

    ``call_names`` (tool-call id -> tool name, shared with the fold) names tool outputs, and learns the calls of
    every message converted."""

    __slots__ = ("_call_names", "seen")

    def __init__(self, call_names: dict[str, str]) -> None:
        self._call_names = call_names
        #: id(input message) -> (the message, its events' fingerprints): an entry holds its message, so an id is
        #: never reused while cached.
        self.seen: dict[int, tuple[SemconvMessage, tuple[Fingerprint, ...]]] = {}

    def convert(self, raw: SemconvMessage) -> tuple[list[Message], tuple[Fingerprint, ...]]:
        """The message's events (fresh objects) and their fingerprints; remembered."""
        names = self._call_names
        events = message_events(raw, names)
        prints = tuple([fingerprint(msg) for msg in events])
        for msg in events:
            note_calls(names, msg)
        self.seen[id(raw)] = (raw, prints)
        return events, prints

    def first_step(self, inputs: list[SemconvMessage]) -> tuple[list[tuple[Message, Fingerprint]], int]:
        """:meth:`convert` of every input of a thread's first step (nothing shown yet: every event is new), and how
        many leading inputs made no event. What the first calls of other traces may send too (a run of its own per
        call: un-stitched calls, one system prompt and its examples) is converted once for all of them
        (:data:`~.events.INPUTS`); a later step's new messages are its run's own: not looked up there."""
        new: list[tuple[Message, Fingerprint]] = []
        names, seen, lookup = self._call_names, self.seen, INPUTS.get
        empty = 0
        for raw in inputs:
            cached = lookup(raw)
            if cached is None:
                events, prints = self.convert(raw)
                if len(events) == 1:  # most messages (zip's strict check costs more than the append)
                    new.append((events[0], prints[0]))
                else:
                    new.extend(zip(events, prints, strict=True))
            else:
                _, protos, prints, calls = cached
                if len(protos) == 1:
                    new.append((fresh_event(protos[0], names), prints[0]))
                else:
                    new.extend(zip([fresh_event(proto, names) for proto in protos], prints, strict=True))
                if calls:
                    names.update(calls)
                seen[id(raw)] = (raw, prints)
            if not new:
                empty += 1
        return new, empty


@dataclass(slots=True, eq=False)
class Thread:
    """One conversation: what it has shown (fingerprints by position), its last system instructions, and where the
    last step's inputs matched."""

    agent: str | None
    length: int = 0
    positions: dict[Fingerprint, list[int]] = field(default_factory=dict)
    system: Fingerprint | None = None
    #: The last model step's inputs and, for the leading ones that were all shown already, the cursor after each: a
    #: step that starts with the very same message objects (a parsed history shares them) resumes from there.
    last_inputs: list[SemconvMessage] = field(default_factory=list)
    cursors: list[int] = field(default_factory=list)
    #: The tool outputs shown, by position.
    outputs: dict[int, Message] = field(default_factory=dict)

    def add(self, fp: Fingerprint, msg: Message | None = None) -> None:
        """An event was shown (``msg``: the event, remembered when it is a tool output)."""
        self.positions.setdefault(fp, []).append(self.length)
        if msg is not None and msg.role == "tool":
            self.outputs[self.length] = msg
            if fp != ANY_TOOL_OUTPUT:
                self.positions.setdefault(ANY_TOOL_OUTPUT, []).append(self.length)
        self.length += 1

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

    def resume(self, inputs: list[SemconvMessage]) -> int:
        """How many leading ``inputs`` are the last step's own, matched then (``cursors`` says where they ended)."""
        last, n, limit = self.last_inputs, 0, min(len(self.cursors), len(inputs))
        while n < limit and inputs[n] is last[n]:
            n += 1
        return n

    def unseen(
        self,
        inputs: list[SemconvMessage],
        events: InputEvents,
        received: Callable[[Message, Message], None] | None = None,
    ) -> list[tuple[Message, Fingerprint]]:
        """The events of a step's ``inputs`` this thread has not shown, with their fingerprints, in order. Matching
        reads only what was shown before the step (a step's own new messages are never matched by its later inputs),
        so the caller shows them (:meth:`add`) after this returns. ``received(shown, sent)``: called for each input
        tool output, converted here, that matches a shown one."""
        skip = self.resume(inputs)
        cursors = self.cursors[:skip]
        cursor, shown = (cursors[-1] if skip else 0), self.length
        prefix = True  # every input so far was shown already
        new: list[tuple[Message, Fingerprint]] = []
        if not shown and not skip:  # nothing shown yet (a thread's first step): every event is new
            new, empty = events.first_step(inputs)
            self.last_inputs, self.cursors = inputs, [cursor] * empty
            return new
        seen = events.seen
        for i in range(skip, len(inputs)):
            raw = inputs[i]
            known = seen.get(id(raw))
            if known is not None and known[0] is raw:
                after = self.match(known[1], cursor, shown)
                if after is not None:  # all of it (its calls were noted when it was first converted)
                    cursor = after
                    if prefix:
                        cursors.append(cursor)
                    continue
            matched_all = True
            converted, prints = events.convert(raw)
            for msg, fp in zip(converted, prints, strict=True):
                pos = self.find(fp, cursor, shown)
                if pos is not None:
                    cursor = pos + 1
                    if received is not None and msg.role == "tool" and pos in self.outputs:
                        received(self.outputs[pos], msg)
                else:
                    matched_all = False
                    new.append((msg, fp))
            prefix = prefix and matched_all
            if prefix:
                cursors.append(cursor)
        self.last_inputs, self.cursors = inputs, cursors
        return new

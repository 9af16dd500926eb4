"""One conversation's history as the fold has shown it, and the matching of a model step's inputs against it
(DESIGN folding rule 3).

Each model call re-sends its history. :class:`Thread` keeps, for the events it has shown, a fingerprint ->
positions map and matches a step's input messages from a cursor that only moves forward: a message is "shown" when
its fingerprint occurs at or after the cursor, among the events shown before the step began; a repeated message
after its first match is new, and what an agent dropped or summarised never removes what was shown.
:meth:`Thread.unseen` yields what a step adds. Costs: a hash lookup and a bisect per input message; a step that
starts with the very same message objects as the last one (a parsed history shares them,
:mod:`spanfold.exporter.json_prefix`) resumes after them without looking at them again.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from spanfold.exporter.events import Fingerprint, fingerprint, message_events
from spanfold.exporter.steps import SemconvMessage
from spanfold.trace.model import Message


class InputEvents:
    """The events of input messages and their fingerprints, converted once per message object within one fold.

    ``on_convert`` sees every message's events the first time they are made (the fold notes tool-call names)."""

    __slots__ = ("_call_names", "_on_convert", "_seen")

    def __init__(self, call_names: dict[str, str], on_convert: Callable[[Message], None]) -> None:
        self._call_names = call_names
        self._on_convert = on_convert
        #: id(input message) -> (the message, its events' fingerprints): an entry holds its message, so an id is
        #: never reused while cached.
        self._seen: dict[int, tuple[SemconvMessage, tuple[Fingerprint, ...]]] = {}

    def known(self, raw: SemconvMessage) -> tuple[Fingerprint, ...] | None:
        """The fingerprints of a message converted before (None: not yet)."""
        seen = self._seen.get(id(raw))
        return seen[1] if seen is not None and seen[0] is raw else None

    def convert(self, raw: SemconvMessage) -> tuple[list[Message], tuple[Fingerprint, ...]]:
        """The message's events (fresh objects) and their fingerprints; remembered."""
        events = message_events(raw, self._call_names)
        prints = tuple([fingerprint(msg) for msg in events])
        for msg in events:
            self._on_convert(msg)
        self._seen[id(raw)] = (raw, prints)
        return events, prints


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

    def add(self, fp: Fingerprint) -> None:
        """An event was shown."""
        self.positions.setdefault(fp, []).append(self.length)
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

    def unseen(self, inputs: list[SemconvMessage], events: InputEvents) -> Iterator[tuple[Message, Fingerprint]]:
        """The events of a step's ``inputs`` this thread has not shown, with their fingerprints, in order. Matching
        reads only what was shown before the step: the caller shows each yielded event (:meth:`add`) as it goes, and
        a step's own new messages are never matched by its later inputs."""
        skip = self.resume(inputs)
        cursors = self.cursors[:skip]
        cursor, shown = (cursors[-1] if skip else 0), self.length
        prefix = True  # every input so far was shown already
        for i in range(skip, len(inputs)):
            raw = inputs[i]
            matched_all = False
            known = events.known(raw)
            if known is not None:
                after = self.match(known, cursor, shown)
                if after is not None:  # all of it (its calls were noted when it was first converted)
                    cursor, matched_all = after, True
            if not matched_all:
                matched_all = True
                converted, prints = events.convert(raw)
                for msg, fp in zip(converted, prints, strict=True):
                    pos = self.find(fp, cursor, shown)
                    if pos is not None:
                        cursor = pos + 1
                    else:
                        matched_all = False
                        yield msg, fp
            prefix = prefix and matched_all
            if prefix:
                cursors.append(cursor)
        self.last_inputs, self.cursors = inputs, cursors

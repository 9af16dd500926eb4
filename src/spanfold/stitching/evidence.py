"""The stitching rule: which live conversation, if any, an un-parented model call continues. One rule for the source
(:mod:`spanfold.instrumentation.toolkit.conversations`) and the fold (:mod:`spanfold.exporter.runs.stitch`).

A conversation *holds* keys, each the evidence a later call of the same run brings:

* **names** (hashable tuples, each held by one conversation: the one that produced or sent it last):
  ``("response", id)`` for a response it produced (a later ``previous_response_id``),
  ``("conversation", id)`` for the ``gen_ai.conversation.id`` its calls carry, and at the source
  ``("retry", ...)``: the very request list of a call of its that failed, re-sent from the same thread or asyncio task
  with the same history (a retry);
* **histories** (ints): the chained hash (:func:`chain`) of a call's inputs followed by the first choice of its
  outputs. A later call whose input history starts with that is past the conversation's own model output. An output
  that holds a tool-call id the provider made is :func:`distinctive`: no other call can come to hold that history.

:meth:`Index.find` joins a call to a conversation only when the evidence names exactly one:

1. a name exactly one live conversation holds;
2. else the longest history the call's inputs extend, when exactly one live conversation holds it, no call still in
   flight could give another conversation that same history (:meth:`Index.begin`: a twin whose answer has not been
   read yet, e.g. an identical greeting to another user; never for a :func:`distinctive` history), and the
   request's own list (``owner``, the conversation that last sent this very list object: the source knows it, the
   fold does not) names no other conversation;
3. among several holders of that history, the one ``owner`` names (the same list object re-sent: one run's loop).

Anything else starts a new conversation, and when evidence pointed at more than one the split is counted
(``stitch_splits`` in :func:`spanfold.stats`, by reason): two users merged is a privacy breach, one run split in two
a lesser fault. A failed call adds no history: equal text never makes a retry (another user's identical opening
would pass for one); only the ``retry`` name does.

Not thread-safe: the owner holds its lock around every call.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from spanfold import counters
from spanfold.stitching.fingerprints import Fingerprint, message_prints

C = TypeVar("C")

#: Why a call that pointed at live conversations started its own (the ``stitch_splits.<reason>`` counters).
AMBIGUOUS = "ambiguous"  # several live conversations hold the history it extends
IN_FLIGHT = "in_flight"  # a call with the same history as the holder's is still in flight elsewhere
CONFLICT = "conflict"  # its request list belongs to another conversation than the history names


def seed(system_parts: Any) -> int:
    """The chain's starting value: the system instructions (a list of semconv parts; text parts count)."""
    if not isinstance(system_parts, list) or not system_parts:
        return 0
    return hash(message_prints({"role": "system", "parts": system_parts}))


def chain(start: int, prints: Iterable[Fingerprint]) -> list[int]:
    """The chained hash after each fingerprint: ``out[i]`` stands for the whole history up to fingerprint ``i``."""
    out: list[int] = []
    h = start
    for fp in prints:
        h = hash((h, fp))
        out.append(h)
    return out


def history_prints(messages: Iterable[Any]) -> list[Fingerprint]:
    """The fingerprints of parsed semconv messages, in order."""
    return [fp for message in messages for fp in message_prints(message)]


def distinctive(outputs: Iterable[Fingerprint]) -> bool:
    """Whether a call's output fingerprints hold an id the provider made for it (a tool call's id): no other call
    gives the same output, so a twin call in flight cannot come to hold the same history."""
    return any(fp[0] == "c" and fp[1] for fp in outputs if isinstance(fp, tuple) and len(fp) > 1)


@dataclass(slots=True)
class Decision(Generic[C]):
    """Where a call goes: ``conversation`` (None: a new one) and, for a new one the evidence pointed past, why."""

    conversation: C | None = None
    split: str | None = None


class Index(Generic[C]):
    """The keys live conversations hold, and the calls in flight by the history they were sent. Every operation is a
    few hash lookups, however many conversations hold one key (a server's users who all opened alike)."""

    __slots__ = ("_holders", "_origins", "_pending", "pending_limit")

    def __init__(self, pending_limit: int = 65536) -> None:
        #: Key -> its holders by identity (insertion-ordered).
        self._holders: dict[Hashable, dict[int, C]] = {}
        #: History key -> the chained hash of the inputs it extends (the call's history before its outputs).
        self._origins: dict[Hashable, int] = {}
        #: Chained hash of a call's inputs -> how many calls are in flight with it, by the identity of their
        #: conversation (0: a call that will open a conversation of its own).
        self._pending: dict[int, dict[int, int]] = {}
        #: Histories in flight past which the record is dropped (calls whose span never ended), counted.
        self.pending_limit = pending_limit

    def __len__(self) -> int:
        return len(self._holders)

    def hold(self, conversation: C, key: Hashable, origin: int | None = None) -> bool:
        """``conversation`` holds ``key`` (``origin``: for a history another call could come to hold too, the hash
        of the inputs it extends; None for a :func:`distinctive` one). False when it already did."""
        holders = self._holders.get(key)
        if holders is None:
            self._holders[key] = {id(conversation): conversation}
            if origin is not None:
                self._origins[key] = origin
            return True
        if id(conversation) in holders:
            return False
        if isinstance(key, tuple):  # a name is an id: it names the conversation that produced it last
            holders.clear()
        holders[id(conversation)] = conversation
        return True

    def release(self, conversation: C, key: Hashable) -> None:
        holders = self._holders.get(key)
        if holders is None or holders.pop(id(conversation), None) is None:
            return
        if not holders:
            del self._holders[key]
            self._origins.pop(key, None)

    def holders(self, key: Hashable) -> list[C]:
        return list(self._holders.get(key, {}).values())

    def begin(self, origin: int, conversation: C | None) -> None:
        """A call sent the history ``origin`` and has not answered yet (:meth:`end` when it has)."""
        if len(self._pending) >= self.pending_limit:
            counters.incr("stitch_pending_dropped", len(self._pending))
            self._pending.clear()
        counts = self._pending.setdefault(origin, {})
        who = 0 if conversation is None else id(conversation)
        counts[who] = counts.get(who, 0) + 1

    def end(self, origin: int, conversation: C | None) -> None:
        counts = self._pending.get(origin)
        who = 0 if conversation is None else id(conversation)
        if counts is None or who not in counts:
            return
        if counts[who] > 1:
            counts[who] -= 1
        else:
            del counts[who]
            if not counts:
                del self._pending[origin]

    def find(self, names: Sequence[Hashable], history: Sequence[int], owner: C | None = None) -> Decision[C]:
        """Where a call with these ``names`` and input ``history`` (:func:`chain`) goes; ``owner``: the live
        conversation that last sent the very request list this call sends (None: unknown)."""
        for key in names:
            holders = self._holders.get(key)
            if holders:
                return self._one(holders, owner, AMBIGUOUS)
        for h in reversed(history):  # the longest history it extends
            holders = self._holders.get(h)
            if not holders:
                continue
            if owner is not None:  # the same list re-sent: a run's own loop, whoever else has that history
                return Decision(owner) if id(owner) in holders else self._split(CONFLICT)
            decision = self._one(holders, None, AMBIGUOUS)
            origin = self._origins.get(h)
            pending = self._pending.get(origin) if origin is not None else None
            if decision.conversation is not None and pending and any(w != id(decision.conversation) for w in pending):
                return self._split(IN_FLIGHT)
            return decision
        return Decision()

    def _one(self, holders: dict[int, C], owner: C | None, reason: str) -> Decision[C]:
        if len(holders) == 1:
            return Decision(next(iter(holders.values())))
        if owner is not None and id(owner) in holders:
            return Decision(owner)
        return self._split(reason)

    @staticmethod
    def _split(reason: str) -> Decision[C]:
        counters.incr("stitch_splits")
        counters.incr(f"stitch_splits.{reason}")
        return Decision(None, reason)

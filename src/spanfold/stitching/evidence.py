"""The stitching rule: which live conversation, if any, an un-parented model call or tool run continues. One rule for
the source (:mod:`spanfold.stitching.conversations`) and the fold (:mod:`spanfold.exporter.runs.stitch`).

A conversation *holds* keys, each the evidence a later call of the same run brings:

* **names** (hashable tuples): ``("response", ..., id)`` for a response it produced (a later
  ``previous_response_id``; the source names the endpoint too: ids are one server's, and test doubles and local
  servers number theirs from 1),
  ``("conversation", id)`` for the ``gen_ai.conversation.id`` its calls carry, ``("made", id)`` for a tool-call id
  its model made, and at the source ``("retry", ...)``: the very request list (or Responses API input text) of a call
  of its that failed, re-sent from the same thread or asyncio task with the same history (a retry); in the fold
  ``("failed", origin)`` (:func:`failed_key`): the history a call of its failed with;
* **histories** (ints): the chained hash (:func:`chain`) of a call's inputs followed by the first choice of its
  outputs. A later call whose input history starts with that is past the conversation's own model output. An output
  whose tool-call ids no other live conversation's model made (and this process never saw made twice) is
  *distinctive*: no other call can come to hold that history.

Evidence is unique by construction: a key is evidence only while exactly one live conversation holds it, and
ambiguity is computed over every holder, never settled by age. :meth:`Index.find` joins a model call to a
conversation only when the evidence names exactly one:

1. a name exactly one live conversation holds (two holders: a conflict). A response is continued once: a second
   continuation of it while the first stands is a fork, a trace of its own (``fork``);
2. else the longest history the call's inputs extend, when exactly one live conversation holds it, no call still in
   flight could give another conversation that same history (:meth:`Index.begin`: a twin whose answer has not been
   read yet, e.g. an identical greeting to another user; never for a distinctive history), the request's own
   list (``owner``, the conversation that last sent this very list object from this execution context: the source
   knows it, the fold does not) names no other conversation, and, for a history that is not distinctive (text
   anyone's call could give, or a stored history could read), the holder's calls were made in this execution context
   (``here``: known at the source only; the fold joins on distinctive histories alone);
3. among several holders of that history, the one ``owner`` names (the same list object re-sent: one run's loop);
4. no history at all: ``owner``, when its list changed since it last sent it (``changed``: the run trimmed or
   summarised its own list; the same list sent again unchanged is a new run asking the same).

:func:`tool_call` is the rule for a tool run: the waiting call with its id when exactly one conversation waits on
that id, else the one call the execution context that asked for it waits on; name and arguments alone are never
evidence.

Anything else starts a new conversation, and when evidence pointed at more than one the split is counted
(``stitch_splits`` in :func:`spanfold.stats`, by reason): two users merged is a privacy breach, one run split in two
a lesser fault. A failed call adds no history: equal text never makes a retry (another user's identical opening
would pass for one); only the ``retry`` name does (in the fold, which cannot tell, the failed call's request sent
again is a counted split).

Not thread-safe: the owner holds its lock around every call.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from spanfold import counters
from spanfold.stitching.fingerprints import Fingerprint, message_prints
from spanfold.stitching.pairing import Call, args_key

C = TypeVar("C")

#: Why a call that pointed at live conversations started its own (the ``stitch_splits.<reason>`` counters).
AMBIGUOUS = "ambiguous"  # several live conversations hold the history it extends
IN_FLIGHT = "in_flight"  # a call with the same history as the holder's is still in flight elsewhere
CONFLICT = "conflict"  # its evidence (a name, a tool-call id, its request list) is held by another conversation too
FORK = "fork"  # it continues a response another call already continued
#: evidence only the execution context (or the request's own list) could confirm, not seen there, or not seen at all
#: (the fold): a tool run without an id, a history anyone's call could give, a failed call's request sent again
NO_CONTEXT = "no_context"


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


def failed_key(origin: int) -> Hashable:
    """The name a failed call's conversation holds in the fold: a later call sending the very same history (its
    inputs' chained hash, ``origin``) may be its retry or another run's identical request; the fold, which sees
    neither the request's list nor where it was sent, keeps it apart and counts the split (:meth:`Index.find`)."""
    return ("failed", origin)


def made_keys(outputs: Iterable[Fingerprint]) -> list[Hashable]:
    """The ``("made", id)`` names of the tool-call ids in a call's output fingerprints (a provider made them for it)."""
    return [("made", fp[1]) for fp in outputs if isinstance(fp, tuple) and len(fp) > 1 and fp[0] == "c" and fp[1]]


@dataclass(slots=True)
class Decision(Generic[C]):
    """Where a call goes: ``conversation`` (None: a new one) and, for a new one the evidence pointed past, why."""

    conversation: C | None = None
    split: str | None = None
    #: The response it continues (:meth:`Index.unclaim` when the call failed: its retry may continue it again).
    claimed: Hashable | None = None


class Index(Generic[C]):
    """The keys live conversations hold, and the calls in flight by the history they were sent. Every operation is a
    few hash lookups, however many conversations hold one key (a server's users who all opened alike)."""

    __slots__ = ("_continued", "_holders", "_origins", "_pending", "ids_reused", "pending_limit")

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
        #: Responses a call continues (a second continuation is a fork), while their holder lives.
        self._continued: set[Hashable] = set()
        #: Two live conversations' models made one tool-call id (a server that numbers calls per response): from then
        #: on no output is distinctive.
        self.ids_reused = False

    def __len__(self) -> int:
        return len(self._holders)

    def hold(self, conversation: C, key: Hashable, origin: int | None = None) -> bool:
        """``conversation`` holds ``key`` (``origin``: for a history another call could come to hold too, the hash
        of the inputs it extends; None for a distinctive one). False when it already did. A key held by two is
        evidence for neither (:meth:`find` splits on it)."""
        holders = self._holders.get(key)
        if holders is None:
            self._holders[key] = {id(conversation): conversation}
            if origin is not None:
                self._origins[key] = origin
            return True
        if id(conversation) in holders:
            return False
        holders[id(conversation)] = conversation
        if origin is not None:
            self._origins[key] = origin
        if isinstance(key, tuple) and key[0] == "made" and not self.ids_reused:
            self.ids_reused = True
            counters.incr("stitch_ids_reused")
        return True

    def distinctive(self, made: Sequence[Hashable]) -> bool:
        """Whether an output whose tool-call ids are ``made`` (:func:`made_keys`, held already) is one no other call
        can give: it has ids, each held by one conversation, and no id was ever made twice here."""
        if not made or self.ids_reused:
            return False
        return all(len(self._holders.get(key, ())) == 1 for key in made)

    def release(self, conversation: C, key: Hashable) -> None:
        holders = self._holders.get(key)
        if holders is None or holders.pop(id(conversation), None) is None:
            return
        if not holders:
            del self._holders[key]
            self._origins.pop(key, None)
            self._continued.discard(key)

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

    def find(
        self,
        names: Sequence[Hashable],
        history: Sequence[int],
        owner: C | None = None,
        *,
        claim: bool = True,
        here: Sequence[C] | None = None,
        changed: bool = False,
    ) -> Decision[C]:
        """Where a call with these ``names`` and input ``history`` (:func:`chain`) goes; ``owner``: the live
        conversation that last sent the very request list this call sends, from the same execution context (None:
        unknown); ``claim``: a continued response is claimed (False for a call known to have failed); ``here``: the
        live conversations whose calls were made in this execution context (a history another call could give too
        joins only one of them); None where that is not known (the fold: other producers' spans do not say);
        ``changed``: ``owner``'s list holds another history than when it last sent it (trimmed, summarised)."""
        for key in names:
            holders = self._holders.get(key)
            if holders:
                if isinstance(key, tuple) and key[0] == "response":
                    if key in self._continued:
                        return self._split(FORK)
                    decision = self._one(holders, owner, CONFLICT)
                    if decision.conversation is not None and claim:
                        self._continued.add(key)
                        decision.claimed = key
                    return decision
                return self._one(holders, owner, CONFLICT)
        for h in reversed(history):  # the longest history it extends
            holders = self._holders.get(h)
            if not holders:
                continue
            if owner is not None:  # the same list re-sent: a run's own loop, whoever else has that history
                return Decision(owner) if id(owner) in holders else self._split(CONFLICT)
            decision = self._one(holders, None, AMBIGUOUS)
            conv = decision.conversation
            if conv is None:
                return decision
            origin = self._origins.get(h)
            if origin is None:  # a distinctive history: only its holder's model could have made it
                return decision
            if here is None or not any(c is conv for c in here):  # text another call could give, sent elsewhere
                return self._split(NO_CONTEXT)  # (the fold: from where, nobody knows; a stored history reads alike)
            pending = self._pending.get(origin)
            if pending and any(w != id(conv) for w in pending):
                return self._split(IN_FLIGHT)
            return decision
        if changed:  # no history it extends: its own list, trimmed or summarised
            return Decision(owner)
        if history and self._holders.get(failed_key(history[-1])):  # a failed call's very request, sent again
            return self._split(NO_CONTEXT)
        return Decision(None)

    def unclaim(self, key: Hashable) -> None:
        """The call that continued the response ``key`` failed: a retry may continue it."""
        self._continued.discard(key)

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


def tool_call(
    calls: Sequence[Call[C]], *, by_id: bool, here: Sequence[C] | None, arguments: Any = None
) -> Call[C] | None:
    """The waiting call a tool run answers, among ``calls`` (those with its id when ``by_id``, else those with its
    name: :meth:`~spanfold.stitching.pairing.Pairing.waiting`), or None. ``here``: the live conversations waiting on
    tools in the execution context the run is in (the thread or task whose model call asked; None: unknown, as in
    the fold).

    * an id only one conversation waits on names it;
    * else the one conversation waiting here among the candidates names it (its call with the run's arguments, else
      its oldest);
    * else none: several waiting here (``ambiguous``), an id two conversations hold and the context does not tell
      (``conflict``), or no id and no context (``no_context``), counted when some call could have been it.
    """
    if not calls:
        return None
    owners = {id(call.owner) for call in calls}
    if by_id and len(owners) == 1:
        return calls[0]
    if here:
        waiting_here = {id(conv) for conv in here}
        mine = [call for call in calls if id(call.owner) in waiting_here]
        if len({id(call.owner) for call in mine}) == 1:
            wanted = args_key(arguments) if arguments is not None else None
            same = [call for call in mine if wanted is not None and args_key(call.arguments) == wanted]
            return (same or mine)[0]
        if mine:
            Index._split(AMBIGUOUS)
            return None
    Index._split(CONFLICT if by_id else NO_CONTEXT)
    return None

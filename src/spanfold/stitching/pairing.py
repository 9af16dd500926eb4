"""Tool calls waiting for their result, and the tool run (or tool message) that answers each: one unit, shared by the
fold (a trace's calls, :mod:`~spanfold.exporter.fold.folding`) and the stitcher (the calls of open conversations,
:mod:`~spanfold.exporter.runs.stitch`).

Within one trace (the fold), a result answers the call with its tool-call id (the latest one waiting with that id:
servers that number calls per response reuse ids); a result without an id (OpenLLMetry's and OpenInference's tool
spans, and hand-made ones, carry none) answers the oldest waiting call with its name and arguments, else with its
name. Each call is answered once. Across open conversations (the stitcher) that order is no evidence: there the
calls a result *could* answer (:meth:`Pairing.waiting`) go to the rule of :mod:`spanfold.stitching.evidence`, which
settles one (:meth:`Pairing.settle`) or none.

Lookups are hashes, never a scan: the (name, arguments) index of a name is built the first time a result without an
id asks for that name (each waiting call's arguments encoded once, then every later call's as it comes), so results
that carry ids never pay for encoding arguments. An answered call leaves the queues as soon as it reaches their head,
so memory follows the calls still waiting.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

Owner = TypeVar("Owner")

_ARGS = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def args_key(arguments: Any) -> str | None:
    """Tool-call arguments as a canonical string (to pair a tool run with the call it answers)."""
    if arguments is None or isinstance(arguments, str):
        return arguments
    return _ARGS.encode(arguments)


@dataclass(slots=True, eq=False)
class Call(Generic[Owner]):
    """A tool call waiting for its result; ``owner``: whose call it is (the fold's thread, a stitched conversation).
    ``answered`` once a result took it (or it was dropped)."""

    owner: Owner
    id: str | None
    name: str
    arguments: Any
    signature: Hashable = None  # (name, canonical arguments), once its name is indexed by signature
    answered: bool = False


class Pairing(Generic[Owner]):
    """Waiting calls: by id, and in arrival order by name and (for names asked about without an id) by
    (name, arguments)."""

    __slots__ = ("_by_id", "_by_name", "_by_signature")

    def __init__(self) -> None:
        #: id -> the calls waiting with it, in arrival order (more than one: ids a server numbers per response).
        self._by_id: dict[str, list[Call[Owner]]] = {}
        self._by_name: dict[str, deque[Call[Owner]]] = {}
        #: name -> (name, canonical arguments) -> waiting calls; a name is here once a result without id asked for it.
        self._by_signature: dict[str, dict[Hashable, deque[Call[Owner]]]] = {}

    def expect(self, owner: Owner, call_id: str | None, name: str | None, arguments: Any) -> Call[Owner]:
        """A call now waits for its result (for :meth:`answer`, a later call with the same id takes the id over)."""
        call = Call(owner, call_id, name or "", arguments)
        if call_id is not None:
            same = self._by_id.get(call_id)
            if same is None:
                self._by_id[call_id] = [call]
            else:
                same.append(call)
        queue = self._by_name.get(call.name)
        if queue is None:
            queue = self._by_name[call.name] = deque()
        queue.append(call)
        signed = self._by_signature.get(call.name)
        if signed is not None:
            self._sign(signed, call)
        return call

    def answer(self, call_id: str | None, name: str | None = None, arguments: Any = None) -> Call[Owner] | None:
        """The waiting call a result answers, now answered: by ``call_id`` when the result has one (only by it),
        else the oldest with ``name`` and ``arguments``, else the oldest with ``name``. None: no call waits for it."""
        if call_id is not None:
            same = self._by_id.get(call_id)
            return self._settle(same[-1]) if same else None
        name = name or ""
        signed = self._by_signature.get(name)
        if signed is None:  # first asked by signature: index the calls of that name still waiting, in order
            signed = self._by_signature[name] = {}
            for call in self._by_name.get(name, ()):
                if not call.answered:
                    self._sign(signed, call)
        queue = _trimmed(signed, (name, args_key(arguments)))
        if queue:
            return self._settle(queue[0])
        queue = _trimmed(self._by_name, name)
        return self._settle(queue[0]) if queue else None

    def waiting(self, call_id: str | None, name: str | None) -> list[Call[Owner]]:
        """The calls a result could answer, oldest first: those waiting with ``call_id`` when it has one, else those
        waiting with ``name``."""
        if call_id is not None:
            return list(self._by_id.get(call_id, ()))
        return [call for call in self._by_name.get(name or "", ()) if not call.answered]

    def settle(self, call: Call[Owner]) -> None:
        """``call`` is answered (a rule outside chose it among :meth:`waiting`)."""
        self._settle(call)

    def drop(self, call: Call[Owner]) -> None:
        """Forget a call that will never be answered (its conversation closed)."""
        self._settle(call)

    @staticmethod
    def _sign(signed: dict[Hashable, deque[Call[Owner]]], call: Call[Owner]) -> None:
        call.signature = (call.name, args_key(call.arguments))
        queue = signed.get(call.signature)
        if queue is None:
            queue = signed[call.signature] = deque()
        queue.append(call)

    def _settle(self, call: Call[Owner] | None) -> Call[Owner] | None:
        if call is None or call.answered:
            return None
        call.answered = True
        same = self._by_id.get(call.id) if call.id is not None else None
        if same is not None:
            same.remove(call)
            if not same:
                del self._by_id[call.id]  # type: ignore[arg-type]
        _trimmed(self._by_name, call.name)
        if call.signature is not None:
            signed = self._by_signature.get(call.name)
            if signed is not None:
                _trimmed(signed, call.signature)
        return call


def _trimmed(queues: dict[Any, deque[Call[Any]]], key: Hashable) -> deque[Call[Any]] | None:
    """The queue of ``key`` without the answered calls at its head (dropped when empty)."""
    queue = queues.get(key)
    if queue is None:
        return None
    while queue and queue[0].answered:
        queue.popleft()
    if not queue:
        del queues[key]
        return None
    return queue

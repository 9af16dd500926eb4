"""Tool calls waiting for their result, and the tool run (or tool message) that answers each: one unit, shared by the
fold (a trace's calls, :mod:`~spanfold.exporter.fold`) and the stitcher (the calls of open conversations,
:mod:`~spanfold.exporter.stitch`).

A result answers the call with its tool-call id; a result without an id (OpenLLMetry's and OpenInference's tool
spans, and hand-made ones, carry none) answers the oldest waiting call with its name and arguments, else with its
name. Each call is answered once. Lookups are hashes; an answered call leaves the queues as soon as it reaches
their head (never a scan), so memory follows the calls still waiting.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

Owner = TypeVar("Owner")


def args_key(arguments: Any) -> str | None:
    """Tool-call arguments as a canonical string (to pair a tool run with the call it answers)."""
    if arguments is None or isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def _keys(name: str | None, arguments: Any) -> tuple[Hashable, Hashable]:
    name = name or ""
    return ("signature", name, args_key(arguments)), ("tool", name)


@dataclass(slots=True, eq=False)
class Call(Generic[Owner]):
    """A tool call waiting for its result; ``owner``: whose call it is (the fold's thread, a stitched conversation).
    ``answered`` once a result took it (or it was dropped)."""

    owner: Owner
    id: str | None
    name: str
    keys: tuple[Hashable, Hashable]
    answered: bool = False


class Pairing(Generic[Owner]):
    """Waiting calls: by id, and in arrival order by (name, arguments) and by name."""

    __slots__ = ("_by_id", "_queues")

    def __init__(self) -> None:
        self._by_id: dict[str, Call[Owner]] = {}
        self._queues: dict[Hashable, deque[Call[Owner]]] = {}

    def expect(self, owner: Owner, call_id: str | None, name: str | None, arguments: Any) -> Call[Owner]:
        """A call now waits for its result (a later call with the same id takes the id over)."""
        call = Call(owner, call_id, name or "", _keys(name, arguments))
        if call_id is not None:
            self._by_id[call_id] = call
        for key in call.keys:
            self._queues.setdefault(key, deque()).append(call)
        return call

    def answer(self, call_id: str | None, name: str | None = None, arguments: Any = None) -> Call[Owner] | None:
        """The waiting call a result answers, now answered: by ``call_id`` when the result has one (only by it),
        else the oldest with ``name`` and ``arguments``, else the oldest with ``name``. None: no call waits for it."""
        if call_id is not None:
            return self._settle(self._by_id.get(call_id))
        for key in _keys(name, arguments):
            queue = self._trim(key)
            if queue:
                return self._settle(queue[0])
        return None

    def drop(self, call: Call[Owner]) -> None:
        """Forget a call that will never be answered (its conversation closed)."""
        self._settle(call)

    def _settle(self, call: Call[Owner] | None) -> Call[Owner] | None:
        if call is None or call.answered:
            return None
        call.answered = True
        if call.id is not None and self._by_id.get(call.id) is call:
            del self._by_id[call.id]
        for key in call.keys:
            self._trim(key)
        return call

    def _trim(self, key: Hashable) -> deque[Call[Owner]] | None:
        """The queue of ``key`` without the answered calls at its head (dropped when empty)."""
        queue = self._queues.get(key)
        while queue and queue[0].answered:
            queue.popleft()
        if queue is not None and not queue:
            del self._queues[key]
            return None
        return queue

"""Open stitched conversations, least recently active first, each in the queue of the idle window that closes it.

Stitching keeps the conversations it may still extend here, at the source
(:mod:`spanfold.stitching.conversations`) and in the fold (:mod:`spanfold.exporter.runs.stitch`) alike: a
conversation
whose latest model call asked for tools waits on them (a plain tool function, or a person approving it, gives no sign
of life) and closes after the longer window (``config.ASKING_IDLE_FACTOR`` times ``stitch_idle``); the others close
after ``stitch_idle``. Finding the next one to close looks at two queue heads, whatever the number open.

Not thread-safe: the owner holds its lock around every call.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, Protocol, TypeVar


class Windowed(Protocol):
    #: When it was last active.
    touched: float
    #: Its latest call asked for tools: the longer window.
    asking: bool


W = TypeVar("W", bound=Windowed)


class IdleWindows(Generic[W]):
    """The open conversations (``open``: least recently active first) and the same split by window (``asking``,
    ``resting``), each keyed by the conversation's identity."""

    __slots__ = ("asking", "open", "resting")

    def __init__(self) -> None:
        self.open: OrderedDict[int, W] = OrderedDict()
        self.asking: OrderedDict[int, W] = OrderedDict()
        self.resting: OrderedDict[int, W] = OrderedDict()

    def __len__(self) -> int:
        return len(self.open)

    def __contains__(self, conv: W) -> bool:
        return self.open.get(id(conv)) is conv

    def add(self, conv: W) -> None:
        """A new conversation, the most recently active (``touched`` set by the caller)."""
        self.open[id(conv)] = conv
        (self.asking if conv.asking else self.resting)[id(conv)] = conv

    def touch(self, conv: W, now: float) -> None:
        """Active at ``now``: last in ``open`` and in the queue of its window (which ``conv.asking`` says)."""
        conv.touched = now
        key = id(conv)
        self.open.move_to_end(key)
        queue, other = (self.asking, self.resting) if conv.asking else (self.resting, self.asking)
        other.pop(key, None)
        queue[key] = conv
        queue.move_to_end(key)

    def remove(self, conv: W) -> None:
        key = id(conv)
        self.open.pop(key, None)
        self.asking.pop(key, None)
        self.resting.pop(key, None)

    def oldest(self) -> W | None:
        """The least recently active one (None: none is open)."""
        return next(iter(self.open.values()), None)

    @staticmethod
    def past(conv: W, before: float, asking_before: float) -> bool:
        """Whether ``conv`` is past its window: last active before ``before`` (one whose latest call asked for tools:
        before ``asking_before``)."""
        return conv.touched < (asking_before if conv.asking else before)

    def due(self, before: float, asking_before: float) -> W | None:
        """The least recently active one :meth:`past` its window; None when none is."""
        for queue in (self.resting, self.asking):
            head = next(iter(queue.values()), None)
            if head is not None and self.past(head, before, asking_before):
                return head
        return None

    def deadline(self, idle: float, asking_idle: float) -> float | None:
        """When :meth:`due` next has one to give, for these windows (None: none is open)."""
        times = [
            head.touched + window
            for queue, window in ((self.resting, idle), (self.asking, asking_idle))
            if (head := next(iter(queue.values()), None)) is not None
        ]
        return min(times) if times else None

"""The live conversations of one stitcher, source and fold alike: what each holds, what it waits on, when it closes.

Both sides (:mod:`spanfold.stitching.conversations` at the source, :mod:`spanfold.exporter.runs.stitch`
in the fold) keep their open conversations here and decide through it, so the rule of :mod:`.evidence` is applied to
one bookkeeping: the keys a conversation holds (:class:`~.evidence.Index`), the tool calls its model asked for and
that no run answered yet (:class:`~.pairing.Pairing`), and the idle windows that close it (:class:`~.idle_windows.
IdleWindows`). A side adds only what it alone sees: the source, the execution context and the request list a call was
made with; the fold, the traces a conversation is made of.

Not thread-safe: the owner holds its lock around every call.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from spanfold.stitching import evidence
from spanfold.stitching.fingerprints import Fingerprint
from spanfold.stitching.idle_windows import IdleWindows
from spanfold.stitching.pairing import Call, Pairing


class Member(Protocol):
    """What a side's conversation carries for the bookkeeping."""

    #: The keys it holds (released when it closes).
    keys: list[Hashable]
    #: The tool calls its model asked for (dropped when it closes).
    waiting: list[Any]
    touched: float
    asking: bool


M = TypeVar("M", bound=Member)


class Live(Generic[M]):
    """Open conversations: by idle window (``windows``), by the evidence they hold (``index``), by the tool calls they
    wait on (``calls``)."""

    __slots__ = ("calls", "index", "windows")

    def __init__(self) -> None:
        self.windows: IdleWindows[M] = IdleWindows()
        self.index: evidence.Index[M] = evidence.Index()
        self.calls: Pairing[M] = Pairing()

    def __len__(self) -> int:
        return len(self.windows)

    def __contains__(self, conv: M) -> bool:
        return conv in self.windows

    def hold(self, conv: M, key: Hashable, origin: int | None = None) -> None:
        if self.index.hold(conv, key, origin):
            conv.keys.append(key)

    def answered(self, conv: M, origin: int, outputs: Sequence[Fingerprint]) -> None:
        """``conv``'s call, sent the history ``origin``, answered ``outputs`` (fingerprints): it holds the tool-call
        ids its model made and the history past its output (distinctive while those ids are its alone)."""
        if not outputs:
            return
        made = evidence.made_keys(outputs)
        for key in made:
            self.hold(conv, key)
        distinctive = self.index.distinctive(made)
        self.hold(conv, evidence.chain(origin, outputs)[-1], None if distinctive else origin)

    def expect(self, conv: M, calls: Sequence[tuple[Any, Any, Any]]) -> None:
        """``conv``'s model asked for these tool calls (``(id, name, arguments)``)."""
        for call_id, name, arguments in calls:
            conv.waiting.append(self.calls.expect(conv, call_id, name, arguments))

    def tool(self, call_id: str | None, name: Any, arguments: Any, here: Sequence[M] | None) -> Call[M] | None:
        """The waiting call a tool run answers, now answered (:func:`~.evidence.tool_call`); None: none."""
        call = evidence.tool_call(
            self.calls.waiting(call_id, name), by_id=call_id is not None, here=here, arguments=arguments
        )
        if call is not None:
            self.calls.settle(call)
        return call

    def close(self, conv: M) -> None:
        """``conv`` closes: out of its window, its keys released, its calls no longer waited on."""
        self.windows.remove(conv)
        for key in conv.keys:
            self.index.release(conv, key)
        conv.keys.clear()
        for call in conv.waiting:
            self.calls.drop(call)
        conv.waiting.clear()

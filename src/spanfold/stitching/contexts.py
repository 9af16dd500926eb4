"""Where a call was made: the execution-context evidence of :mod:`.evidence`, kept at the source.

Each un-parented model call records its turn in the context it is made in (a context variable: a thread keeps its
own, an asyncio task starts with a copy of its creator's, so the tasks a run starts for its tools see its calls); a
turn's conversation is known once its call answered. From there, a tool run finds the conversations waiting on tools
in its context (:func:`waiting_here`), and a model call the conversations whose calls were made there
(:func:`conversations_here`): text anyone's call could give, and a request list re-sent, are evidence only from
there. A context remembers its latest turns only (:data:`LIMIT`).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Protocol, TypeVar


class Placed(Protocol):
    """A turn, as the context keeps it: the conversation its call joined or opened (None until known)."""

    @property
    def conversation(self) -> Any: ...


class Open(Protocol):
    """What decides whether a conversation counts: it is still open."""

    def __contains__(self, conv: Any) -> bool: ...


#: The turns a context remembers: its latest ones.
LIMIT = 8

_HERE: ContextVar[tuple[Placed, ...]] = ContextVar("spanfold_turns_here", default=())

C = TypeVar("C")


def turns_here() -> tuple[Placed, ...]:
    """The turns made in this execution context, latest last."""
    return _HERE.get()


def remember(turns: tuple[Placed, ...], turn: Placed) -> None:
    """``turn`` was made here, after ``turns`` (:func:`turns_here`, read before it)."""
    _HERE.set((*turns[1 - LIMIT :], turn) if len(turns) >= LIMIT else (*turns, turn))


def conversations_here(turns: tuple[Placed, ...], live: Open) -> list[Any]:
    """The open conversations of ``turns``, each once."""
    out: list[Any] = []
    for turn in turns:
        conv = turn.conversation
        if conv is not None and conv in live and all(conv is not seen for seen in out):
            out.append(conv)
    return out


def waiting_here(live: Open) -> list[Any]:
    """The open conversations of this context whose model asked for tools no run answered yet."""
    return [conv for conv in conversations_here(_HERE.get(), live) if conv.waits()]

"""Sessions: the runs of one conversation, grouped by the conversation (session) id their metadata records
(``gen_ai.conversation.id`` as the metadata names it, or the user's session id:
:data:`spanfold.ui.query.CONVERSATION_KEYS`), each session with its runs in the order they started and its totals
(:mod:`spanfold.ui.stats`): its tokens those of the runs whose tokens are known (None when none's are), and how many
model calls reported none (``tokens_unreported``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from spanfold.ui.index import Row
from spanfold.ui.query import conversation_of, user_of
from spanfold.ui.steps import epoch_ms, trace_cost


@dataclass(slots=True)
class Session:
    """One conversation's runs, and what the list of sessions shows of it."""

    id: str
    rows: list[Row] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        ordered = in_order(self.rows)
        starts = [r.meta.start for r in ordered if r.meta.start]
        costs = [c for c in (trace_cost(r.meta.extra) for r in ordered) if c is not None]
        currencies = {c["currency"] for c in costs}
        tokens = [t for t in (r.tokens() for r in ordered) if t is not None]
        return {
            "id": self.id,
            "runs": len(ordered),
            "first": starts[0] if starts else None,
            "last": starts[-1] if starts else None,
            "agents": sorted({r.meta.name for r in ordered if r.meta.name}),
            "users": sorted({u for u in map(user_of, ordered) if u}),
            "tokens_in": sum(t[0] for t in tokens) if tokens else None,  # None: no run's tokens are known
            "tokens_out": sum(t[1] for t in tokens) if tokens else None,
            "tokens_unreported": sum(r.meta.unreported_steps for r in ordered),
            "errors": sum(1 for r in ordered if r.summary.error_count),
            "failed": sum(1 for r in ordered if r.status == "error"),
            "cost": {"amount": sum(c["amount"] for c in costs), "currency": currencies.pop()}
            if len(currencies) == 1
            else None,
            "preview": next((r.preview for r in ordered if r.preview), ""),
        }


def in_order(rows: Sequence[Row]) -> list[Row]:
    """Runs in the order they started (a run that does not say when: after, in the order it was read)."""
    return sorted(rows, key=lambda r: (epoch_ms(r.meta.start) is None, epoch_ms(r.meta.start) or 0.0, r.seq))


def group(rows: Sequence[Row]) -> dict[str, Session]:
    """The sessions of ``rows`` by id, the one active last first."""
    found: dict[str, Session] = {}
    for row in rows:
        sid = conversation_of(row)
        if sid is not None:
            found.setdefault(sid, Session(sid)).rows.append(row)
    last = {sid: max((epoch_ms(r.meta.start) or 0.0 for r in s.rows), default=0.0) for sid, s in found.items()}
    return {sid: found[sid] for sid in sorted(found, key=lambda sid: (-last[sid], sid))}

"""Numbers over the runs a list shows (its filters applied): how many, how many had errors or failed, their tokens,
durations and cost, in total and over time (a bin per stretch of the runs' start times, for the list's chart).

Cost is summed only from what the runs' metadata records (``cost``): a run without one adds nothing, and the totals
say how many runs had one. Tokens likewise: the totals add up the model calls that reported theirs (None when no run's
tokens are known) and say how many did not (``tokens_unreported``): unknown is never added as 0. Costs in several
currencies are not added up (the totals name the currencies instead).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from spanfold.ui.index import Row
from spanfold.ui.steps import epoch_ms, trace_cost

#: Bins of the chart over time.
BINS = 40
#: A run's tokens: (in, out) when known, else None; and its model calls that reported none.
_Tokens = tuple[tuple[int, int] | None, int]
_Facts = tuple[bool, bool, _Tokens, dict[str, Any] | None]


@dataclass(slots=True)
class _Sum:
    runs: int = 0
    with_errors: int = 0
    failed: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_known: int = 0  # runs whose tokens are known
    tokens_unreported: int = 0  # model calls that reported no tokens
    priced: int = 0
    cost: float = 0.0
    currencies: set[str] = field(default_factory=set)

    def add(self, errors: bool, failed: bool, tokens: _Tokens, cost: dict[str, Any] | None) -> None:
        self.runs += 1
        self.with_errors += errors
        self.failed += failed
        known, unreported = tokens
        if known is not None:
            self.tokens_known += 1
            self.tokens_in += known[0]
            self.tokens_out += known[1]
        self.tokens_unreported += unreported
        if cost is not None:
            self.priced += 1
            self.cost += cost["amount"]
            self.currencies.add(cost["currency"])

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "runs": self.runs,
            "with_errors": self.with_errors,
            "failed": self.failed,
            "tokens_in": self.tokens_in if self.tokens_known else None,
            "tokens_out": self.tokens_out if self.tokens_known else None,
            "tokens_unreported": self.tokens_unreported,
            "priced": self.priced,
            "cost": None,
        }
        if self.priced and len(self.currencies) == 1:
            out["cost"] = {"amount": round(self.cost, 10), "currency": next(iter(self.currencies))}
        elif self.priced:
            out["currencies"] = sorted(self.currencies)
        return out


def _percentile(values: Sequence[float], p: float) -> float | None:
    """The ``p``-th percentile of sorted ``values`` (nearest rank), None when there are none."""
    if not values:
        return None
    return values[min(len(values) - 1, max(0, math.ceil(p / 100 * len(values)) - 1))]


def stats(rows: Sequence[Row], bins: int = BINS) -> dict[str, Any]:
    """Totals over ``rows`` (with the error rate and duration percentiles) and ``bins``: the same counts per stretch
    of start time (``start``/``end`` in ms since the epoch), over the runs that say when they started (no more bins than
    such runs)."""
    total = _Sum()
    durations: list[float] = []
    started: list[tuple[float, _Facts]] = []
    for row in rows:
        meta = row.meta
        facts: _Facts = (
            row.summary.error_count > 0,
            row.status == "error",
            (row.tokens(), meta.unreported_steps),
            trace_cost(meta.extra),
        )
        total.add(*facts)
        if meta.duration_ms is not None:
            durations.append(meta.duration_ms)
        at = epoch_ms(meta.start)
        if at is not None:
            started.append((at, facts))
    durations.sort()
    out = total.to_json()
    out["error_rate"] = total.with_errors / total.runs if total.runs else None
    out["duration_p50"] = _percentile(durations, 50)
    out["duration_p95"] = _percentile(durations, 95)
    out["bins"] = _bins(started, min(bins, len(started)))  # a handful of runs: as many bins, none empty for nothing
    return out


def _bins(started: list[tuple[float, _Facts]], count: int) -> list[Any]:
    if not started:
        return []
    first = min(at for at, _ in started)
    last = max(at for at, _ in started)
    width = max((last - first) / count, 1.0)
    sums = [_Sum() for _ in range(count)]
    for at, facts in started:
        sums[min(count - 1, int((at - first) / width))].add(*facts)
    return [{"start": first + i * width, "end": first + (i + 1) * width, **s.to_json()} for i, s in enumerate(sums)]

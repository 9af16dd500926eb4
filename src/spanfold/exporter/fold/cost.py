"""What each model call of a run cost, and the run: part of the metadata stage (:mod:`~.meta`), on the fold's worker.
An embeddings call is priced the same way (its input tokens) and counted in the run's total.

A model step is priced once, as of the time of its call (its start):

1. the cost its span states (``gen_ai.usage.cost.*``: LiteLLM's own ``response_cost``, a gateway's price), as it is;
2. else the user's price of its model (:mod:`spanfold.pricing.overrides`: ``spanfold.init(prices=...)``);
3. else genai-prices' (:mod:`spanfold.pricing.table`, the ``cost`` extra; its bundled snapshot, never the network).

A step that reports no tokens has nothing to price. One whose model no price knows gets no cost and is counted
(``cost.unknown_model``), as is one whose tokens do not add up (``cost.bad_usage``) and one left unpriced because
genai-prices is not installed (``cost.no_table``): never a guess. The run's cost adds up its steps' (in the currency
of the first one priced; a step priced in another currency stays out of the total), by kind of token and by model,
and says how many steps that reported tokens it could not price (``unpriced_steps``).

Where spanfold writes the spans themselves (the ``otlp-json`` format), each model step it priced gets the cost on its
span (:func:`annotate`), as the GenAI conventions propose to name it (:mod:`spanfold.semconv.names`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import TypeVar

from spanfold import counters, semconv
from spanfold.exporter.records import SpanRecord
from spanfold.exporter.steps import AsideStep, ModelStep
from spanfold.pricing import endpoints, table
from spanfold.pricing.overrides import PriceOverrides
from spanfold.trace.model import COST_KINDS, RunCost, StepCost, StepTime

#: Who priced a step (:attr:`StepCost.priced_by`).
BY_TABLE, BY_OVERRIDE = "genai-prices", "override"
T = TypeVar("T")
_ZERO = Decimal(0)


def _first(names: list[str], find: Callable[[str], T | None]) -> T | None:
    """The first truthy ``find(name)`` of ``names``, in order (None: none)."""
    for name in names:
        found = find(name)
        if found:
            return found
    return None


class Costs:
    """The cost of each model step of a run (:meth:`price`, in the order the metadata lists them) and the run's."""

    __slots__ = ("by_kind", "by_model", "currency", "priced", "prices", "total", "unpriced")

    def __init__(self, prices: PriceOverrides | None = None) -> None:
        self.prices = prices
        self.currency: str | None = None
        self.total = Decimal(0)
        self.by_kind: dict[str, Decimal] = {}
        self.by_model: dict[str, Decimal] = {}
        self.priced = 0
        self.unpriced = 0

    def price(self, step: ModelStep | AsideStep) -> StepCost | None:
        """The step's cost (None: it has none), added to the run's."""
        cost, parts, amount = self._cost(step)
        if cost is None:
            return None
        if self.currency is None:
            self.currency = cost.currency
        if cost.currency != self.currency:  # not added up with the others: the run's total leaves it out
            self.unpriced += 1
            return cost
        if amount is None:
            amount = Decimal(repr(cost.amount))
        self.total += amount
        self.priced += 1
        by_kind = self.by_kind
        for kind, part in parts.items():
            by_kind[kind] = by_kind.get(kind, _ZERO) + part
        name = step.model or "unknown"
        self.by_model[name] = self.by_model.get(name, _ZERO) + amount
        return cost

    def _cost(self, step: ModelStep | AsideStep) -> tuple[StepCost | None, dict[str, Decimal], Decimal | None]:
        """The step's cost, its amount by kind of token and in all (None: stated by its span, not split)."""
        if step.cost is not None:
            return step.cost, {}, None
        usage = step.usage
        if usage is None:
            return None, {}, None
        names = [n for n in (step.response_model, step.request_model) if n]
        prices = self.prices
        entry = _first(names, lambda n: prices.find(n, step.provider)) if prices else None
        if not table.available():
            counters.incr("cost.no_table")
            self.unpriced += 1
            return None, {}, None
        price = table.override_price(entry) if entry is not None else None
        url = endpoints.api_url(step.server_address, step.server_port) if price is None else None
        if price is None:
            price = _first(names, lambda n: table.table_price(n, step.provider, step.start_ns, url))
        if price is None:
            counters.incr("cost.unknown_model" if url is None or table.provider_at(url) else "cost.unknown_endpoint")
            self.unpriced += 1
            return None, {}, None
        parts = table.split(price, usage)
        if parts is None:
            counters.incr("cost.bad_usage")
            self.unpriced += 1
            return None, {}, None
        amount = sum(parts.values(), _ZERO)
        by_kind = {kind: float(parts[kind]) for kind in COST_KINDS if kind in parts}
        priced_by = BY_OVERRIDE if entry is not None else BY_TABLE
        return StepCost(float(amount), "USD", semconv.COST_SOURCE_LOCAL, priced_by, by_kind), parts, amount

    def run(self) -> RunCost | None:
        """The run's cost, when a step was priced."""
        if self.currency is None:
            return None
        return RunCost(
            total=float(self.total),
            currency=self.currency,
            by_kind={kind: float(self.by_kind[kind]) for kind in COST_KINDS if kind in self.by_kind},
            by_model={model: float(amount) for model, amount in self.by_model.items()},
            unpriced_steps=self.unpriced,
        )


def annotate(records: Sequence[SpanRecord], steps: Iterable[StepTime]) -> None:
    """Put the cost of each model step priced here (not one its span stated) on its span, as the conventions name
    it."""
    priced = {s.span_id: s.cost for s in steps if s.cost is not None and s.cost.priced_by in (BY_TABLE, BY_OVERRIDE)}
    if not priced:
        return
    for record in records:
        cost = priced.get(format(record.span_id, "016x"))
        if cost is None or semconv.USAGE_COST_AMOUNT in record.attributes:
            continue
        record.attributes = {
            **record.attributes,
            semconv.USAGE_COST_AMOUNT: cost.amount,
            semconv.USAGE_COST_CURRENCY: cost.currency,
            semconv.USAGE_COST_SOURCE: cost.source or semconv.COST_SOURCE_LOCAL,
        }

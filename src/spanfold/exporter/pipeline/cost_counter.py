"""``spanfold.gen_ai.client.cost``: what model calls cost, a counter through the OpenTelemetry metrics API, added on
the fold's worker once a run is folded and priced (``exporter/fold/cost.py``), never on the calling thread. One
point per priced model call: its amount, with ``gen_ai.response.model`` (else the request's) and the currency
(``spanfold.cost.currency``, ISO 4217); every run's, sampled out or not."""

from __future__ import annotations

from typing import TYPE_CHECKING

from opentelemetry.metrics import Meter, MeterProvider

from spanfold import semconv
from spanfold.version import __version__

if TYPE_CHECKING:  # made at init(), called once a run is folded: the trace model loads with the fold
    from spanfold.trace.model import Trace


class CostCounter:
    """Adds each priced model call of a folded run to the counter."""

    def __init__(self, meter: Meter) -> None:
        self._counter = meter.create_counter(
            semconv.METRIC_COST,
            unit="{currency}",
            description="What GenAI model calls cost (in spanfold.cost.currency)",
        )

    @classmethod
    def of(cls, provider: MeterProvider) -> CostCounter:
        return cls(provider.get_meter("spanfold", __version__))

    def __call__(self, trace: Trace) -> None:
        for step in trace.meta.steps:
            cost = step.cost
            if step.kind != "model" or cost is None:
                continue
            attributes = {semconv.COST_CURRENCY: cost.currency}
            if step.model:
                attributes[semconv.RESPONSE_MODEL] = step.model
            self._counter.add(cost.amount, attributes)

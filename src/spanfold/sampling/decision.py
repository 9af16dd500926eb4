"""Whether a folded run is kept: :class:`Sampler`, asked once per run on the fold's worker (never the calling thread).

A run is kept, for the first of these that holds (its reason): it ``error``-ed (its status, or a model call or tool run
of it, with ``keep_errors``), was ``slow`` (longer than ``slower_than``), ``costly`` (more than ``costlier_than``
US dollars: the run's known cost, a lower bound when some calls had no price), ``failing`` one of the checks (a check
that raises keeps the run: ``check_error``, a fault counted once per kind), else by its trace id (``rate``,
:func:`by_trace_id`). Counted in ``spanfold.stats()``: ``sampling.kept`` and ``sampling.kept.<reason>``,
``sampling.dropped`` and ``sampling.dropped.rate``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from spanfold import counters
from spanfold.sampling.option import RunsChecks, Sample

if TYPE_CHECKING:  # made at init(), asked once a run is folded: the trace model loads with the fold
    from spanfold.trace.model import Trace

#: Why a run was kept, first that holds first; a dropped run's reason is always ``rate``.
REASONS: Final = ("error", "slow", "costly", "failing", "check_error", "rate")
#: The trace id's random part, as W3C Trace Context level 2 and OpenTelemetry's probability sampling take it: its 56
#: rightmost bits. Kept when they are under ``rate`` of their range: a run's decision is its trace id's, the same in
#: every process, shard and receiver, and a rate keeps a subset of what any higher rate keeps.
_RANDOM_BITS: Final = 56
_RANGE: Final = 1 << _RANDOM_BITS
_MASK: Final = _RANGE - 1

#: Loads a spec file's checks (``spanfold.checks.load_spec``: the floors above hand it in).
SpecLoader = Callable[[str], Any]


def by_trace_id(trace_id: int, rate: float) -> bool:
    """Whether a run of ``trace_id`` is among the fraction ``rate`` kept (deterministic)."""
    return (trace_id & _MASK) < round(rate * _RANGE)


def errored(trace: Trace) -> bool:
    """The run ended in an error, or a model call or tool run of it failed (a tool error the agent recovered from)."""
    meta = trace.meta
    return meta.status == "error" or meta.error is not None or any(step.error for step in meta.steps)


def _seconds(trace: Trace) -> float | None:
    ms = trace.meta.duration_ms
    return ms / 1000.0 if isinstance(ms, (int, float)) else None


def _dollars(trace: Trace) -> float | None:
    """What the run cost in US dollars, as far as it is known (its priced calls)."""
    usd = trace.meta.extra.get("cost_usd")
    if isinstance(usd, (int, float)) and not isinstance(usd, bool):
        return float(usd)
    cost = trace.meta.run_cost
    if cost is not None and cost.currency == "USD":
        return cost.total
    return None


def _passed(result: Any) -> bool:
    """A check's result: a ``CheckResult`` or a bool (truthy when passed), or a list of them (a spec's)."""
    if isinstance(result, (list, tuple)):
        return all(bool(r) for r in result)
    return bool(result)


class Sampler:
    """One :class:`~spanfold.sampling.option.Sample`, ready to decide (its spec files loaded by ``load``: a
    ``ValueError`` or the loader's own error says what is wrong with one)."""

    def __init__(self, sample: Sample, load: SpecLoader | None = None) -> None:
        self.sample = sample
        self._checks: list[Callable[[Trace], Any]] = []
        for check in sample.failing:
            if isinstance(check, (str, os.PathLike)):
                if load is None:
                    raise ValueError(f"failing: the spec file {os.fspath(check)!r} needs spanfold.init() to load it")
                check = load(os.fspath(check))
            self._checks.append(check.run if isinstance(check, RunsChecks) else check)

    def keeps(self, trace: Trace, trace_id: int) -> bool:
        """Whether the run is kept; counted by reason."""
        reason = self.reason(trace, trace_id)
        if reason is None:
            counters.incr("sampling.dropped")
            counters.incr("sampling.dropped.rate")
            return False
        counters.incr("sampling.kept")
        counters.incr(f"sampling.kept.{reason}")
        return True

    def reason(self, trace: Trace, trace_id: int) -> str | None:
        """Why the run is kept (one of :data:`REASONS`), or None: dropped."""
        sample = self.sample
        if sample.keep_errors and errored(trace):
            return "error"
        if sample.slower_than is not None:
            seconds = _seconds(trace)
            if seconds is not None and seconds > sample.slower_than:
                return "slow"
        if sample.costlier_than is not None:
            dollars = _dollars(trace)
            if dollars is not None and dollars > sample.costlier_than:
                return "costly"
        failing = self._failing(trace)
        if failing is not None:
            return failing
        return "rate" if by_trace_id(trace_id, sample.rate) else None

    def _failing(self, trace: Trace) -> str | None:
        for check in self._checks:
            try:
                if not _passed(check(trace)):
                    return "failing"
            except Exception as exc:  # the user's check: the run is kept, the fault said once
                counters.fault("sampling.check", exc, detail=getattr(check, "__qualname__", type(check).__name__))
                return "check_error"
        return None


def sampler_of(sample: Sample | None, load: SpecLoader | None = None) -> Sampler | None:
    """A :class:`Sampler` for the ``sample`` option (None: every run kept)."""
    return None if sample is None else Sampler(sample, load)

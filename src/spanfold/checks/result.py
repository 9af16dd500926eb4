"""The outcome of one check on one trace."""

from __future__ import annotations

from dataclasses import dataclass, field

#: At most this many divergences are listed in ``CheckResult.reasons`` (then a count of the rest).
MAX_REASONS = 8


@dataclass(frozen=True, slots=True)
class CheckResult:
    """``passed`` is ``score >= threshold``; ``reasons`` lists divergences, the first one first.

    Truthy when passed, so ``assert tool_trajectory(trace, ...)`` reads naturally; its ``repr`` carries the
    reasons, so pytest's failure output shows them.
    """

    name: str
    score: float
    threshold: float = 1.0
    reasons: list[str] = field(default_factory=list)
    kind: str = ""

    @property
    def passed(self) -> bool:
        return self.score >= self.threshold

    def __bool__(self) -> bool:
        return self.passed

    @property
    def status(self) -> str:
        return "PASS" if self.passed else "FAIL"

    @property
    def first_reason(self) -> str:
        return self.reasons[0] if self.reasons else ""

    def explain(self) -> str:
        """Several lines: verdict, score against threshold, then each reason."""
        head = f"{self.name}: {self.status} (score {self.score:.2f}, threshold {self.threshold:.2f})"
        return "\n".join([head, *(f"  - {r}" for r in self.reasons)])

    def __repr__(self) -> str:
        return f"CheckResult({self.explain()})"


def make_result(name: str, kind: str, hits: int, total: int, threshold: float, reasons: list[str]) -> CheckResult:
    """A result scored ``hits / total`` (1.0 when there is nothing to check); long reason lists are cut short."""
    score = 1.0 if total == 0 else hits / total
    if len(reasons) > MAX_REASONS:
        reasons = [*reasons[:MAX_REASONS], f"... and {len(reasons) - MAX_REASONS} more"]
    return CheckResult(name=name, score=score, threshold=threshold, reasons=reasons, kind=kind)

"""The ``sample`` option: :class:`Sample`, checked when made, and its text form (``SPANFOLD_SAMPLE``, ``spanfold serve
--sample``), :func:`parse`.

Text: a rate alone (``0.1``), or ``key=value`` pairs split by commas::

    rate=0.1, slower_than=30s, costlier_than=0.25, keep_errors=true, failing=checks.yaml

``slower_than`` in seconds (``ms``, ``s``, ``m`` or ``h`` after the number), ``costlier_than`` in US dollars (a ``$``
before it is allowed), ``failing`` a spec file (``spanfold check``'s), given once per file. ``off``, ``none`` or
nothing: no sampling.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable

#: The most seconds ``slower_than`` takes (as the other options' seconds: about 31 years).
MAX_SECONDS = 10**9
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_OFF = frozenset({"", "off", "none", "false", "no"})
_KEYS = ("rate", "keep_errors", "slower_than", "costlier_than", "failing")


@runtime_checkable
class RunsChecks(Protocol):
    """A spanfold check (``tool_trajectory``'s ``TrajectoryCheck``, ``MessagesCheck``, a ``Spec``): ``run(trace)``
    returns a ``CheckResult`` (truthy when passed) or a list of them."""

    def run(self, trace: Any) -> Any: ...


#: A check a run may fail: a callable over the folded trace (truthy when the run passed: a ``CheckResult``, a bool),
#: a spanfold check (:class:`RunsChecks`), or a spec file's path (loaded by whoever builds the sampler).
Check: TypeAlias = "Callable[[Any], Any] | RunsChecks | str | os.PathLike[str]"


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name}={_shown(value)}: expected a finite number")
    return float(value)


def _shown(value: object, limit: int = 60) -> str:
    try:
        text = repr(value)
    except ValueError:
        return "a number of too many digits"
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def _checks(value: object) -> tuple[Check, ...]:
    items: Sequence[object]
    if isinstance(value, (str, os.PathLike)) or callable(value) or isinstance(value, RunsChecks):
        items = (value,)
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        raise ValueError(
            f"failing={_shown(value)}: expected a check (a callable over the trace, a spanfold check, a spec file's "
            "path) or a list of them"
        )
    for item in items:
        if isinstance(item, str) and not item.strip():
            raise ValueError("failing: a spec file's path is empty")
        if not (isinstance(item, (str, os.PathLike)) or callable(item) or isinstance(item, RunsChecks)):
            raise ValueError(
                f"failing: {_shown(item)} is not a check (a callable over the trace, a spanfold check with run(), or "
                "a spec file's path)"
            )
    return tuple(items)


@dataclass(frozen=True, slots=True)
class Sample:
    """Which runs are kept: every run that errored (``keep_errors``), ran longer than ``slower_than`` seconds, cost
    more than ``costlier_than`` US dollars, or failed one of the ``failing`` checks; of the rest, the fraction
    ``rate`` (0 to 1), chosen by trace id, so every process and every shard keeps the same runs."""

    rate: float
    keep_errors: bool = True
    slower_than: float | None = None
    costlier_than: float | None = None
    failing: Any = field(default=())  # Check or a sequence of them: a tuple of Check once made

    def __post_init__(self) -> None:
        rate = _number("rate", self.rate)
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"rate={_shown(self.rate)}: expected a fraction from 0 to 1")
        object.__setattr__(self, "rate", rate)
        if not isinstance(self.keep_errors, bool):
            raise ValueError(f"keep_errors={_shown(self.keep_errors)}: expected true or false")
        if self.slower_than is not None:
            seconds = _number("slower_than", self.slower_than)
            if not 0.0 < seconds <= MAX_SECONDS:
                raise ValueError(f"slower_than={_shown(self.slower_than)}: expected a positive number of seconds")
            object.__setattr__(self, "slower_than", seconds)
        if self.costlier_than is not None:
            dollars = _number("costlier_than", self.costlier_than)
            if dollars < 0.0:
                raise ValueError(f"costlier_than={_shown(self.costlier_than)}: expected US dollars, 0 or more")
            object.__setattr__(self, "costlier_than", dollars)
        object.__setattr__(self, "failing", _checks(self.failing))

    @property
    def spec_files(self) -> tuple[str, ...]:
        """The ``failing`` checks given as spec files' paths."""
        return tuple(os.fspath(c) for c in self.failing if isinstance(c, (str, os.PathLike)))

    def describe(self) -> str:
        """One line: what is kept (``spanfold serve`` says it when listening)."""
        kept = []
        if self.keep_errors:
            kept.append("every run that errored")
        if self.slower_than is not None:
            kept.append(f"slower than {self.slower_than:g} s")
        if self.costlier_than is not None:
            kept.append(f"costlier than ${self.costlier_than:g}")
        if self.failing:
            kept.append(f"failing {len(self.failing)} check{'s' if len(self.failing) != 1 else ''}")
        rest = f"{self.rate:.4g} of the {'rest' if kept else 'runs'} (by trace id)"
        return ", ".join([*kept, rest])


def _seconds(text: str) -> float:
    value = text.strip().lower()
    for unit in ("ms", "s", "m", "h"):
        if value.endswith(unit):
            return float(value[: -len(unit)]) * _UNITS[unit]
    return float(value)


def _flag(key: str, text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{key}={_shown(text)}: expected true or false")


def parse(text: str) -> Sample | None:
    """A :class:`Sample` from its text form (see the module docstring); None for ``off``. ValueError saying what is
    wrong."""
    raw = text.strip()
    if raw.lower() in _OFF:
        return None
    if "=" not in raw:
        try:
            return Sample(rate=float(raw))
        except ValueError as exc:
            if "rate=" in str(exc):
                raise
            raise ValueError(
                f"{_shown(text)}: expected a rate (such as 0.1) or key=value pairs ({', '.join(_KEYS)})"
            ) from None
    values: dict[str, Any] = {}
    failing: list[str] = []
    for part in raw.split(","):
        if not part.strip():
            continue
        key, sep, value = (s.strip() for s in part.partition("="))
        key = key.lower()
        if not sep or key not in _KEYS:
            raise ValueError(f"{_shown(part.strip())}: expected key=value, the keys being {', '.join(_KEYS)}")
        if key == "failing":
            failing.append(value)
            continue
        if key in values:
            raise ValueError(f"{key} is given twice")
        try:
            if key == "keep_errors":
                values[key] = _flag(key, value)
            elif key == "slower_than":
                values[key] = _seconds(value)
            elif key == "costlier_than":
                values[key] = float(value.removeprefix("$"))
            else:
                values[key] = float(value)
        except ValueError as exc:
            if key in str(exc):
                raise
            raise ValueError(f"{key}={_shown(value)}: expected a number") from None
    if "rate" not in values:
        raise ValueError("rate is missing: the fraction of the other runs kept, from 0 to 1 (rate=0 keeps none)")
    return Sample(failing=tuple(failing), **values)

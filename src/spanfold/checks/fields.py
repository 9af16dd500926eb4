"""Validating the plain fields shared by every check: threshold, name, known keys."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from spanfold.checks.errors import SpecError, SpecPath
from spanfold.checks.matching import show
from spanfold.trace.model import finite_number

#: Keys that ``spanfold convert --to compact`` writes on a tool call and that checks ignore.
RECORDING_KEYS = frozenset({"id", "start_time", "end_time", "duration_ms"})


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def non_negative(raw: Any) -> float | None:
    """A number >= 0 as a finite float; None for anything else (a string, ``.inf``, an integer of 400 digits, which
    no float holds: ``float()`` would raise ``OverflowError``)."""
    number = finite_number(raw)
    return number if number is not None and number >= 0 else None


def parse_threshold(raw: Any, path: SpecPath) -> float:
    if not is_number(raw) or not 0.0 <= float(raw) <= 1.0:
        raise SpecError(f"threshold must be a number from 0 to 1 (got {show(raw)})", path)
    return float(raw)


def parse_name(raw: Any, path: SpecPath) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise SpecError(f"name must be a non-empty string (got {show(raw)})", path)
    return raw


def require_mapping(raw: Any, path: SpecPath, what: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise SpecError(f"{what} must be a mapping (got {show(raw)})", path)
    return raw


def require_list(raw: Any, path: SpecPath, what: str) -> list[Any]:
    if not isinstance(raw, list):
        raise SpecError(f"{what} must be a list (got {show(raw)})", path)
    return raw


def check_keys(raw: Mapping[str, Any], allowed: Iterable[str], path: SpecPath, what: str) -> None:
    """Unknown keys are errors (a typo would otherwise silently check nothing)."""
    names = list(allowed)
    for key in raw:
        if key not in names and key not in RECORDING_KEYS:
            raise SpecError(f"unknown key {show(key)} in {what} (expected one of {', '.join(names)})", (*path, key))

"""Counters (``spanfold.stats()``) for what spanfold did and what went wrong inside it; the log-once rule.

A fault inside spanfold never reaches the user's program: it is caught, counted here under a kind
(``"openai.output"``, ``"writer.io"``, ...) and logged once per kind. A problem of the user's setup (an output path
spanfold refuses to write through) is counted and logged once per kind too, as what it is (:func:`problem`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from typing import Any

logger = logging.getLogger("spanfold")

_lock = threading.Lock()
_counters: Counter[str] = Counter()
_logged: set[str] = set()


def _fresh_lock_in_child() -> None:
    """A forked child gets a new lock: a parent thread may have held this one at the fork."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_lock_in_child)


def incr(name: str, n: int = 1) -> None:
    """Add ``n`` to counter ``name`` (thread-safe)."""
    with _lock:
        _counters[name] += n


def fault(kind: str, exc: BaseException | None = None, detail: str = "") -> None:
    """Count an internal fault of ``kind``; log it the first time that kind happens."""
    with _lock:
        _counters["faults"] += 1
        _counters[f"fault.{kind}"] += 1
        first = kind not in _logged
        _logged.add(kind)
    if first:
        msg = f"spanfold: internal fault ({kind}){': ' + detail if detail else ''}; your program is not affected"
        logger.warning(msg, exc_info=exc if exc is not None else False)


def problem(kind: str, message: str) -> None:
    """Count, under ``kind``, a problem that is not spanfold's fault but the user's to fix (an output path that is
    unsafe or cannot be written); log ``message`` (one line, no traceback) the first time that kind happens."""
    if _counted_first(kind):
        logger.warning(message)


def note(kind: str, message: str) -> None:
    """Count, under ``kind``, something the user may want to know and need not fix (a call that reported no token
    usage); log ``message`` at INFO the first time that kind happens."""
    if _counted_first(kind):
        logger.info(message)


def _counted_first(kind: str) -> bool:
    """Count one of ``kind``; whether it is the first said of that kind."""
    with _lock:
        _counters[kind] += 1
        first = kind not in _logged
        _logged.add(kind)
    return first


def snapshot() -> dict[str, Any]:
    """A copy of every counter."""
    with _lock:
        return dict(_counters)


def reset() -> None:
    """Zero every counter and forget which faults were logged (tests)."""
    with _lock:
        _counters.clear()
        _logged.clear()

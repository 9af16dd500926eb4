"""Fork safety (DESIGN "Fork-safe"): objects that hold threads, locks or buffers re-initialise in a forked child.

The registration holds the object weakly, as the OTel SDK's ``BatchSpanProcessor`` does: ``os.register_at_fork``
hooks can never be removed, so a strong reference would keep every processor and writer ever made alive.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable


def reinit_in_child(method: Callable[[], None]) -> None:
    """Call the bound ``method`` in every forked child, for as long as its object lives."""
    if not hasattr(os, "register_at_fork"):  # pragma: no cover - platforms without fork
        return
    weak = weakref.WeakMethod(method)

    def after_in_child() -> None:
        reinit = weak()
        if reinit is not None:
            reinit()

    os.register_at_fork(after_in_child=after_in_child)

"""Post-import hooks that can be withdrawn: the one generation guard of the registry and every instrumentor.

spanfold patches a library when the application imports it (wrapt's post-import hooks; at once when it already is).
wrapt cannot unregister a hook, so each is registered under the generation current at the time, and
:meth:`ImportHooks.withdraw` starts a new one: a hook of an older generation does nothing when its module is imported
later (an ``init()`` after ``shutdown()``, an ``uninstrument()`` before the SDK was ever imported).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType

import wrapt


class ImportHooks:
    """One owner's post-import hooks (the registry's, or one instrumentor class's), withdrawn together."""

    def __init__(self) -> None:
        self._generation = 0
        self._lock = threading.Lock()

    def renew(self) -> int:
        """Withdraw the hooks registered so far; return the new generation, for :meth:`register` and :meth:`valid`."""
        with self._lock:
            self._generation += 1
            return self._generation

    def current(self) -> int:
        return self._generation

    def withdraw(self) -> None:
        self.renew()

    def valid(self, generation: int) -> bool:
        """Whether hooks of ``generation`` still stand (check again under the owner's lock before patching)."""
        return generation == self._generation

    def register(self, module: str, generation: int, hook: Callable[[ModuleType], None]) -> None:
        """Call ``hook(module)`` when ``module`` is imported (at once when it is), while ``generation`` stands."""

        def fire(imported: ModuleType) -> None:
            if self.valid(generation):
                hook(imported)

        wrapt.register_post_import_hook(fire, module)

"""Whether the installed version of a client library is one spanfold traces, read from its metadata.

The range is each instrumentor's ``dependencies`` (its ``instrumentation_dependencies()``). The check reads the
distribution's metadata (``importlib.metadata``): it never imports the library. Outside the range spanfold says so
once per process, in one line naming the installed version and the range, and patches nothing of that library; the
other libraries are traced as usual. ``init()`` and zero-code (``opentelemetry-instrument``) both come here, through
:meth:`spanfold.instrumentation.toolkit.patching.TableInstrumentor.instrument`, so they decide alike for each library.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from importlib import metadata

from packaging.requirements import InvalidRequirement, Requirement

from spanfold import counters

logger = logging.getLogger("spanfold")

_lock = threading.Lock()
_said: set[str] = set()


def outside(requirements: Iterable[str]) -> str | None:
    """The one-line refusal when an installed library falls outside its range; None when it is in range (or not
    installed: then there is nothing to patch anyway)."""
    for spec in requirements:
        try:
            req = Requirement(spec)
        except InvalidRequirement:
            return f"spanfold: cannot read the supported range {spec!r}; that library is not traced"
        try:
            installed = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            continue
        if not req.specifier.contains(installed, prereleases=True):
            return (
                f"spanfold: {req.name} {installed} is installed, but spanfold traces {spec.strip()} only;"
                f" its calls are not traced (the other libraries are)"
            )
    return None


def supported(requirements: Iterable[str]) -> bool:
    """True when every installed library of ``requirements`` is in range; otherwise say so (once) and count it."""
    problem = outside(requirements)
    if problem is None:
        return True
    with _lock:
        first = problem not in _said
        _said.add(problem)
    if first:
        counters.incr("instrument.unsupported_version")
        logger.warning(problem)
    return False

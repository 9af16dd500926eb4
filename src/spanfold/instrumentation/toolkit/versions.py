"""Whether the installed version of a client library is one spanfold traces, read from its metadata.

The range is each instrumentor's ``dependencies`` (its ``instrumentation_dependencies()``). The check reads the
distribution's metadata (``importlib.metadata``): it never imports the library. Outside the range spanfold says so
once per process, in one line naming the installed version and the range, and patches nothing of that library; the
other libraries are traced as usual. ``init()`` and zero-code (``opentelemetry-instrument``) both come here, through
:meth:`spanfold.instrumentation.toolkit.patching.TableInstrumentor.instrument`, so they decide alike for each library.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from importlib import metadata

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from spanfold import counters

logger = logging.getLogger("spanfold")

_lock = threading.Lock()
_said: set[str] = set()
#: A range as the instrumentors give it: a distribution's name, then its version specifiers (``openai >= 1.40, < 4``).
#: Read without ``packaging.requirements`` (markers, extras, URLs: none here), which costs ``init()`` ~10 ms to import.
_RANGE = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)", re.DOTALL)


def outside(requirements: Iterable[str]) -> str | None:
    """The one-line refusal when an installed library falls outside its range; None when it is in range (or not
    installed: then there is nothing to patch anyway)."""
    for spec in requirements:
        found = _RANGE.fullmatch(spec)
        try:
            if found is None:
                raise InvalidSpecifier(spec)
            name, versions = found.group(1), SpecifierSet(found.group(2).strip())
        except InvalidSpecifier:
            return f"spanfold: cannot read the supported range {spec!r}; that library is not traced"
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        if not versions.contains(installed, prereleases=True):
            return (
                f"spanfold: {name} {installed} is installed, but spanfold traces {spec.strip()} only;"
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

"""Run by Python at start-up in the programs ``spanfold run`` starts (this directory leads their ``PYTHONPATH``):
``spanfold.init()`` from the environment, then the ``sitecustomize`` this one hides, if any (a venv's own, or
``opentelemetry-instrument``'s when the command is that)."""

from __future__ import annotations

import importlib
import os
import sys


def _init() -> None:
    try:
        import spanfold

        spanfold.init()
    except Exception as exc:  # the program runs untraced rather than not at all
        sys.stderr.write(f"spanfold run: tracing is off: spanfold.init() failed: {type(exc).__name__}: {exc}\n")


def _chain() -> None:
    """Import the next ``sitecustomize`` on the path (the one this directory hides)."""
    here = os.path.dirname(os.path.abspath(__file__))
    saved = sys.path[:]
    this = sys.modules.pop("sitecustomize", None)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
        importlib.import_module("sitecustomize")
    except ImportError:
        pass
    finally:
        sys.path[:] = saved
        if this is not None:
            sys.modules.setdefault("sitecustomize", this)


_init()
_chain()

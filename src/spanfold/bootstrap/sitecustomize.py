"""Run by Python at start-up in the programs ``spanfold run`` starts (this directory leads their ``PYTHONPATH``):
``spanfold.init()`` from the environment, then the ``sitecustomize`` this one hides, if any (a venv's own, or
``opentelemetry-instrument``'s when the command is that).

Every Python a traced program starts inherits the ``PYTHONPATH`` (a ``python -m venv`` venv, the system Python,
another version, Python 2), and most of them cannot import spanfold: there this file does nothing and says nothing,
so a child's stderr stays its own. That is why it is written in the syntax every Python reads (no annotations, no
f-strings: type comments for mypy).
"""

import importlib
import os
import sys

#: The oldest Python spanfold runs on (pyproject's ``requires-python``): older ones never import it.
_OLDEST = (3, 10)


def _init():  # type: () -> None
    if sys.version_info < _OLDEST:  # it may find spanfold on the path, and fail to read it
        return
    try:
        import spanfold
    except ImportError:  # a Python without spanfold (another venv, the system's): stay silent
        return
    try:
        from spanfold import run_report

        run_report.arm()  # before init(): its exit flush runs first
    except Exception:  # pragma: no cover - a report is not worth failing the program for
        pass
    try:
        spanfold.init()
    except Exception as exc:  # the program runs untraced rather than not at all
        sys.stderr.write(
            "spanfold run: tracing is off: spanfold.init() failed: " + type(exc).__name__ + ": " + str(exc) + "\n"
        )


def _chain():  # type: () -> None
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

"""DSPy program runs: the outermost ``dspy.Module`` call is the run, an ``invoke_agent {name}`` span at the root of
its trace.

``Module.__call__`` and ``Module.acall`` are patched; a module called inside a run of another (a ``Predict`` inside a
``ReAct``, the modules of your program) is part of that run and opens nothing. The run is named after the module: its
``name`` attribute when you gave it one (a non-empty string), else its class (``ReAct``, ``ChainOfThought``, your
program's class). A run inside ``spanfold.agent`` (or another producer's current ``invoke_agent`` span) opens no span
of its own: the user named the run.
"""

from __future__ import annotations

import itertools
from typing import Any

from spanfold.instrumentation.invocations.agent_runs import AgentRuns


class Run:
    """One outermost module call: numbers the ReAct runs inside it (their call ids must differ within the trace)."""

    __slots__ = ("reacts",)

    def __init__(self, module: Any = None) -> None:
        self.reacts = itertools.count(1)


#: The runs: a module inside a run is part of it; the context holds the run's :class:`Run`.
RUNS = AgentRuns("dspy", held=Run, nested=False)


def react_prefix() -> str:
    """The call-id prefix of a ReAct run starting now: ``react`` for the first of its program run, ``react2``,
    ``react3``... for later ones."""
    run = RUNS.current()
    ordinal = next(run.reacts) if isinstance(run, Run) else 1
    return "react" if ordinal == 1 else f"react{ordinal}"

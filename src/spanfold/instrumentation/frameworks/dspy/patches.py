"""DSPy: a program run is one trace, rooted at ``invoke_agent {module name}``, with its model steps and tool runs.

Supported: ``dspy`` >= 3.4, < 4 (tested with 3.4.1). Patched, once on the classes and functions:

* ``Module.__call__`` / ``acall``: the outermost module's call is the run (:mod:`.runs`).
* ``dspy.clients.execution.execute`` / ``aexecute``, the one path of every ``LM`` call whatever its engine: each
  call a model step read from DSPy's objects, the client calls inside it recording nothing (:mod:`.model`).
* ``ReAct.forward`` / ``aforward`` and its step calls: ReAct's text protocol turned back into tool calls and outputs,
  paired by ids made of the step's index (``react_0``...); ``Tool.__call__`` / ``acall``: each tool run an
  ``execute_tool`` span (:mod:`.react`); ``ToolCalls.ToolCall.execute`` (native function calling) one with the
  model's call id.
"""

from __future__ import annotations

from spanfold.instrumentation.frameworks.dspy import model, react, runs
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor

SUPPORTED = "dspy >= 3.4, < 4"
MODULE = "dspy.primitives.module"
EXECUTION = "dspy.clients.execution"
REACT = "dspy.predict.react"
TOOL = "dspy.adapters.types.tool"

PATCHES = (
    Patch(MODULE, "Module.__call__", runs.RUNS.patch()),
    Patch(MODULE, "Module.acall", runs.RUNS.patch()),
    Patch(EXECUTION, "execute", model.EXECUTE),
    Patch(EXECUTION, "aexecute", model.EXECUTE),
    Patch(REACT, "ReAct.forward", react.forward_wrapper),
    Patch(REACT, "ReAct.aforward", react.forward_wrapper),
    Patch(REACT, "ReAct._call_with_potential_trajectory_truncation", react.step_wrapper),
    Patch(REACT, "ReAct._async_call_with_potential_trajectory_truncation", react.step_wrapper),
    Patch(TOOL, "Tool.__call__", react.TOOL),
    Patch(TOOL, "Tool.acall", react.TOOL),
    Patch(TOOL, "ToolCalls.ToolCall.execute", react.TOOL_CALL),
)


class DSPyInstrumentor(TableInstrumentor, library="dspy", supported=SUPPORTED, table=PATCHES):
    """DSPy program runs, ``LM`` calls as model steps, ReAct's tool runs."""

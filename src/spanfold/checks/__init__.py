"""Trajectory and expected-message checks over flat traces.

    from spanfold.checks import tool_trajectory, expected_messages

    result = tool_trajectory(trace, mode="in_order", expected=["search", {"tool": "answer", "args": {"final": True}}])
    assert result, result.reasons
    assert_spec(trace, "EVAL.yaml")   # a spec file, or an AgentV eval file graded as AgentV grades it
    assert_execution_metrics(trace, max_llm_calls=3, max_tokens=2000)

Names load on first use, so importing this package (the pytest plugin does, in every test run) costs nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spanfold.checks.agentv.metrics import execution_metrics
    from spanfold.checks.asserts import assert_execution_metrics, assert_messages, assert_spec, assert_trajectory
    from spanfold.checks.captured import CapturedTraces
    from spanfold.checks.errors import SpecError, TraceFormatError
    from spanfold.checks.expected_messages_check import MessagesCheck, expected_messages
    from spanfold.checks.result import CheckResult
    from spanfold.checks.spec import Spec, load_spec, loads_spec
    from spanfold.checks.trajectory import MODES, TrajectoryCheck, tool_trajectory

_WHERE = {
    "execution_metrics": "agentv.metrics",
    "assert_execution_metrics": "asserts",
    "assert_spec": "asserts",
    "assert_messages": "asserts",
    "assert_trajectory": "asserts",
    "CapturedTraces": "captured",
    "SpecError": "errors",
    "TraceFormatError": "errors",
    "MessagesCheck": "expected_messages_check",
    "expected_messages": "expected_messages_check",
    "CheckResult": "result",
    "Spec": "spec",
    "load_spec": "spec",
    "loads_spec": "spec",
    "MODES": "trajectory",
    "TrajectoryCheck": "trajectory",
    "tool_trajectory": "trajectory",
}

__all__ = [
    "MODES",
    "CapturedTraces",
    "CheckResult",
    "MessagesCheck",
    "Spec",
    "SpecError",
    "TraceFormatError",
    "TrajectoryCheck",
    "assert_execution_metrics",
    "assert_messages",
    "assert_spec",
    "assert_trajectory",
    "execution_metrics",
    "expected_messages",
    "load_spec",
    "loads_spec",
    "tool_trajectory",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'spanfold.checks' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"spanfold.checks.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])

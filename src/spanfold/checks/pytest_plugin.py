"""pytest plugin (entry point ``pytest11``): the ``spanfold_traces`` fixture and readable check failures.

    def test_agent(spanfold_traces):
        run_my_agent("What's the weather in Paris?")
        assert_trajectory(spanfold_traces.last, ["get_weather", "answer"], mode="in_order")

``spanfold_traces.record(result)`` sends a check's outcome as a ``gen_ai.evaluation.result`` event on the run it
checked, through the application's ``LoggerProvider`` (:mod:`spanfold.checks.evaluation`).

Loaded in every pytest run of a project with spanfold installed, so this module imports nothing heavy:
spanfold's capture machinery is imported when a test first asks for the fixture.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from spanfold.checks.captured import CapturedTraces


@pytest.fixture
def spanfold_traces() -> Iterator[CapturedTraces]:
    """The traces completed while the test runs, captured in memory (no files); reading flushes first.

    Starts spanfold in memory when ``spanfold.init()`` has not run, and stops it again after the test.
    """
    from spanfold.checks import captured

    with captured.open_capture() as sink:
        yield captured.CapturedTraces(sink, captured.flush_traces)


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: Any, right: Any) -> list[str] | None:
    """``assert result == True`` on a check result: its verdict and reasons."""
    from spanfold.checks.result import CheckResult

    if op != "==" or not (isinstance(left, CheckResult) and isinstance(right, bool)):
        return None
    return [
        f"{left.name} {left.status} (score {left.score:.2f}, threshold {left.threshold:.2f})",
        *(f"- {r}" for r in left.reasons),
    ]

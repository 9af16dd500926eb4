"""The contract every framework answers alike, written once: a framework's test module subclasses :class:`Contract` as
``TestContract`` with a ``framework`` fixture giving its :class:`Framework` (how to run its agent once against the
mock server, and what that run's flat trace holds), so each framework's venv (``.ci/frameworks``, or the main one)
runs the contract for its framework; the framework's own tests keep only what is its own.

* A run inside ``spanfold.agent(...)`` is part of that run: one trace, named after the application's run and
  complete, whose only root is the application's ``invoke_agent`` span, every span of the run in it; the framework
  opens no run span of its own there (``invoke_agent`` / ``invoke_workflow``), but for those it nests on purpose
  (:attr:`Framework.nested`); and its events are the framework's run, event by event.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import spanfold
from spanfold.testing import MockLLMServer, Responder

from ..conftest import Traced

#: The application's run the framework's runs inside.
RUN = "my-run"
#: The names of run spans: an agent's or a workflow's.
RUN_SPANS = ("invoke_agent ", "invoke_workflow ")

Events = list[dict[str, Any]]


@dataclass(frozen=True)
class Framework:
    """One framework's side of the contract."""

    #: Runs the framework's agent once against the mock server (an ``async def`` is awaited in an event loop of its
    #: own); what it returns is handed to :attr:`trace`.
    run: Callable[[MockLLMServer], Any]
    #: Asserts the run's flat trace event by event, given its events and what :attr:`run` returned.
    trace: Callable[[Events, Any], None]
    #: The mock server's answers (a responder: ``WEATHER.replies``); None: :attr:`run` scripts them.
    replies: Responder | None = None
    #: The run spans of the framework's own that the application's run holds (AutoGen's agent turns, an Instructor
    #: extraction), by name.
    nested: tuple[str, ...] = ()


def events_are(expected: Events) -> Callable[[Events, Any], None]:
    """A :attr:`Framework.trace` for a run whose events are known whole: ``expected``, event by event."""

    def trace(events: Events, returned: Any) -> None:
        assert events == expected

    return trace


def run_inside_spanfold_agent(run: Callable[[MockLLMServer], Any], server: MockLLMServer) -> Any:
    """``run(server)`` inside ``spanfold.agent(RUN)``, as an application runs it: an ``async def`` in its own event
    loop, the run opened in it."""
    if not inspect.iscoroutinefunction(run):
        with spanfold.agent(RUN):
            return run(server)

    async def main() -> Any:
        with spanfold.agent(RUN):
            return await run(server)

    return asyncio.run(main())


class Contract:
    """The contract's cases, for the ``framework`` fixture of the test module that subclasses it."""

    def test_a_run_inside_spanfold_agent_is_part_of_that_run(
        self, framework: Framework, traced: Traced, global_spans: Any
    ) -> None:
        with MockLLMServer(framework.replies) as server:
            returned = run_inside_spanfold_agent(framework.run, server)
        framework.trace(traced.one(), returned)
        (meta,) = traced.metas()
        assert (meta["metadata"]["name"], meta["metadata"]["status"]) == (RUN, "complete")
        spans = global_spans.get_finished_spans()
        (root,) = [s for s in spans if s.parent is None]
        assert root.name == f"invoke_agent {RUN}"
        assert {s.context.trace_id for s in spans} == {root.context.trace_id}
        assert sorted(s.name for s in spans if s.name.startswith(RUN_SPANS)) == sorted([root.name, *framework.nested])

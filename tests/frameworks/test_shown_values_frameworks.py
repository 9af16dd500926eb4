"""A framework run's root shows the run's question and final answer (``input.value`` / ``output.value``, text/plain):
a LangGraph graph run and an OpenAI Agents SDK run, each over the embedded mock server. What the model calls and tool
runs show is tests/instrumentation/test_shown_values.py's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from spanfold.testing import MockLLMServer

from ..conftest import Traced

SHOWN = ("input.value", "input.mime_type", "output.value", "output.mime_type")


def shown(span: Any) -> dict[str, Any]:
    return {k: v for k, v in (span.attributes or {}).items() if k in SHOWN}


def root_of(global_spans: Any) -> Any:
    (root,) = [s for s in global_spans.get_finished_spans() if s.parent is None]
    return root


def test_langgraph_run(traced: Traced, server: MockLLMServer, global_spans: Any) -> None:
    from .langchain_helpers import question, weather_agent

    state = weather_agent(server).invoke(question())
    events = traced.one()
    assert shown(root_of(global_spans)) == {
        "input.value": events[1]["content"],
        "input.mime_type": "text/plain",
        "output.value": str(state["messages"][-1].content),
        "output.mime_type": "text/plain",
    }


@pytest.fixture
def _offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    yield


async def test_openai_agents_run(traced: Traced, server: MockLLMServer, global_spans: Any, _offline: None) -> None:
    from agents import Runner

    from .test_openai_agents import QUESTION, weather_agent

    result = await Runner.run(weather_agent(server), QUESTION)
    traced.one()
    assert shown(root_of(global_spans)) == {
        "input.value": QUESTION,
        "input.mime_type": "text/plain",
        "output.value": result.final_output,
        "output.mime_type": "text/plain",
    }


def test_capture_off_shows_nothing(traced_off: Traced, server: MockLLMServer, global_spans: Any) -> None:
    from .langchain_helpers import question, weather_agent

    weather_agent(server).invoke(question())
    traced_off.one()
    assert all(shown(s) == {} for s in global_spans.get_finished_spans())

"""AWS Strands Agents (strands-agents 1.62) with its OpenAI model against the mock server: its own spans (messages
in span events, or ``gen_ai.client.inference.operation.details`` events with the latest conventions), read by
``exporter.dialect_strands``, give the flat trace spanfold's openai patch gives; beside that patch, one model step
per call."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from spanfold.testing import WEATHER, scenarios
from spanfold.testing.agents import PROVIDERS

from .frameworks import invariant, openai_patch, patch_kwargs
from .producers import Harness, Run, environ, instrumented
from .test_producers_equivalence import ANSWER, expected

pytest.importorskip("strands")


@pytest.fixture
def harness(_global_provider: Any, _global_exporter: Any) -> Iterator[Harness]:
    yield Harness(_global_provider, _global_exporter)


def run_agent(run: Run) -> str:
    from strands import Agent, tool
    from strands.models.openai import OpenAIModel

    client = {"api_key": "sk-test", "base_url": run.server.base_url, "max_retries": 0}
    model = OpenAIModel(client_args=client, model_id=PROVIDERS["openai"].model)
    tools = [tool(scenarios.get_weather), tool(scenarios.convert_temperature)]
    agent = Agent(model=model, system_prompt=WEATHER.system, tools=tools, name="weather-bot", callback_handler=None)
    return str(agent(WEATHER.question)).strip()


@contextlib.contextmanager
def conventions(opt_in: str) -> Iterator[None]:
    """Strands with ``OTEL_SEMCONV_STABILITY_OPT_IN`` set (its tracer reads it once, when made: made afresh)."""
    from strands.telemetry import tracer

    with environ(OTEL_SEMCONV_STABILITY_OPT_IN=opt_in):
        tracer._tracer_instance = None
        try:
            yield
        finally:
            tracer._tracer_instance = None


@pytest.mark.parametrize("opt_in", ["", "gen_ai_latest_experimental"])
def test_framework_only(harness: Harness, opt_in: str) -> None:
    with conventions(opt_in), harness.run() as run:
        run.answer = run_agent(run)
    assert run.answer == ANSWER
    chat = next(s for s in run.spans if s.name == "chat")
    detail_events = {e.name for e in chat.events} == {"gen_ai.client.inference.operation.details"}
    assert detail_events == bool(opt_in)
    trace = run.fold()
    assert invariant(trace) == expected("call_mock_")
    assert trace.meta.name == "weather-bot"
    assert trace.meta.usage.output_tokens == 14 + 13 + 24  # the model steps' tokens; not the agent span's total


def test_both_one_model_step(harness: Harness) -> None:
    with instrumented(openai_patch(), **patch_kwargs(harness.provider)), harness.run() as run:
        run.answer = run_agent(run)
    assert len([s for s in run.spans if s.name.startswith("chat")]) == 6
    trace = run.fold()
    assert invariant(trace) == expected("call_mock_")
    assert trace.meta.usage.output_tokens == 14 + 13 + 24
    kept = {e.metadata.get("provider") for e in trace.events if e.role == "assistant"}
    assert kept == {"openai"}  # the provider's span, not Strands' own (gen_ai.system strands-agents)


def test_tool_error(harness: Harness) -> None:
    from strands import Agent, tool
    from strands.models.openai import OpenAIModel

    def get_weather(city: str) -> str:
        """Get the current weather in a city."""
        if city == "Tokyo":
            raise RuntimeError("weather service down")
        return scenarios.get_weather(city)

    with harness.run() as run:
        client = {"api_key": "sk-test", "base_url": run.server.base_url, "max_retries": 0}
        model = OpenAIModel(client_args=client, model_id=PROVIDERS["openai"].model)
        tools = [tool(get_weather), tool(scenarios.convert_temperature)]
        Agent(model=model, system_prompt=WEATHER.system, tools=tools, callback_handler=None)(WEATHER.question)
    events = invariant(run.fold())
    assert events[3] == {"role": "tool", "content": "Paris: 18°C, sunny", "tool_call_id": "call_mock_1"}
    assert events[4]["tool_call_id"] == "call_mock_2" and "weather service down" in str(events[4]["content"])

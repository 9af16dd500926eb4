"""Semantic Kernel under spanfold.init() (its own venv, ``.ci/frameworks``: it pins ``pydantic < 2.14``): a
``ChatCompletionAgent`` with a weather plugin on the ``OpenAIChatCompletion`` connector (the real openai SDK against
the embedded mock server), through ``get_response``, ``invoke`` and ``invoke_stream``, with Semantic Kernel's
diagnostics off (its default: spanfold opens the run) and on (its ``invoke_agent`` and ``chat`` spans folded, no run
of spanfold's, each model call one step). One trace named after the agent, each kernel function a tool step with the
model's call id, asserted event by event."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from semantic_kernel.agents import ChatCompletionAgent
from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion
from semantic_kernel.functions import kernel_function
from semantic_kernel.utils.telemetry.agent_diagnostics import decorators as agent_diagnostics
from semantic_kernel.utils.telemetry.model_diagnostics import decorators as model_diagnostics

from spanfold.testing import WEATHER, MockLLMServer

from ..conftest import Traced, traced_into
from .contract import Contract, Framework, events_are
from .weather import ANSWER, WEATHER_RUN, convert_temperature, get_weather


class Weather:
    @kernel_function(description="Get the current weather in a city.")
    def get_weather(self, city: str) -> str:
        return get_weather(city)

    @kernel_function(description="Convert a temperature in degrees Celsius to another unit.")
    def convert_temperature(self, celsius: float, to: str = "fahrenheit") -> str:
        return convert_temperature(celsius, to)


@pytest.fixture(params=["spanfolds", "own_spans"])
def diagnostics(request: pytest.FixtureRequest) -> Iterator[str]:
    """Semantic Kernel's diagnostics off (its default) or on (as its environment variable turns them on: the agent
    and the model diagnostics each read it into settings of their own)."""
    settings = [agent_diagnostics.MODEL_DIAGNOSTICS_SETTINGS, model_diagnostics.MODEL_DIAGNOSTICS_SETTINGS]
    for each in settings:
        each.enable_otel_diagnostics = request.param == "own_spans"
    try:
        yield str(request.param)
    finally:
        for each in settings:
            each.enable_otel_diagnostics = False


def agent(server: MockLLMServer) -> ChatCompletionAgent:
    client = openai.AsyncOpenAI(api_key="test", base_url=server.base_url, max_retries=0)
    service = OpenAIChatCompletion(ai_model_id="weather-model", async_client=client)
    return ChatCompletionAgent(service=service, name="weather_agent", instructions=WEATHER.system, plugins=[Weather()])


def assert_weather_run(traced: Traced, global_spans: Any, diagnostics: str) -> None:
    assert traced.one() == WEATHER_RUN
    meta = traced.metas()[0]["metadata"]
    assert meta["name"] == "weather_agent" and meta["status"] == "complete"
    models = [s for s in meta["steps"] if s["kind"] == "model"]
    assert meta["usage"]["input_tokens"] == sum(s["usage"]["input_tokens"] for s in models)  # each call once
    steps = [(s["kind"], s.get("call_id")) for s in meta["steps"]]
    assert steps == [
        ("model", None),
        ("tool", "call_mock_1"),
        ("tool", "call_mock_2"),
        ("model", None),
        ("tool", "call_mock_3"),
        ("model", None),
    ]
    runs = [s for s in global_spans.get_finished_spans() if s.name == "invoke_agent weather_agent"]
    made_by = {"spanfold" if s.instrumentation_scope.name.startswith("spanfold") else "semantic_kernel" for s in runs}
    assert len(runs) == 1 and made_by == {"spanfold" if diagnostics == "spanfolds" else "semantic_kernel"}


def test_get_response_is_one_run_named_after_the_agent(traced: Traced, global_spans: Any, diagnostics: str) -> None:
    with MockLLMServer(WEATHER.replies) as server:
        response = asyncio.run(agent(server).get_response(messages=WEATHER.question))
    assert str(response.content) == ANSWER
    assert_weather_run(traced, global_spans, diagnostics)


def test_invoke_is_the_same_run(traced: Traced, global_spans: Any, diagnostics: str) -> None:
    async def invoked(server: MockLLMServer) -> list[str]:
        return [str(item.content) async for item in agent(server).invoke(messages=WEATHER.question)]

    with MockLLMServer(WEATHER.replies) as server:
        assert asyncio.run(invoked(server))[-1] == ANSWER
    assert_weather_run(traced, global_spans, diagnostics)


def test_invoke_stream_is_the_same_run(traced: Traced, global_spans: Any, diagnostics: str) -> None:
    async def streamed(server: MockLLMServer) -> str:
        return "".join([str(item.content) async for item in agent(server).invoke_stream(messages=WEATHER.question)])

    with MockLLMServer(WEATHER.replies) as server:
        assert asyncio.run(streamed(server)) == ANSWER
        assert all(r.body.get("stream") is True for r in server.requests)
    assert_weather_run(traced, global_spans, diagnostics)


class TestContract(Contract):
    @pytest.fixture
    def framework(self, diagnostics: str) -> Framework:
        """Its own ``invoke_agent`` span (its diagnostics on) nests in the application's run."""

        async def run(server: MockLLMServer) -> Any:
            return await agent(server).get_response(messages=WEATHER.question)

        nested = ("invoke_agent weather_agent",) if diagnostics == "own_spans" else ()
        return Framework(run, events_are(WEATHER_RUN), WEATHER.replies, nested)


def test_with_content_capture_off_the_run_keeps_its_roles_tools_and_ids(traced_off: Traced, diagnostics: str) -> None:
    with MockLLMServer(WEATHER.replies) as server:
        asyncio.run(agent(server).get_response(messages=WEATHER.question))
    events = traced_off.one()
    shape = [(e["role"], e.get("tool_call_id")) for e in events]
    assert shape == [(e["role"], e.get("tool_call_id")) for e in WEATHER_RUN]
    assert not any(e.get("content") for e in events if e["role"] == "tool")
    assert traced_off.metas()[0]["metadata"]["name"] == "weather_agent"


def test_redaction_applies_to_every_event(tmp_path: Any, _global_provider: Any, diagnostics: str) -> None:
    with traced_into(tmp_path / "traces", redact=lambda text: text.replace("Paris", "[city]")) as traced:
        with MockLLMServer(WEATHER.replies) as server:
            asyncio.run(agent(server).get_response(messages=WEATHER.question))
        events = traced.one()
    assert "Paris" not in json.dumps(events, ensure_ascii=False)
    assert events[3] == {"role": "tool", "content": "[city]: 18°C, sunny", "tool_call_id": "call_mock_1"}

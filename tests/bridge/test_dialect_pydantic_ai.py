"""pydantic-ai (pydantic-ai-slim 2.68) instrumenting itself (``Instrumentation`` capability, as
``Agent.instrument_all()`` / ``instrument=True`` add it), with an OpenAI model against the mock server, read by
``exporter.dialect_pydantic_ai``: the current attribute format (5), the older one (2: ``running tool`` /
``agent run``), version 1's ``events`` attribute; and pydantic-ai's ``chat`` span beside spanfold's openai patch
span of the same call: one model step, its tokens counted once."""

from __future__ import annotations

import asyncio
import contextlib
import json
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from spanfold import counters
from spanfold.exporter.dialects import pydantic_ai as dialect
from spanfold.exporter.records import SpanRecord
from spanfold.testing import WEATHER, scenarios
from spanfold.testing.agents import PROVIDERS

from .frameworks import folded, invariant, openai_patch, patch_kwargs, renumbered
from .producers import Harness, Run, instrumented
from .test_producers_equivalence import ANSWER, expected

pytest.importorskip("pydantic_ai")


@pytest.fixture
def harness(_global_provider: Any, _global_exporter: Any) -> Iterator[Harness]:
    yield Harness(_global_provider, _global_exporter)


def run_agent(
    run: Run, provider: Any, *, version: int | None = 5, name: str = "weather-bot", stream: bool = False
) -> str:
    """The weather agent in pydantic-ai; ``version``: its instrumentation format (None: not instrumented)."""
    from pydantic_ai import Agent
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(
        PROVIDERS["openai"].model, provider=OpenAIProvider(base_url=run.server.base_url, api_key="sk-test")
    )
    capabilities: list[Any] = []
    if version is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # versions before 5 are deprecated (and still what older releases write)
            settings = InstrumentationSettings(tracer_provider=provider, version=version, include_content=True)  # type: ignore[arg-type]
        capabilities.append(Instrumentation(settings=settings))
    agent = Agent(model, system_prompt=WEATHER.system, name=name, capabilities=capabilities)
    agent.tool_plain(scenarios.get_weather)
    agent.tool_plain(scenarios.convert_temperature)
    if stream:  # each model call streamed (the mock server answers in SSE chunks), the run as an async stream

        async def streamed() -> str:
            async with agent.run_stream(WEATHER.question) as result:
                return str(await result.get_output())

        return asyncio.run(streamed())
    return str(agent.run_sync(WEATHER.question).output)


def test_provider_only_is_the_reference(harness: Harness) -> None:
    """spanfold's openai patch alone under pydantic-ai: the flat trace every dialect must reproduce."""
    with instrumented(openai_patch(), **patch_kwargs(harness.provider)), harness.run() as run:
        run.answer = run_agent(run, harness.provider, version=None)
    assert run.answer == ANSWER
    assert invariant(run.fold()) == expected("call_mock_")
    assert run.fold().meta.usage.input_tokens == 58 + 164 + 228


@pytest.mark.parametrize("version", [5, 2])
def test_framework_only(harness: Harness, version: int) -> None:
    with harness.run() as run:
        run.answer = run_agent(run, harness.provider, version=version)
    names = sorted({s.name for s in run.spans})
    tool_span, agent_span = ("execute_tool get_weather", "invoke_agent weather-bot")
    if version == 2:
        tool_span, agent_span = ("running tool", "agent run")
    assert tool_span in names and agent_span in names, names
    trace = run.fold()
    assert invariant(trace) == expected("call_mock_")
    assert trace.meta.name == "weather-bot"  # the agent's name from its agent span
    assert trace.meta.usage.input_tokens == 58 + 164 + 228
    tools = [e for e in trace.events if e.role == "tool"]
    assert all(e.metadata.get("agent") == "weather-bot" for e in tools)


@pytest.mark.parametrize("both", [False, True], ids=["framework-only", "with-openai-patch"])
def test_streamed_run(harness: Harness, both: bool) -> None:
    """``run_stream``: pydantic-ai's spans of a run whose model calls stream fold to the same trajectory, with and
    without spanfold's openai patch span inside each of its ``chat`` spans."""
    patch = instrumented(openai_patch(), **patch_kwargs(harness.provider)) if both else contextlib.nullcontext()
    with patch, harness.run() as run:
        run.answer = run_agent(run, harness.provider, stream=True)
    assert run.answer == ANSWER
    assert [r.stream for r in run.server.requests] == [True, True, True]  # every call streamed
    trace = run.fold()
    assert invariant(trace) == expected("call_mock_")
    assert trace.meta.name == "weather-bot"
    assert trace.meta.usage.input_tokens == 58 + 164 + 228


def test_both_one_model_step_tokens_once(harness: Harness) -> None:
    """pydantic-ai's ``chat`` span holds spanfold's patch span of the same call: one step, the provider's."""
    with instrumented(openai_patch(), **patch_kwargs(harness.provider)), harness.run() as run:
        run.answer = run_agent(run, harness.provider)
    chats = [s for s in run.spans if s.name.startswith("chat ")]
    assert len(chats) == 6
    scopes = {s.instrumentation_scope.name for s in chats if s.instrumentation_scope is not None}
    assert scopes == {"pydantic-ai", "spanfold.instrumentation.openai"}
    trace = run.fold()
    assert invariant(trace) == expected("call_mock_")
    assert trace.meta.usage.input_tokens == 58 + 164 + 228
    assert trace.meta.usage.output_tokens == 14 + 13 + 24
    assert counters.snapshot().get("fold.duplicate_model_steps") == 3
    provider_ids = {format(s.context.span_id, "016x") for s in chats if s.instrumentation_scope.name != "pydantic-ai"}
    steps = [e for e in trace.events if e.role == "assistant"]
    assert {e.metadata["span_id"] for e in steps} <= provider_ids  # the provider span is the one kept


def test_tool_error_is_the_tool_result(harness: Harness) -> None:
    """A tool that raises: pydantic-ai's tool span records the error, the model gets it and goes on."""
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    with harness.run() as run:
        model = OpenAIChatModel(
            PROVIDERS["openai"].model, provider=OpenAIProvider(base_url=run.server.base_url, api_key="sk-test")
        )
        settings = InstrumentationSettings(tracer_provider=harness.provider, include_content=True)
        agent = Agent(model, system_prompt=WEATHER.system, capabilities=[Instrumentation(settings=settings)], retries=3)
        failed: list[str] = []

        @agent.tool_plain
        def get_weather(city: str) -> str:
            if city == "Tokyo" and not failed:
                failed.append(city)
                raise ModelRetry("weather service down")
            return scenarios.get_weather(city)

        agent.tool_plain(scenarios.convert_temperature)
        agent.run_sync(WEATHER.question)
    events = invariant(run.fold())
    assert events[3] == {"role": "tool", "content": "Paris: 18°C, sunny", "tool_call_id": "call_mock_1"}
    assert events[4]["tool_call_id"] == "call_mock_2" and "weather service down" in json.dumps(events[4])


def test_version_1_events_attribute() -> None:
    """Instrumentation version 1 (``event_mode="attributes"``, older pydantic-ai releases; shaped from its source:
    ``InstrumentationSettings.handle_messages`` / ``event_to_dict``): the ``events`` attribute is read."""
    events = [
        {"content": WEATHER.system, "role": "system", "event.name": "gen_ai.system.message"},
        {"content": WEATHER.question, "role": "user", "gen_ai.message.index": 0, "event.name": "gen_ai.user.message"},
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            },
            "event.name": "gen_ai.choice",
        },
    ]
    record = SpanRecord(
        trace_id=1,
        span_id=2,
        parent_id=None,
        name="chat gpt-4o",
        start_ns=1,
        end_ns=2,
        attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "events": json.dumps(events)},
        scope_name="pydantic-ai",
    )
    rewritten = dialect.rewrite(record)
    assert rewritten is not None
    assert json.loads(rewritten[1]["gen_ai.input.messages"]) == [
        {"role": "system", "parts": [{"type": "text", "content": WEATHER.system}]},
        {"role": "user", "parts": [{"type": "text", "content": WEATHER.question}]},
    ]
    assert invariant(folded([record]))[-1]["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": {"city": "Paris"},
    }


def test_other_scopes_untouched() -> None:
    record = SpanRecord(1, 2, None, "running tool", 1, 2, {"tool_arguments": "{}"}, scope_name="my-app")
    assert dialect.rewrite(record) is None


def test_into_spanfolds_processor() -> None:
    """pydantic-ai exporting into spanfold's ``FoldingSpanProcessor`` (its own TracerProvider), with spanfold's openai
    patch on the same provider: one trace per run, written as the fold gives it, named after the agent."""
    from opentelemetry.sdk.trace import TracerProvider

    from spanfold import config
    from spanfold.exporter.files.writers import MemoryWriter
    from spanfold.exporter.pipeline.processor import FoldingSpanProcessor
    from spanfold.testing import MockLLMServer

    writer = MemoryWriter()
    processor = FoldingSpanProcessor([writer], config.load({"trace_timeout": 3600.0}))
    provider = TracerProvider()
    provider.add_span_processor(processor)
    try:
        with instrumented(openai_patch(), **patch_kwargs(provider)), MockLLMServer(scenarios.weather_agent) as server:
            for _ in range(2):
                run_agent(Run(spans=[], answer="", server=server), provider)
        processor.force_flush()
    finally:
        provider.shutdown()
    assert len(writer.traces) == 2  # one trace per run
    for trace in writer.traces:
        assert trace.meta.name == "weather-bot"
        assert (trace.meta.usage.input_tokens, trace.meta.usage.output_tokens) == (58 + 164 + 228, 14 + 13 + 24)
        assert renumbered(invariant(trace), "call_mock_") == expected("call_mock_")  # the 2nd run: ids 4-6

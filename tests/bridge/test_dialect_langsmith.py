"""LangSmith's OpenTelemetry export (langsmith 0.15, ``tracing_mode="otel"``, what ``LANGSMITH_OTEL_ENABLED=true`` +
``LANGSMITH_OTEL_ONLY=true`` select): a ``@traceable`` weather agent with a ``wrap_openai`` client and
``@traceable(run_type="tool")`` tools against the mock server, nothing sent to LangSmith; its spans
(``gen_ai.prompt`` / ``gen_ai.completion`` JSON, ``langsmith.*``) read by ``exporter.dialect_langsmith``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from opentelemetry import context

from spanfold.exporter.dialects import langsmith as dialect
from spanfold.exporter.records import from_readable
from spanfold.testing import WEATHER, scenarios
from spanfold.testing.agents import PROVIDERS

from .frameworks import folded, invariant, openai_patch, patch_kwargs
from .producers import Harness, Run, instrumented
from .test_producers_equivalence import ANSWER, expected

pytest.importorskip("langsmith")


@pytest.fixture
def harness(_global_provider: Any, _global_exporter: Any) -> Iterator[Harness]:
    yield Harness(_global_provider, _global_exporter)


def run_agent(run: Run, *, fail_tokyo: bool = False) -> str:
    import langsmith
    from langsmith.wrappers import wrap_openai

    client = langsmith.Client(api_key="lsv2-test", api_url="http://127.0.0.1:9", tracing_mode="otel", info={})

    @langsmith.traceable(run_type="tool", name="get_weather")
    def get_weather(city: str) -> str:
        if fail_tokyo and city == "Tokyo":
            raise RuntimeError("weather service down")
        return scenarios.get_weather(city)

    tools = {
        "get_weather": get_weather,
        "convert_temperature": langsmith.traceable(run_type="tool")(scenarios.convert_temperature),
    }

    @langsmith.traceable(run_type="chain", name="weather-bot")
    def agent(llm: Any) -> str:
        messages: list[Any] = [
            {"role": "system", "content": WEATHER.system},
            {"role": "user", "content": WEATHER.question},
        ]
        for _ in range(6):
            request = {
                "model": PROVIDERS["openai"].model,
                "messages": messages,
                "tools": scenarios.WEATHER_TOOLS_OPENAI,
            }
            message = llm.chat.completions.create(**request).choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return str(message.content)
            for call in message.tool_calls:
                try:
                    result = tools[call.function.name](**json.loads(call.function.arguments))
                except RuntimeError as exc:
                    result = f"error: {exc}"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        raise AssertionError("the agent did not finish")

    llm = wrap_openai(openai.OpenAI(api_key="sk-test", base_url=run.server.base_url, max_retries=0))
    token = context.attach(context.Context())  # the agent's run is the root of its trace, as in an app
    try:
        with langsmith.tracing_context(enabled=True, client=client):
            answer = agent(llm)
    finally:
        context.detach(token)
    client.flush()
    return answer


def test_framework_only(harness: Harness) -> None:
    with harness.run() as run:
        run.answer = run_agent(run)
    assert run.answer == ANSWER
    llm = next(s for s in run.spans if (s.attributes or {}).get("langsmith.span.kind") == "llm")
    assert json.loads((llm.attributes or {})["gen_ai.prompt"])["messages"][0]["role"] == "system"
    trace = run.fold()
    assert invariant(trace) == expected("call_mock_")
    assert trace.meta.name == "weather-bot"  # the root chain run is the agent
    assert trace.meta.usage.input_tokens == sum(llm_tokens(run))


def llm_tokens(run: Run) -> list[int]:
    return [int((s.attributes or {}).get("gen_ai.usage.input_tokens", 0)) for s in run.named("ChatOpenAI")]


def test_beside_the_patch_two_traces(harness: Harness) -> None:
    """LangSmith's exporter gives its spans ids of its own (made from its run ids, after the run), so spanfold's
    patch spans of the same calls land in another trace: each folds to the whole flat trace, neither twice."""
    with instrumented(openai_patch(), **patch_kwargs(harness.provider)), harness.run() as run:
        run.answer = run_agent(run)
    by_trace: dict[int, list[Any]] = {}
    for span in run.spans:
        by_trace.setdefault(span.context.trace_id, []).append(span)
    langsmith_spans = [s for s in run.spans if s.instrumentation_scope.name == "langsmith"]
    ours = by_trace[langsmith_spans[0].context.trace_id]
    assert {s.instrumentation_scope.name for s in ours} == {"langsmith"}
    assert invariant(folded(ours)) == expected("call_mock_")
    patch = [s for s in run.spans if s.name.startswith("chat ")]
    assert len(patch) == 3 and invariant(folded(patch)) == expected("call_mock_")


def test_tool_error(harness: Harness) -> None:
    with harness.run() as run:
        run_agent(run, fail_tokyo=True)
    tool = next(
        s
        for s in run.spans
        if (s.attributes or {}).get("gen_ai.tool.name") == "get_weather" and s.status.status_code.name == "ERROR"
    )
    name, _ = dialect.rewrite(from_readable(tool)) or ("", {})
    assert name == "execute_tool get_weather"
    events = invariant(run.fold())
    assert events[4]["tool_call_id"] == "call_mock_2" and "weather service down" in str(events[4]["content"])


def test_langchain_chat_model_and_tools(harness: Harness) -> None:
    """A LangChain agent loop (langchain-openai ``ChatOpenAI.bind_tools``, ``@tool`` tools) traced by LangSmith's
    OTel export: serialised LangChain messages in, ``generations`` out, ``ToolMessage`` results."""
    pytest.importorskip("langchain_openai")
    import langsmith
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    tools = {"get_weather": tool(scenarios.get_weather), "convert_temperature": tool(scenarios.convert_temperature)}
    with harness.run() as run:
        client = langsmith.Client(api_key="lsv2-test", api_url="http://127.0.0.1:9", tracing_mode="otel", info={})
        llm = ChatOpenAI(
            model=PROVIDERS["openai"].model, api_key="sk-test", base_url=run.server.base_url, max_retries=0
        )
        bound = llm.bind_tools(list(tools.values()))

        @langsmith.traceable(run_type="chain", name="weather-bot")
        def agent() -> str:
            messages: list[Any] = [SystemMessage(WEATHER.system), HumanMessage(WEATHER.question)]
            for _ in range(6):
                message = bound.invoke(messages)
                messages.append(message)
                if not message.tool_calls:
                    return str(message.content)
                messages.extend(tools[call["name"]].invoke(call) for call in message.tool_calls)
            raise AssertionError("the agent did not finish")

        token = context.attach(context.Context())
        try:
            with langsmith.tracing_context(enabled=True, client=client):
                run.answer = agent()
        finally:
            context.detach(token)
        client.flush()
    assert run.answer == ANSWER
    prompt = json.loads((run.named("ChatOpenAI")[0].attributes or {})["gen_ai.prompt"])
    assert prompt["messages"][0][0]["lc"] == 1  # serialised LangChain messages
    trace = run.fold()
    assert invariant(trace) == expected("call_mock_")
    assert trace.meta.name == "weather-bot"

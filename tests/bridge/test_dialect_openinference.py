"""OpenInference (``openinference-instrumentation-openai`` 0.1.66, ``OITracer`` decorators of
``openinference-instrumentation`` 0.1.72) on the real SDK against the mock server, read by
``exporter.dialect_openinference``: ``llm.input_messages.N.*`` / ``llm.output_messages.N.*`` with tool calls and
multi-part contents, TOOL spans (results, errors, hidden values), AGENT spans as threads, ``session.id``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from spanfold import counters
from spanfold.exporter.dialects import openinference as dialect
from spanfold.exporter.records import from_readable
from spanfold.testing import Reply, ToolCallSpec
from spanfold.testing.agents import PROVIDERS

from .producers import Harness, Run, chat_agent, instrumented, openinference_tools, plain_tool, run_openinference
from .test_producers_equivalence import ANSWER, QUESTION, SECOND_CALL_INPUT, SECOND_CALL_OUTPUT, SYSTEM, expected


@pytest.fixture
def harness(_global_provider: Any, _global_exporter: Any) -> Iterator[Harness]:
    yield Harness(_global_provider, _global_exporter)


def instrumentor() -> Any:
    from openinference.instrumentation.openai import OpenAIInstrumentor

    return OpenAIInstrumentor()


def test_llm_span_is_rewritten(harness: Harness) -> None:
    from openinference.instrumentation import using_session

    with instrumented(instrumentor(), tracer_provider=harness.provider), harness.run() as run, using_session("s-42"):
        run.answer = chat_agent(run.openai_client(), plain_tool, run.history)
    llms = run.named("ChatCompletion")
    assert len(llms) == 3
    raw = llms[1].attributes or {}
    assert raw["openinference.span.kind"] == "LLM"
    assert raw["llm.input_messages.3.message.tool_call_id"] == "call_mock_1"

    name, attrs = dialect.rewrite(from_readable(llms[1]))
    assert name == "chat gpt-4o-mini"
    assert json.loads(attrs["gen_ai.input.messages"]) == SECOND_CALL_INPUT
    assert json.loads(attrs["gen_ai.output.messages"]) == SECOND_CALL_OUTPUT
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == raw["llm.model_name"]
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.usage.input_tokens"] == raw["llm.token_count.prompt"]
    assert attrs["gen_ai.usage.output_tokens"] == raw["llm.token_count.completion"]
    assert attrs["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert attrs["gen_ai.conversation.id"] == "s-42"
    assert run.invariant() == expected("call_mock_")


def test_multipart_contents(harness: Harness) -> None:
    with instrumented(instrumentor(), tracer_provider=harness.provider), harness.run() as run:
        run.server.script(Reply.text("A cat on a mat."))
        content = [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
        ]
        run.openai_client().chat.completions.create(
            model=PROVIDERS["openai"].model, messages=[{"role": "user", "content": content}]
        )
    (llm,) = run.named("ChatCompletion")
    assert (llm.attributes or {})["llm.input_messages.0.message.contents.1.message_content.type"] == "image"
    assert run.invariant() == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image", "image_url": "https://example.com/cat.png"},
            ],
        },
        {"role": "assistant", "content": "A cat on a mat."},
    ]


def catching(run_tool: Callable[[str, str, str], str]) -> Callable[[str, str, str], str]:
    def run(name: str, arguments: str, call_id: str) -> str:
        try:
            return run_tool(name, arguments, call_id)
        except Exception as exc:  # the model sees the error, as agents do
            return f"error: {type(exc).__name__}: {exc}"

    return run


def agent_run(harness: Harness, script: list[Reply]) -> Run:
    """One agent step of OpenInference's own ``OITracer.agent`` around the loop, with its ``tool`` spans."""
    from openinference.instrumentation import OITracer, TraceConfig

    with instrumented(instrumentor(), tracer_provider=harness.provider), harness.run() as run:
        run.server.script(*script)
        tracer = OITracer(harness.provider.get_tracer("weather-agent"), config=TraceConfig())
        tools = catching(openinference_tools(harness.provider))
        agent = tracer.agent(name="weather-bot")(lambda: chat_agent(run.openai_client(), tools, run.history))
        run.answer = agent()
    return run


def test_agent_and_tool_spans(harness: Harness) -> None:
    run = agent_run(
        harness,
        [
            Reply.tools([ToolCallSpec("convert_temperature", {"celsius": 18, "to": "rankine"})]),
            Reply.text("I cannot convert to rankine."),
        ],
    )
    (agent,) = run.named("weather-bot")
    (tool,) = run.named("convert_temperature")
    assert dialect.rewrite(from_readable(agent))[0] == "invoke_agent weather-bot"
    name, attrs = dialect.rewrite(from_readable(tool))
    assert name == "execute_tool convert_temperature"
    assert json.loads(attrs["gen_ai.tool.call.arguments"]) == {"celsius": 18, "to": "rankine"}

    trace = run.fold()
    assert trace.meta.name == "weather-bot"
    events = trace.events
    assert [e.to_invariant() for e in events] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_mock_1",
                    "type": "function",
                    "function": {"name": "convert_temperature", "arguments": {"celsius": 18, "to": "rankine"}},
                }
            ],
        },
        {
            "role": "tool",
            "content": "unknown temperature unit 'rankine'",
            "tool_call_id": "call_mock_1",
            "error": {"type": "ValueError", "message": "unknown temperature unit 'rankine'"},
        },
        {"role": "assistant", "content": "I cannot convert to rankine."},
    ]
    assert {e.metadata.get("agent") for e in events} == {"weather-bot"}
    assert events[3].metadata["span_id"] == format(tool.context.span_id, "016x")  # from the TOOL span


def test_hidden_inputs_and_outputs_keep_models_and_usage(harness: Harness) -> None:
    from openinference.instrumentation import TraceConfig

    hidden = TraceConfig(hide_inputs=True, hide_outputs=True)
    with instrumented(instrumentor(), tracer_provider=harness.provider, config=hidden), harness.run() as run:
        tools = openinference_tools(harness.provider, config=hidden)
        run.answer = chat_agent(run.openai_client(), tools, run.history)
    assert run.answer == ANSWER
    tool_spans = run.named("get_weather")
    assert (tool_spans[0].attributes or {})["input.value"] == dialect.REDACTED
    _, attrs = dialect.rewrite(from_readable(tool_spans[0]))
    assert "gen_ai.tool.call.arguments" not in attrs
    assert "gen_ai.tool.call.result" not in attrs
    trace = run.fold()
    assert [(e.role, e.content, e.name) for e in trace.events] == [
        ("tool", None, "get_weather"),
        ("tool", None, "get_weather"),
        ("tool", None, "convert_temperature"),
    ]
    assert trace.meta.models == [PROVIDERS["openai"].model]
    assert trace.meta.usage.output_tokens == sum(s.attributes["llm.token_count.completion"] for s in run.named("Chat"))


def test_chain_and_other_kinds_are_not_steps(harness: Harness) -> None:
    from openinference.instrumentation import OITracer, TraceConfig

    run = run_openinference(harness)
    assert run.invariant() == expected("call_mock_")
    with harness.run() as chained:
        tracer = OITracer(harness.provider.get_tracer("weather-agent"), config=TraceConfig())
        tracer.chain(lambda q: q.upper())("hi")
    (chain,) = chained.named("<lambda>")
    assert (chain.attributes or {})["openinference.span.kind"] == "CHAIN"
    assert dialect.rewrite(from_readable(chain)) is None


def test_messages_lost_to_the_attribute_limit_are_counted(harness: Harness) -> None:
    """Flattened messages of a long history overflow the SDK's attribute count limit (128 by default), which drops
    the oldest attributes: the fold keeps what is left and counts what is missing."""
    from opentelemetry.sdk.trace import SpanLimits

    limit = SpanLimits().max_span_attributes  # the limit in force (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT, else 128)
    assert limit is not None
    turns = [f"turn {i}: " + "words " * 10 for i in range(limit)]
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(turns)]
    with instrumented(instrumentor(), tracer_provider=harness.provider), harness.run() as run:
        run.server.script(Reply.text("Done."))
        run.openai_client().chat.completions.create(model=PROVIDERS["openai"].model, messages=messages)
    (llm,) = run.named("ChatCompletion")
    raw = llm.attributes or {}
    assert len(raw) == limit
    assert "llm.input_messages.0.message.content" not in raw
    events = run.invariant()
    assert events[-1] == {"role": "assistant", "content": "Done."}
    assert events[-2] == {"role": messages[-1]["role"], "content": turns[-1]}
    assert 0 < len(events) - 1 < len(turns)
    assert counters.snapshot()["dialect_messages_missing"] == len(turns) - (len(events) - 1)

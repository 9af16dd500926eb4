"""The frameworks' tool-run handler (``toolkit/tool_runs``): what every framework's tool run gets from it alike. The
frameworks' own tests assert their traces event by event; these pin the handler's contract where a framework rarely
goes: a reader that raises, a result that cannot be read, an error result, an exception, capture off, an async run,
a ``@spanfold.tool`` function the run calls."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import trace as otel_trace
from opentelemetry.trace import StatusCode

import spanfold
from spanfold import counters
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.invocations import tool_runs
from spanfold.instrumentation.invocations.tool_runs import Answered, ToolRun

ON, OFF = Runtime(capture_content=True), Runtime(capture_content=False)


def tracer() -> Any:
    return otel_trace.get_tracer("spanfold.test")


def weather(city: str) -> str:
    return f"Sunny in {city}"


def test_a_run_gets_one_span_current_while_it_runs(global_spans: Any) -> None:
    seen: list[Any] = []

    def call() -> str:
        seen.append(otel_trace.get_current_span())
        return weather("Paris")

    read = lambda: ToolRun("get_weather", call_id="call_1", arguments={"city": "Paris"}, description="Weather.\nMore.")  # noqa: E731
    assert tool_runs.run(tracer(), ON, "fw", read, call) == "Sunny in Paris"
    (span,) = global_spans.get_finished_spans()
    assert [s.get_span_context().span_id for s in seen] == [span.context.span_id]
    attrs = dict(span.attributes or {})
    assert span.name == "execute_tool get_weather"
    assert attrs["gen_ai.tool.call.id"] == "call_1"
    assert attrs["gen_ai.tool.call.arguments"] == '{"city":"Paris"}'
    assert attrs["gen_ai.tool.call.result"] == "Sunny in Paris"
    assert attrs["gen_ai.tool.description"] == "Weather."


def test_capture_off_records_no_arguments_nor_result(global_spans: Any) -> None:
    read = lambda: ToolRun("get_weather", arguments={"city": "Paris"}, arguments_text='{"city": "Paris"}')  # noqa: E731
    tool_runs.run(tracer(), OFF, "fw", read, lambda: "x")
    attrs = dict(global_spans.get_finished_spans()[0].attributes or {})
    assert "gen_ai.tool.call.arguments" not in attrs and "gen_ai.tool.call.result" not in attrs


def test_a_reader_that_raises_costs_the_span_never_the_call(global_spans: Any) -> None:
    def read() -> ToolRun:
        raise KeyError("tool_name")

    assert tool_runs.run(tracer(), ON, "fw", read, lambda: 42) == 42
    assert global_spans.get_finished_spans() == ()
    assert counters.snapshot()["fault.fw.tool_start"] == 1


def test_an_error_result_and_an_unreadable_one(global_spans: Any) -> None:
    read = lambda: ToolRun("t")  # noqa: E731
    tool_runs.run(tracer(), ON, "fw", read, lambda: "boom", lambda r: Answered(f"Error: {r}", failed=True))
    tool_runs.run(tracer(), ON, "fw", read, lambda: "ok", lambda r: r["missing"])
    failed, unread = global_spans.get_finished_spans()
    assert failed.status.status_code is StatusCode.ERROR
    assert dict(failed.attributes or {})["error.type"] == "tool_error"
    assert dict(failed.attributes or {})["gen_ai.tool.call.result"] == "Error: boom"
    assert unread.status.status_code is not StatusCode.ERROR
    assert counters.snapshot()["fault.fw.tool_result"] == 1


def test_an_exception_is_recorded_and_raised_unchanged(global_spans: Any) -> None:
    error = ValueError("no such city")

    def call() -> str:
        raise error

    with pytest.raises(ValueError) as raised:
        tool_runs.run(tracer(), ON, "fw", lambda: ToolRun("t"), call)
    assert raised.value is error
    (span,) = global_spans.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR and dict(span.attributes or {})["error.type"] == "ValueError"


async def test_async_and_a_spanfold_tool_it_calls_makes_no_second_span(global_spans: Any) -> None:
    @spanfold.tool
    def lookup(city: str) -> str:
        return weather(city)

    async def call() -> str:
        return lookup("Oslo")

    read = lambda: ToolRun("lookup", arguments={"city": "Oslo"}, functions=(lookup,))  # noqa: E731
    assert await tool_runs.arun(tracer(), ON, "fw", read, call) == "Sunny in Oslo"
    (span,) = global_spans.get_finished_spans()
    assert span.name == "execute_tool lookup"

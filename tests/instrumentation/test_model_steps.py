"""The frameworks' model-step handler (``toolkit/model_steps``): what smolagents' and DSPy's model steps get from it
alike. Their own tests assert traces event by event; these pin the handler's contract: the span current while the
call runs and the client calls inside it claimed, a reader or an answer reader that raises, an exception, a step
held open past its call and settled with what the framework parsed, an async call, a stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace as otel_trace
from opentelemetry.trace import StatusCode

from spanfold import counters
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.invocations import model_steps
from spanfold.instrumentation.invocations.model_steps import ModelStep, StepSpan
from spanfold.instrumentation.toolkit import calls
from spanfold.instrumentation.toolkit.invocation import Request, Response, Usage
from spanfold.semconv import parts as p

ON = Runtime(capture_content=True)


def tracer() -> Any:
    return otel_trace.get_tracer("spanfold.test")


def read() -> ModelStep:
    question = p.message("user", [p.text("Weather in Paris?")])
    return ModelStep(Request(model="m-1", messages=[question]), "openai")


def answer(text: str) -> Response:
    message = p.message("assistant", [p.text(text)])
    return Response(id="r-1", model="m-1", finish_reasons=["stop"], messages=[message], usage=Usage(3, 2))


def outputs(span: Any) -> Any:
    return json.loads(dict(span.attributes)["gen_ai.output.messages"])


def test_a_step_is_current_and_claims_the_client_calls_inside(global_spans: Any) -> None:
    seen: list[Any] = []

    def call() -> str:
        seen.append((otel_trace.get_current_span(), calls._CURRENT.get()))
        return "Sunny"

    assert model_steps.run(tracer(), ON, "fw", read, call, answer) == "Sunny"
    (span,) = global_spans.get_finished_spans()
    current, claimed = seen[0]
    assert current.get_span_context().span_id == span.context.span_id
    assert claimed is not None and claimed[1].span is current  # the provider wrappers make no span inside
    assert calls._CURRENT.get() is None  # released after the call
    attrs = dict(span.attributes or {})
    assert span.name == "chat m-1" and attrs["gen_ai.response.id"] == "r-1"
    assert attrs["gen_ai.usage.input_tokens"] == 3
    assert outputs(span)[0]["parts"] == [{"type": "text", "content": "Sunny"}]


def test_a_reader_that_raises_costs_the_span_never_the_call(global_spans: Any) -> None:
    def broken() -> ModelStep:
        raise KeyError("messages")

    before = counters.snapshot().get("fault.fw.model_start", 0)
    assert model_steps.run(tracer(), ON, "fw", broken, lambda: "Sunny", answer) == "Sunny"
    assert global_spans.get_finished_spans() == ()
    assert counters.snapshot()["fault.fw.model_start"] == before + 1


def test_an_answer_that_cannot_be_read_still_ends_the_step(global_spans: Any) -> None:
    def unreadable(result: Any) -> Response:
        raise TypeError("no choices")

    before = counters.snapshot().get("fault.fw.model_result", 0)
    assert model_steps.run(tracer(), ON, "fw", read, lambda: "Sunny", unreadable) == "Sunny"
    assert counters.snapshot()["fault.fw.model_result"] == before + 1
    (span,) = global_spans.get_finished_spans()
    assert span.status.status_code is not StatusCode.ERROR and "gen_ai.output.messages" not in dict(span.attributes)


def test_an_exception_is_recorded_and_raised_unchanged(global_spans: Any) -> None:
    error = ConnectionError("refused")

    def call() -> str:
        raise error

    with pytest.raises(ConnectionError) as raised:
        model_steps.run(tracer(), ON, "fw", read, call, answer)
    assert raised.value is error
    (span,) = global_spans.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes)["error.type"] == "ConnectionError"


def test_a_held_step_ends_when_the_framework_settles_it_with_what_it_parsed(global_spans: Any) -> None:
    held: list[StepSpan] = []

    def hold(span: StepSpan) -> bool:
        held.append(span)
        return True

    model_steps.run(tracer(), ON, "fw", read, lambda: "Thought: look it up", answer, hold)
    assert global_spans.get_finished_spans() == ()  # open until parsed
    parsed = p.message("assistant", [p.tool_call("call_0", "get_weather", {"city": "Paris"})])
    held[0].settle(parsed)
    held[0].settle(None)  # exactly once
    (span,) = global_spans.get_finished_spans()
    assert outputs(span)[0]["parts"] == [
        {"type": "tool_call", "id": "call_0", "name": "get_weather", "arguments": {"city": "Paris"}}
    ]


def test_a_step_not_held_ends_at_once(global_spans: Any) -> None:
    model_steps.run(tracer(), ON, "fw", read, lambda: "Sunny", answer, lambda span: False)
    assert len(global_spans.get_finished_spans()) == 1


def test_an_async_call(global_spans: Any) -> None:
    async def call() -> str:
        await asyncio.sleep(0)
        return "Sunny"

    assert asyncio.run(model_steps.arun(tracer(), ON, "fw", read, call, answer)) == "Sunny"
    (span,) = global_spans.get_finished_spans()
    assert outputs(span)[0]["parts"] == [{"type": "text", "content": "Sunny"}]


class Joined:
    def __init__(self) -> None:
        self.text: list[str] = []

    def add(self, chunk: Any) -> None:
        self.text.append(chunk)

    def result(self) -> Response:
        return answer("".join(self.text))


def test_a_stream_gives_the_same_items_each_inside_the_step(global_spans: Any) -> None:
    inside: list[bool] = []

    def deltas() -> Iterator[str]:
        for chunk in ("Sun", "ny"):
            inside.append(calls._CURRENT.get() is not None)
            yield chunk

    items = model_steps.stream(tracer(), ON, "fw", read, deltas, lambda span: Joined())
    assert global_spans.get_finished_spans() == ()
    assert list(items) == ["Sun", "ny"] and inside == [True, True]
    (span,) = global_spans.get_finished_spans()
    assert outputs(span)[0]["parts"] == [{"type": "text", "content": "Sunny"}]

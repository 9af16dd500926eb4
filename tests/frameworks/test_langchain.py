"""LangChain tool runs as ``execute_tool`` spans: every way of running a ``BaseTool`` (invoke, ainvoke, run, arun;
``@tool`` functions and ``StructuredTool``), one span per run, the model's call id, arguments, result, errors; the
tool's own return values and exceptions untouched."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, ToolException, tool
from langgraph.errors import GraphInterrupt
from langgraph.types import Command

import spanfold
from spanfold import counters
from spanfold.content.redaction import Redaction
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks.langchain import LangChainInstrumentor
from spanfold.testing import MockLLMServer, scenarios

from ..conftest import Traced
from ..instrumentation.conftest import Spans, spans_of
from .langchain_helpers import chat_model, convert_temperature, get_weather, weather_agent


def call(name: str, args: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    """A model's tool call, as ``AIMessage.tool_calls`` holds it and ``ToolNode`` passes it."""
    return {"type": "tool_call", "name": name, "args": args, "id": call_id}


@pytest.fixture
def spans() -> Iterator[Spans]:
    with spans_of(LangChainInstrumentor()) as recorded:
        yield recorded


def tool_attrs(span: Any) -> dict[str, Any]:
    """The span's attributes but the stitching marker (tests/e2e/test_source_stitching.py checks it)."""
    return {k: v for k, v in (span.attributes or {}).items() if k != "spanfold.stitched"}


# --- every path, one span -------------------------------------------------------------------------------------------


def test_invoke_with_a_tool_call(spans: Spans) -> None:
    out = get_weather.invoke(call("get_weather", {"city": "Paris"}))
    assert isinstance(out, ToolMessage)
    assert (out.content, out.tool_call_id, out.name) == ("Paris: 18°C, sunny", "call_1", "get_weather")
    span = spans.one()
    assert span.name == "execute_tool get_weather"
    assert tool_attrs(span) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "input.value": '{"city":"Paris"}',
        "input.mime_type": "application/json",
        "output.value": "Paris: 18°C, sunny",
        "output.mime_type": "text/plain",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Get the current weather in a city.",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.call.arguments": '{"city":"Paris"}',
        "gen_ai.tool.call.result": "Paris: 18°C, sunny",
    }
    assert span.status.status_code.name == "UNSET"


def test_invoke_with_arguments_returns_the_raw_value(spans: Spans) -> None:
    assert convert_temperature.invoke({"celsius": 18, "to": "kelvin"}) == "18°C is 291.15 K"
    attrs = tool_attrs(spans.one())
    assert "gen_ai.tool.call.id" not in attrs
    assert json.loads(attrs["gen_ai.tool.call.arguments"]) == {"celsius": 18, "to": "kelvin"}
    assert attrs["gen_ai.tool.call.result"] == "18°C is 291.15 K"


def test_run_and_a_non_string_result(spans: Spans) -> None:
    @tool
    def forecast(city: str, days: int) -> dict[str, Any]:
        """Forecast."""
        return {"city": city, "days": [scenarios.get_weather(city)] * days}

    assert forecast.run({"city": "Tokyo", "days": 2}) == {"city": "Tokyo", "days": ["Tokyo: 24°C, cloudy"] * 2}
    attrs = tool_attrs(spans.one())
    assert json.loads(attrs["gen_ai.tool.call.result"]) == {"city": "Tokyo", "days": ["Tokyo: 24°C, cloudy"] * 2}


async def test_ainvoke_of_a_sync_tool_is_one_span(spans: Spans) -> None:
    """StructuredTool.ainvoke of a sync function runs ``invoke`` (so ``run``) in an executor: still one span."""
    out = await get_weather.ainvoke(call("get_weather", {"city": "Tokyo"}, "call_7"))
    assert out.content == "Tokyo: 24°C, cloudy"
    span = spans.one()
    assert tool_attrs(span)["gen_ai.tool.call.id"] == "call_7"


async def test_async_tool_ainvoke_and_arun(spans: Spans) -> None:
    @tool
    async def lookup(city: str) -> str:
        """Look a city up."""
        return scenarios.get_weather(city)

    assert (await lookup.ainvoke(call("lookup", {"city": "Paris"}, "call_a"))).content == "Paris: 18°C, sunny"
    assert await lookup.arun({"city": "Tokyo"}) == "Tokyo: 24°C, cloudy"
    first, second = spans.finished()
    assert tool_attrs(first)["gen_ai.tool.call.id"] == "call_a"
    assert tool_attrs(second)["gen_ai.tool.call.result"] == "Tokyo: 24°C, cloudy"


def test_a_tool_calling_a_tool_is_two_nested_spans(spans: Spans) -> None:
    @tool
    def report(city: str) -> str:
        """Report."""
        return "Report: " + get_weather.invoke({"city": city})

    assert report.invoke({"city": "Paris"}) == "Report: Paris: 18°C, sunny"
    inner, outer = spans.finished()
    assert (inner.name, outer.name) == ("execute_tool get_weather", "execute_tool report")
    assert inner.parent is not None and inner.parent.span_id == outer.context.span_id


# --- errors ---------------------------------------------------------------------------------------------------------


def test_an_exception_is_recorded_and_re_raised_unchanged(spans: Spans) -> None:
    boom = ValueError("no forecast for Atlantis")

    @tool
    def broken(city: str) -> str:
        """Broken."""
        raise boom

    with pytest.raises(ValueError) as info:
        broken.invoke(call("broken", {"city": "Atlantis"}))
    assert info.value is boom
    span = spans.one()
    assert span.status.status_code.name == "ERROR"
    assert tool_attrs(span)["error.type"] == "ValueError"
    assert "gen_ai.tool.call.result" not in tool_attrs(span)
    (event,) = span.events
    assert event.attributes["exception.message"] == "no forecast for Atlantis"


def test_a_handled_tool_exception_is_an_error_result(spans: Spans) -> None:
    def lookup(city: str) -> str:
        """Look up."""
        raise ToolException(f"unknown city {city}")

    handled = StructuredTool.from_function(lookup, handle_tool_error=True)
    out = handled.invoke(call("lookup", {"city": "Atlantis"}))
    assert (out.content, out.status) == ("unknown city Atlantis", "error")
    span = spans.one()
    assert span.status.status_code.name == "ERROR"
    assert span.status.description == "unknown city Atlantis"
    assert tool_attrs(span)["error.type"] == "tool_error"
    assert tool_attrs(span)["gen_ai.tool.call.result"] == "unknown city Atlantis"

    unhandled = StructuredTool.from_function(lookup)
    with pytest.raises(ToolException):
        unhandled.invoke(call("lookup", {"city": "Atlantis"}))
    assert tool_attrs(spans.finished()[1])["error.type"] == "langchain_core.tools.base.ToolException"


def test_an_interrupt_is_control_flow_not_an_error(spans: Spans) -> None:
    @tool
    def ask_human(question: str) -> str:
        """Ask."""
        raise GraphInterrupt(())

    with pytest.raises(GraphInterrupt):
        ask_human.invoke(call("ask_human", {"question": "ok?"}))
    span = spans.one()
    assert span.status.status_code.name == "UNSET"
    assert not span.events


# --- what LangChain adds to a run: injected arguments, Command results ----------------------------------------------


def test_injected_arguments_are_left_out(spans: Spans) -> None:
    @tool
    def remember(note: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Remember a note."""
        return f"{note} ({tool_call_id})"

    assert remember.invoke(call("remember", {"note": "hi"}, "call_9")).content == "hi (call_9)"
    attrs = tool_attrs(spans.one())
    assert json.loads(attrs["gen_ai.tool.call.arguments"]) == {"note": "hi"}
    assert attrs["gen_ai.tool.call.id"] == "call_9"


def test_a_command_result_records_the_tool_message(spans: Spans) -> None:
    @tool
    def set_city(city: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Set the city."""
        return Command(
            update={"city": city, "messages": [ToolMessage(f"city set to {city}", tool_call_id=tool_call_id)]}
        )

    out = set_city.invoke(call("set_city", {"city": "Paris"}, "call_c"))
    assert isinstance(out, Command)
    assert tool_attrs(spans.one())["gen_ai.tool.call.result"] == "city set to Paris"


# --- content capture and redaction through the Runtime; faults ------------------------------------------------------


def test_capture_off_keeps_names_and_ids_only(spans: Spans) -> None:
    spans.use(Runtime(capture_content=False))

    @tool
    def broken(city: str) -> str:
        """Broken."""
        raise ValueError(f"no forecast for {city}")

    get_weather.invoke(call("get_weather", {"city": "Paris"}))
    with pytest.raises(ValueError):
        broken.invoke(call("broken", {"city": "Paris"}, "call_2"))
    ok, failed = spans.finished()
    for span in (ok, failed):
        attrs = tool_attrs(span)
        assert "gen_ai.tool.call.arguments" not in attrs and "gen_ai.tool.call.result" not in attrs
        assert "Paris" not in json.dumps(attrs) + str(span.status.description)
    assert tool_attrs(failed)["gen_ai.tool.call.id"] == "call_2"
    assert failed.events[0].attributes["exception.message"] == ""


def test_redaction_applies_to_arguments_and_results(spans: Spans) -> None:
    spans.use(Runtime(redaction=Redaction(hook=lambda text: text.replace("Paris", "[city]"), builtin=False)))
    get_weather.invoke(call("get_weather", {"city": "Paris"}))
    attrs = tool_attrs(spans.one())
    assert attrs["gen_ai.tool.call.arguments"] == '{"city":"[city]"}'
    assert attrs["gen_ai.tool.call.result"] == "[city]: 18°C, sunny"


def test_a_fault_in_spanfold_leaves_the_tool_alone(spans: Spans, monkeypatch: pytest.MonkeyPatch) -> None:
    from spanfold.instrumentation.frameworks import langchain

    def broken(*args: Any) -> Any:
        raise RuntimeError("a fault while reading the result")

    monkeypatch.setattr(langchain, "_message_of", broken)
    out = get_weather.invoke(call("get_weather", {"city": "Paris"}))
    assert isinstance(out, ToolMessage) and out.content == "Paris: 18°C, sunny"
    assert counters.snapshot()["fault.langchain.tool_result"] == 1
    span = spans.one()  # ended all the same, with the raw output
    assert span.end_time is not None


def test_a_tool_subclass_with_a_blank_description(spans: Spans) -> None:
    class Blank(BaseTool):
        name: str = "blank"
        description: str = "   "

        def _run(self, city: str) -> str:
            return scenarios.get_weather(city)

    assert Blank().invoke({"city": "Paris"}) == "Paris: 18°C, sunny"
    attrs = tool_attrs(spans.one())
    assert attrs["gen_ai.tool.name"] == "blank" and "gen_ai.tool.description" not in attrs
    assert counters.snapshot().get("faults", 0) == 0


def test_uninstrument_restores_base_tool() -> None:
    original = BaseTool.__dict__["run"], BaseTool.__dict__["arun"]
    instrumentor = LangChainInstrumentor()
    with spans_of(instrumentor):
        assert BaseTool.__dict__["run"] is not original[0]
    assert (BaseTool.__dict__["run"], BaseTool.__dict__["arun"]) == original


# --- the fold: a LangChain tool around a @spanfold.tool function is one tool step -----------------------------------


def test_a_spanfold_tool_inside_a_langchain_tool_is_one_step(traced: Traced, server: MockLLMServer) -> None:
    @spanfold.tool
    def traced_weather(city: str) -> str:
        return scenarios.get_weather(city)

    wrapped = StructuredTool.from_function(traced_weather, name="get_weather", description="Weather in a city.")
    weather_agent(server, [wrapped, convert_temperature]).invoke({"messages": [("user", "Weather?")]})
    events = traced.one()
    assert [e["role"] for e in events].count("tool") == 3
    assert traced.metas()[0]["summary"]["toolCallsByName"] == {"convert_temperature": 1, "get_weather": 2}


def test_a_bare_model_call_with_tools_bound_is_traced(traced: Traced, server: MockLLMServer) -> None:
    """No graph: ChatOpenAI bound to the tools, the caller running them: the model steps and tool runs fold into one
    trace (zero-code grouping) with the tool runs' own spans paired by id."""
    model = chat_model(server).bind_tools([get_weather, convert_temperature])
    messages: list[Any] = [("user", "Weather in Paris and Tokyo?")]
    reply = model.invoke(messages)
    messages.append(reply)
    for tool_call in reply.tool_calls:
        messages.append(get_weather.invoke(tool_call))
    model.invoke(messages)
    events = traced.one()
    assert [e["role"] for e in events] == ["user", "assistant", "tool", "tool", "assistant"]
    assert [e["tool_call_id"] for e in events if e["role"] == "tool"] == ["call_mock_1", "call_mock_2"]

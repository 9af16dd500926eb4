"""smolagents under spanfold.init(): a ``ToolCallingAgent`` and a ``CodeAgent`` on ``OpenAIModel`` against the
embedded mock server. Each run is one trace rooted at ``invoke_agent {agent name}``: its model steps (smolagents'
own, the openai patch recording nothing under them), its tool runs with the model's call ids, and ``final_answer``
last, asserted event by event; the history smolagents re-sends as ``Calling tools:`` / ``Observation:`` text is never
shown twice."""

from __future__ import annotations

import json
from typing import Any

import pytest
from smolagents import CodeAgent, OpenAIModel, ToolCallingAgent, tool
from smolagents.utils import AgentGenerationError

from spanfold.testing import MockLLMServer, Reply, ToolCallSpec, scenarios

from ..conftest import Traced
from .contract import Contract, Framework
from .helpers import folded

QUESTION = "What's the weather in Paris and Tokyo? And Paris's temperature in fahrenheit, please."
TASK = f"New task:\n{QUESTION}"
ANSWER = "Paris: 18°C, sunny; Tokyo: 24°C, cloudy; 18°C is 64.4°F."


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
        city: The city.
    """
    if city == "Atlantis":
        raise ValueError(f"no forecast for {city}")
    return scenarios.get_weather(city)


@tool
def convert_temperature(celsius: float, to: str = "fahrenheit") -> str:
    """Convert a temperature in degrees Celsius to another unit.

    Args:
        celsius: The temperature in degrees Celsius.
        to: The unit to convert to.
    """
    return scenarios.convert_temperature(celsius, to)


def weather_replies(server: MockLLMServer, *, first_city: str = "Paris") -> None:
    """Two parallel get_weather calls, a conversion, the final answer (smolagents' final_answer tool)."""
    server.script(
        Reply.tools(
            [ToolCallSpec("get_weather", {"city": first_city}), ToolCallSpec("get_weather", {"city": "Tokyo"})]
        ),
        Reply.tools([ToolCallSpec("convert_temperature", {"celsius": 18, "to": "fahrenheit"})]),
        Reply.tools([ToolCallSpec("final_answer", {"answer": ANSWER})]),
    )


def model(server: MockLLMServer) -> OpenAIModel:
    return OpenAIModel(
        model_id="gpt-4o-mini", api_base=server.base_url, api_key="sk-test", client_kwargs={"max_retries": 0}
    )


def tool_agent(server: MockLLMServer, **options: Any) -> ToolCallingAgent:
    return ToolCallingAgent(
        tools=[get_weather, convert_temperature], model=model(server), name="weather_bot", verbosity_level=0, **options
    )


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def assistant(*calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def output(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "content": content, "tool_call_id": call_id}


WEATHER_EVENTS = [
    {"role": "user", "content": TASK},
    assistant(
        call("call_mock_1", "get_weather", {"city": "Paris"}), call("call_mock_2", "get_weather", {"city": "Tokyo"})
    ),
    output("call_mock_1", "Paris: 18°C, sunny"),
    output("call_mock_2", "Tokyo: 24°C, cloudy"),
    assistant(call("call_mock_3", "convert_temperature", {"celsius": 18, "to": "fahrenheit"})),
    output("call_mock_3", "18°C is 64.4°F"),
    assistant(call("call_mock_4", "final_answer", {"answer": ANSWER})),
    output("call_mock_4", ANSWER),
]


def events_after_system(events: list[dict[str, Any]], prompt: str) -> list[dict[str, Any]]:
    """The events after the system prompt (smolagents' own, long), checked to open the trace."""
    assert events[0]["role"] == "system"
    assert events[0]["content"].startswith(prompt)
    return events[1:]


TOOL_PROMPT = "You are an expert assistant who can solve any task using tool calls."
CODE_PROMPT = "You are an expert assistant who can solve any task using code blobs."


def names(global_spans: Any) -> list[str]:
    return sorted(s.name for s in global_spans.get_finished_spans())


# --- ToolCallingAgent ----------------------------------------------------------------------------------------------


def test_a_run_is_one_flat_trace_with_its_tool_calls_and_final_answer(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer() as server:
        weather_replies(server)
        answer = tool_agent(server).run(QUESTION)
    assert answer == ANSWER
    assert events_after_system(traced.one(), TOOL_PROMPT) == WEATHER_EVENTS
    (meta,) = traced.metas()
    assert meta["metadata"]["name"] == "weather_bot"
    assert meta["metadata"]["status"] == "complete"
    # one root, three model steps (smolagents' own: the openai patch recorded none under them), four tool runs
    assert names(global_spans) == sorted(
        [
            "invoke_agent weather_bot",
            *(["chat gpt-4o-mini"] * 3),
            "execute_tool convert_temperature",
            "execute_tool final_answer",
            *(["execute_tool get_weather"] * 2),
        ]
    )
    spans = global_spans.get_finished_spans()
    (root,) = [s for s in spans if s.name.startswith("invoke_agent")]
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id for s in chats)
    assert {s.attributes["gen_ai.provider.name"] for s in chats} == {"openai"}
    assert [s.attributes["gen_ai.response.id"] for s in chats] == [f"chatcmpl-mock-{n}" for n in (1, 2, 3)]
    offered = json.loads(str(chats[0].attributes["gen_ai.tool.definitions"]))  # the required fields, by default
    assert sorted(d["name"] for d in offered) == ["convert_temperature", "final_answer", "get_weather"]
    assert all(set(d) == {"type", "name"} for d in offered)
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in spans if s.name.startswith("execute_tool")}
    assert sorted(tools) == [f"call_mock_{n}" for n in (1, 2, 3, 4)]
    assert tools["call_mock_2"].attributes["gen_ai.tool.call.arguments"] == '{"city":"Tokyo"}'
    assert tools["call_mock_4"].attributes["gen_ai.tool.call.result"] == ANSWER
    assert meta["metadata"]["usage"]["input_tokens"] > 0 and meta["metadata"]["usage"]["output_tokens"] > 0


def test_the_history_smolagents_re_sends_as_text_is_turned_back_into_calls_and_outputs(
    traced: Traced, global_spans: Any
) -> None:
    """The third call was sent the calls as ``Calling tools:`` text and their outputs as ``Observation:`` text; its
    span's inputs hold them as tool calls and one output per call, as the flat trace shows them."""
    with MockLLMServer() as server:
        weather_replies(server)
        tool_agent(server).run(QUESTION)
        sent = server.requests[2].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert sent[2]["content"][0]["text"].startswith("Calling tools:\n[{'id': 'call_mock_1'")
    assert sent[3]["content"][0]["text"] == "Observation:\nParis: 18°C, sunny\nTokyo: 24°C, cloudy"
    chats = sorted(
        (s for s in global_spans.get_finished_spans() if s.name.startswith("chat ")), key=lambda s: s.start_time
    )
    inputs = json.loads(chats[2].attributes["gen_ai.input.messages"])
    assert [m["role"] for m in inputs] == ["system", "user", "assistant", "tool", "tool", "assistant", "tool"]
    assert [p["id"] for p in inputs[2]["parts"]] == ["call_mock_1", "call_mock_2"]
    assert inputs[4]["parts"] == [
        {"type": "tool_call_response", "id": "call_mock_2", "response": "Tokyo: 24°C, cloudy"}
    ]
    traced.one()


def test_streamed_model_outputs_fold_alike(traced: Traced) -> None:
    with MockLLMServer() as server:
        weather_replies(server)
        assert tool_agent(server, stream_outputs=True).run(QUESTION) == ANSWER
    assert events_after_system(traced.one(), TOOL_PROMPT) == WEATHER_EVENTS


def test_a_streamed_run_folds_alike(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer() as server:
        weather_replies(server)
        steps = list(tool_agent(server).run(QUESTION, stream=True))
    assert type(steps[-1]).__name__ == "FinalAnswerStep" and steps[-1].output == ANSWER
    assert events_after_system(traced.one(), TOOL_PROMPT) == WEATHER_EVENTS
    assert [s.name for s in global_spans.get_finished_spans() if s.name.startswith("invoke")] == [
        "invoke_agent weather_bot"
    ]


def test_a_failing_tool_is_an_error_output_and_the_run_goes_on(traced: Traced) -> None:
    with MockLLMServer() as server:
        weather_replies(server, first_city="Atlantis")
        assert tool_agent(server).run(QUESTION) == ANSWER
    events = events_after_system(traced.one(), TOOL_PROMPT)
    failed = events[2]
    assert failed["tool_call_id"] == "call_mock_1"
    assert failed["error"]["type"] == "smolagents.utils.AgentToolExecutionError"
    assert "ValueError: no forecast for Atlantis" in failed["content"]
    assert events[3] == output("call_mock_2", "Tokyo: 24°C, cloudy")
    # smolagents tells the model of the failure in a user message (the step lost its calls): shown as it was sent
    assert events[4]["role"] == "user" and events[4]["content"].startswith("Error:\nError executing tool 'get_weather'")
    assert events[-2:] == WEATHER_EVENTS[-2:]
    assert traced.metas()[0]["summary"]["errorCount"] == 1


def test_a_model_error_fails_the_run(traced: Traced) -> None:
    with MockLLMServer() as server:
        server.script(Reply.error(500, "the model is down", should_retry=False))
        agent = tool_agent(server)
        agent.model.retryer.max_attempts = 1
        with pytest.raises(AgentGenerationError):
            agent.run(QUESTION)
    events = events_after_system(traced.one(), TOOL_PROMPT)
    assert [e["role"] for e in events] == ["user", "error"]
    assert events[1]["error"]["type"] == "openai.InternalServerError"
    (meta,) = traced.metas()
    assert meta["metadata"]["status"] == "error"


def test_with_content_capture_off_the_trace_keeps_roles_ids_and_names(traced_off: Traced) -> None:
    with MockLLMServer() as server:
        weather_replies(server)
        tool_agent(server).run(QUESTION)
    events = traced_off.one()
    assert [e["role"] for e in events] == ["system", *[e["role"] for e in WEATHER_EVENTS]]
    assert [e.get("tool_call_id") for e in events if e["role"] == "tool"] == [f"call_mock_{n}" for n in (1, 2, 3, 4)]
    assert all(e.get("content") in (None, "") for e in events)
    calls = [tc["function"]["name"] for e in events for tc in e.get("tool_calls") or []]
    assert calls == ["get_weather", "get_weather", "convert_temperature", "final_answer"]


class TestContract(Contract):
    @pytest.fixture
    def framework(self) -> Framework:
        def run(server: MockLLMServer) -> Any:
            weather_replies(server)
            return tool_agent(server).run(QUESTION)

        def trace(events: list[dict[str, Any]], answer: Any) -> None:
            assert events_after_system(events, TOOL_PROMPT) == WEATHER_EVENTS

        return Framework(run, trace)


def test_a_managed_agent_runs_under_its_own_name_in_the_managers_trace(traced: Traced, global_spans: Any) -> None:
    report = "Here is the final answer from your managed agent 'weather_agent':\nParis is sunny"
    with MockLLMServer() as server:
        server.script(
            Reply.tools([ToolCallSpec("weather_agent", {"task": "Paris weather"})]),
            Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]),
            Reply.tools([ToolCallSpec("final_answer", {"answer": "Paris is sunny"})]),
            Reply.tools([ToolCallSpec("final_answer", {"answer": "It is sunny in Paris."})]),
        )
        inner = ToolCallingAgent(
            tools=[get_weather],
            model=model(server),
            name="weather_agent",
            description="Finds weather.",
            verbosity_level=0,
        )
        manager = ToolCallingAgent(
            tools=[], model=model(server), name="manager", managed_agents=[inner], verbosity_level=0
        )
        assert manager.run("Weather in Paris?") == "It is sunny in Paris."
    events = traced.one()
    (run,) = folded(global_spans)
    by_agent = [(e.role, e.metadata.get("agent")) for e in run.events]
    assert by_agent == [
        *[("system", "manager"), ("user", "manager"), ("assistant", "manager")],
        *[("system", "weather_agent"), ("user", "weather_agent"), ("assistant", "weather_agent")],
        *[("tool", "weather_agent"), ("assistant", "weather_agent"), ("tool", "weather_agent")],
        *[("tool", "manager"), ("assistant", "manager"), ("tool", "manager")],
    ]
    assert events[4]["content"].startswith("New task:\nYou're a helpful agent named 'weather_agent'.")
    assert events[5:9] == [
        assistant(call("call_mock_2", "get_weather", {"city": "Paris"})),
        output("call_mock_2", "Paris: 18°C, sunny"),
        assistant(call("call_mock_3", "final_answer", {"answer": "Paris is sunny"})),
        output("call_mock_3", "Paris is sunny"),
    ]
    assert events[9:] == [
        output("call_mock_1", report),
        assistant(call("call_mock_4", "final_answer", {"answer": "It is sunny in Paris."})),
        output("call_mock_4", "It is sunny in Paris."),
    ]
    assert traced.metas()[0]["metadata"]["name"] == "manager"
    spans = global_spans.get_finished_spans()
    (tool_run,) = [s for s in spans if s.name == "execute_tool weather_agent"]
    (inner_run,) = [s for s in spans if s.name == "invoke_agent weather_agent"]
    assert inner_run.parent is not None and inner_run.parent.span_id == tool_run.context.span_id


# --- CodeAgent -----------------------------------------------------------------------------------------------------


def test_a_code_agent_run_shows_each_code_action_as_a_python_interpreter_call(traced: Traced) -> None:
    first = "Thought: I look the weather up.\n<code>\nprint(get_weather(city='Paris'))\n</code>"
    last = "Thought: I answer.\n<code>\nfinal_answer('Sunny in Paris.')\n</code>"
    with MockLLMServer() as server:
        server.script(Reply.text(first), Reply.text(last))
        agent = CodeAgent(tools=[get_weather], model=model(server), name="coder", verbosity_level=0)
        assert agent.run("Weather in Paris?") == "Sunny in Paris."
    events = events_after_system(traced.one(), CODE_PROMPT)
    assert events == [
        {"role": "user", "content": "New task:\nWeather in Paris?"},
        assistant(call("call_1", "python_interpreter", {"code": "print(get_weather(city='Paris'))"}), content=first),
        output("call_1", "Execution logs:\nParis: 18°C, sunny\nLast output from code snippet:\nNone"),
        assistant(call("call_2", "python_interpreter", {"code": "final_answer('Sunny in Paris.')"}), content=last),
        output("call_2", "Execution logs:\nLast output from code snippet:\nSunny in Paris."),
    ]
    assert traced.metas()[0]["metadata"]["name"] == "coder"


def test_a_code_action_that_fails_is_an_error_output(traced: Traced) -> None:
    broken = "Thought: oops.\n<code>\nprint(get_weather(city='Atlantis'))\n</code>"
    last = "Thought: I answer.\n<code>\nfinal_answer('No forecast.')\n</code>"
    with MockLLMServer() as server:
        server.script(Reply.text(broken), Reply.text(last))
        agent = CodeAgent(tools=[get_weather], model=model(server), name="coder", verbosity_level=0)
        assert agent.run("Weather in Atlantis?") == "No forecast."
    events = events_after_system(traced.one(), CODE_PROMPT)
    assert [e["role"] for e in events] == ["user", "assistant", "tool", "assistant", "tool"]
    assert events[2]["tool_call_id"] == "call_1"
    assert events[2]["error"]["type"] == "smolagents.utils.AgentExecutionError"
    assert "no forecast for Atlantis" in events[2]["content"]
    assert events[4] == output("call_2", "Execution logs:\nLast output from code snippet:\nNo forecast.")

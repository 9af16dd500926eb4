"""DSPy under spanfold.init() (its own venv, ``.ci/frameworks``): a ``dspy.ReAct`` weather agent on ``dspy.LM``
against the embedded mock server (DSPy's own HTTP client, and LiteLLM with ``engine="litellm"``), the model answering
in DSPy's ChatAdapter field format. A program run is one trace rooted at ``invoke_agent {module}``: each ``LM`` call
one model step (DSPy's own, the openai and litellm patches recording nothing under it), ReAct's trajectory turned
back into tool calls and outputs paired by ``react_<step>`` ids, each tool run an ``execute_tool`` span, and the
extraction's answer last; asserted event by event, sync, async and streamed."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "true")  # DSPy's model metadata: the bundled copy, no network

import dspy
from dspy.streaming import StreamListener, StreamResponse

import spanfold
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec, scenarios

from ..conftest import Traced
from .contract import Contract, Framework
from .helpers import folded

QUESTION = "What's the weather in Paris and Tokyo? And Paris's temperature in fahrenheit, please."
ANSWER = "Paris: 18°C, sunny; Tokyo: 24°C, cloudy; 18°C is 64.4°F."


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    if city == "Atlantis":
        raise ValueError(f"no forecast for {city}")
    return scenarios.get_weather(city)


@spanfold.tool
def convert_temperature(celsius: float, to: str = "fahrenheit") -> str:
    """Convert a temperature in degrees Celsius to another unit."""
    return scenarios.convert_temperature(celsius, to)


def step(thought: str, tool: str, arguments: dict[str, Any]) -> Reply:
    """A ReAct step as the model writes it in ChatAdapter's field format."""
    return Reply.text(
        f"[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n"
        f"[[ ## next_tool_args ## ]]\n{json.dumps(arguments)}\n\n[[ ## completed ## ]]"
    )


def extracted(reasoning: str, answer: str) -> str:
    return f"[[ ## reasoning ## ]]\n{reasoning}\n\n[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]"


FINAL = extracted("The tools answered every part.", ANSWER)

WEATHER_REPLIES = (
    step("I need the weather in Paris.", "get_weather", {"city": "Paris"}),
    step("Now Tokyo.", "get_weather", {"city": "Tokyo"}),
    step("Paris in fahrenheit.", "convert_temperature", {"celsius": 18, "to": "fahrenheit"}),
    step("I have everything.", "finish", {}),
    Reply.text(FINAL),
)


def lm(server: MockLLMServer, **options: Any) -> dspy.LM:
    options = {"cache": False, **options}
    return dspy.LM("openai/gpt-4o-mini", api_base=server.base_url, api_key="test", num_retries=0, **options)


def agent(server: MockLLMServer, **options: Any) -> dspy.ReAct:
    react = dspy.ReAct("question -> answer", tools=[get_weather, convert_temperature])
    react.set_lm(lm(server, **options))
    return react


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def assistant(thought: str, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": thought, "tool_calls": list(calls)}


def output(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "content": content, "tool_call_id": call_id}


#: The run after the first request's system and user messages, up to the extraction.
WEATHER_STEPS = [
    assistant("I need the weather in Paris.", call("react_0", "get_weather", {"city": "Paris"})),
    output("react_0", "Paris: 18°C, sunny"),
    assistant("Now Tokyo.", call("react_1", "get_weather", {"city": "Tokyo"})),
    output("react_1", "Tokyo: 24°C, cloudy"),
    assistant("Paris in fahrenheit.", call("react_2", "convert_temperature", {"celsius": 18, "to": "fahrenheit"})),
    output("react_2", "18°C is 64.4°F"),
    assistant("I have everything.", call("react_3", "finish", {})),
    output("react_3", "Completed."),
]


def sent(server: MockLLMServer, index: int) -> list[dict[str, Any]]:
    """The messages of the server's request ``index``, as events."""
    return [{"role": msg["role"], "content": msg["content"]} for msg in server.requests[index].body["messages"]]


def assert_weather_trace(events: list[dict[str, Any]], server: MockLLMServer) -> None:
    """The first step's messages as sent, the steps as calls and outputs, the extraction's prompt and answer."""
    first = sent(server, 0)
    assert [m["role"] for m in first] == ["system", "user"]
    assert QUESTION in first[1]["content"] and "get_weather" in first[0]["content"]
    assert events[:2] == first
    assert events[2:10] == WEATHER_STEPS
    extraction = sent(server, 4)
    assert "[[ ## observation_2 ## ]]\n18°C is 64.4°F" in extraction[1]["content"]  # the trajectory, as ReAct sent it
    assert events[10:] == [*extraction, {"role": "assistant", "content": FINAL}]


def spans_named(global_spans: Any, prefix: str) -> list[Any]:
    return [s for s in global_spans.get_finished_spans() if s.name.startswith(prefix)]


def assert_weather_spans(global_spans: Any, root: str = "ReAct") -> None:
    """One root, five model steps (DSPy's own: no openai or litellm span under them), four tool runs, one trace."""
    spans = global_spans.get_finished_spans()
    assert sorted(s.name for s in spans) == sorted(
        [
            f"invoke_agent {root}",
            *(["chat gpt-4o-mini"] * 5),
            "execute_tool convert_temperature",
            "execute_tool finish",
            *(["execute_tool get_weather"] * 2),
        ]
    )
    (run,) = spans_named(global_spans, "invoke_agent")
    assert run.parent is None and run.attributes["gen_ai.agent.name"] == root
    assert {s.context.trace_id for s in spans} == {run.context.trace_id}
    chats = spans_named(global_spans, "chat ")
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in chats)
    assert {s.instrumentation_scope.name for s in chats} == {"spanfold.instrumentation.frameworks.dspy.patches"}
    assert {s.attributes["gen_ai.provider.name"] for s in chats} == {"openai"}
    assert {s.attributes["server.address"] for s in chats} == {"127.0.0.1"}
    assert all(s.attributes["gen_ai.usage.input_tokens"] > 0 for s in chats)
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in spans_named(global_spans, "execute_tool")}
    assert sorted(tools) == ["react_0", "react_1", "react_2", "react_3"]
    assert tools["react_1"].attributes["gen_ai.tool.call.arguments"] == '{"city":"Tokyo"}'
    assert tools["react_2"].attributes["gen_ai.tool.call.result"] == "18°C is 64.4°F"
    assert tools["react_0"].attributes["gen_ai.tool.description"] == "Get the current weather in a city."


def assert_named(traced: Traced, global_spans: Any, name: str) -> None:
    (meta,) = traced.metas()
    assert meta["metadata"]["name"] == name and meta["metadata"]["status"] == "complete"
    (run,) = folded(global_spans)
    assert {e.metadata.get("agent") for e in run.events} == {name}


# --- ReAct, sync / async / streamed ---------------------------------------------------------------------------------


def test_a_react_run_is_one_flat_trace_with_its_tool_calls_and_answer(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer() as server:
        server.script(*WEATHER_REPLIES)
        prediction = agent(server)(question=QUESTION)
        assert prediction.answer == ANSWER
        assert_weather_trace(traced.one(), server)
    assert_weather_spans(global_spans)
    assert_named(traced, global_spans, "ReAct")
    usage = traced.metas()[0]["metadata"]["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0


def test_acall_is_one_trace(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer() as server:
        server.script(*WEATHER_REPLIES)
        prediction = asyncio.run(agent(server).acall(question=QUESTION))
        assert prediction.answer == ANSWER
        assert_weather_trace(traced.one(), server)
    assert_weather_spans(global_spans)
    assert_named(traced, global_spans, "ReAct")


def test_a_streamed_run_is_one_trace(traced: Traced, global_spans: Any) -> None:
    """``dspy.streamify`` with listeners on the thoughts and the answer: every model call streams, the run is the
    same."""
    with MockLLMServer() as server:
        server.script(*WEATHER_REPLIES)
        listeners = [
            StreamListener(signature_field_name="next_thought", allow_reuse=True),
            StreamListener(signature_field_name="answer"),
        ]
        program = dspy.streamify(agent(server), stream_listeners=listeners)

        async def run() -> list[Any]:
            return [item async for item in program(question=QUESTION)]

        items = asyncio.run(run())
        assert all(request.stream for request in server.requests)
        chunks = [i for i in items if isinstance(i, StreamResponse)]
        assert "".join(i.chunk for i in chunks if i.signature_field_name == "answer").strip() == ANSWER
        assert "Now Tokyo." in "".join(i.chunk for i in chunks if i.signature_field_name == "next_thought")
        assert items[-1].answer == ANSWER
        assert_weather_trace(traced.one(), server)
    assert_weather_spans(global_spans)


def test_the_litellm_engine_is_one_model_step_per_call(traced: Traced, global_spans: Any) -> None:
    """With ``engine="litellm"`` DSPy calls LiteLLM (which calls the openai SDK): both are patched, neither records."""
    with MockLLMServer() as server:
        server.script(*WEATHER_REPLIES)
        assert agent(server, engine="litellm")(question=QUESTION).answer == ANSWER
        assert_weather_trace(traced.one(), server)
    assert_weather_spans(global_spans)
    assert spanfold.stats()["instrumented.litellm"] == 1


# --- errors ------------------------------------------------------------------------------------------------------


def test_a_failing_tool_is_an_error_output_and_the_run_goes_on(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer() as server:
        server.script(
            step("Atlantis, then.", "get_weather", {"city": "Atlantis"}),
            step("No forecast; done.", "finish", {}),
            Reply.text(extracted("The tool failed.", "No forecast.")),
        )
        assert agent(server)(question="Weather in Atlantis?").answer == "No forecast."
        observation = server.requests[1].body["messages"][1]["content"]
    events = traced.one()
    assert events[2] == assistant("Atlantis, then.", call("react_0", "get_weather", {"city": "Atlantis"}))
    failed = events[3]
    assert failed["tool_call_id"] == "react_0" and failed["error"]["type"] == "ValueError"
    assert "no forecast for Atlantis" in failed["content"]
    assert "Execution error in get_weather" in observation  # what ReAct showed the model next
    assert events[4:6] == [
        assistant("No forecast; done.", call("react_1", "finish", {})),
        output("react_1", "Completed."),
    ]
    assert events[-1] == {"role": "assistant", "content": extracted("The tool failed.", "No forecast.")}
    (meta,) = traced.metas()
    assert meta["summary"]["errorCount"] == 1 and meta["metadata"]["status"] == "complete"
    (tool,) = [s for s in spans_named(global_spans, "execute_tool") if s.name.endswith("get_weather")]
    assert tool.attributes["error.type"] == "ValueError"


def test_a_failed_model_call_fails_the_run(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer() as server:
        server.script(
            step("I need the weather in Paris.", "get_weather", {"city": "Paris"}),
            Reply.error(400, "the model refused"),
        )
        with pytest.raises(Exception, match="the model refused"):
            agent(server)(question=QUESTION)
    events = traced.one()
    assert events[2:4] == WEATHER_STEPS[:2]
    (meta,) = traced.metas()
    assert meta["metadata"]["status"] == "error"
    (run,) = spans_named(global_spans, "invoke_agent")
    assert run.status.is_ok is False
    failed = [s for s in spans_named(global_spans, "chat ") if not s.status.is_ok]
    assert len(failed) == 1 and "refused" in str(failed[0].status.description)


# --- programs ----------------------------------------------------------------------------------------------------


class Forecaster(dspy.Module):
    """A program of two modules: one run, named after its class (or the name you gave it)."""

    def __init__(self) -> None:
        super().__init__()
        self.guess = dspy.Predict("city -> weather")
        self.advise = dspy.ChainOfThought("weather -> advice")

    def forward(self, city: str) -> dspy.Prediction:
        weather = self.guess(city=city).weather
        return self.advise(weather=weather)


def forecaster_replies(server: MockLLMServer) -> None:
    server.script(
        Reply.text("[[ ## weather ## ]]\nSunny\n\n[[ ## completed ## ]]"),
        Reply.text("[[ ## reasoning ## ]]\nSun.\n\n[[ ## advice ## ]]\nSunglasses.\n\n[[ ## completed ## ]]"),
    )


@pytest.mark.parametrize("name", [None, "forecast-bot"])
def test_a_program_is_one_run_named_after_it(traced: Traced, global_spans: Any, name: str | None) -> None:
    with MockLLMServer() as server:
        forecaster_replies(server)
        program = Forecaster()
        program.set_lm(lm(server))
        if name is not None:
            program.name = name
        assert program(city="Paris").advice == "Sunglasses."
        first, second = sent(server, 0), sent(server, 1)
    events = traced.one()
    assert events == [
        *first,
        {"role": "assistant", "content": "[[ ## weather ## ]]\nSunny\n\n[[ ## completed ## ]]"},
        *second,
        {
            "role": "assistant",
            "content": "[[ ## reasoning ## ]]\nSun.\n\n[[ ## advice ## ]]\nSunglasses.\n\n[[ ## completed ## ]]",
        },
    ]
    assert [s.name for s in spans_named(global_spans, "invoke_agent")] == [f"invoke_agent {name or 'Forecaster'}"]
    assert_named(traced, global_spans, name or "Forecaster")


class TwoQuestions(dspy.Module):
    def __init__(self) -> None:
        super().__init__()
        self.react = dspy.ReAct("question -> answer", tools=[get_weather])

    def forward(self) -> list[str]:
        return [self.react(question=f"Weather in {city}?").answer for city in ("Paris", "Tokyo")]


def test_each_react_run_of_a_program_has_its_own_call_ids(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer() as server:
        for city in ("Paris", "Tokyo"):
            server.script(
                step(f"{city}.", "get_weather", {"city": city}),
                step("Done.", "finish", {}),
                Reply.text(extracted("Asked.", city)),
            )
        program = TwoQuestions()
        program.set_lm(lm(server))
        assert program() == ["Paris", "Tokyo"]
    events = traced.one()
    outputs = [(e["tool_call_id"], e["content"]) for e in events if e["role"] == "tool"]
    assert outputs == [
        ("react_0", "Paris: 18°C, sunny"),
        ("react_1", "Completed."),
        ("react2_0", "Tokyo: 24°C, cloudy"),
        ("react2_1", "Completed."),
    ]
    assert traced.metas()[0]["metadata"]["name"] == "TwoQuestions"


class AskTools(dspy.Signature):
    question: str = dspy.InputField()
    tools: list[dspy.Tool] = dspy.InputField()
    outputs: dspy.ToolCalls = dspy.OutputField()


class NativeCalls(dspy.Module):
    """Native function calling: the model's tool calls, run by the program (the second through a dict of tools)."""

    def __init__(self) -> None:
        super().__init__()
        self.ask = dspy.Predict(AskTools)

    def forward(self, question: str) -> list[Any]:
        tool = dspy.Tool(get_weather)
        calls = self.ask(question=question, tools=[tool]).outputs.tool_calls
        return [calls[0].execute(functions=[tool]), calls[1].execute(functions={"get_weather": tool})]


def test_native_tool_calls_run_by_the_program_pair_by_the_models_ids(traced: Traced, global_spans: Any) -> None:
    with MockLLMServer() as server:
        server.script(
            Reply.tools(
                [ToolCallSpec("get_weather", {"city": "Paris"}), ToolCallSpec("get_weather", {"city": "Tokyo"})]
            )
        )
        program = NativeCalls()
        program.set_lm(lm(server))
        with dspy.context(adapter=dspy.ChatAdapter(use_native_function_calling=True)):
            assert program(question="Weather in Paris and Tokyo?") == ["Paris: 18°C, sunny", "Tokyo: 24°C, cloudy"]
        first = sent(server, 0)
    assert traced.one() == [
        *first,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                call("call_mock_1", "get_weather", {"city": "Paris"}),
                call("call_mock_2", "get_weather", {"city": "Tokyo"}),
            ],
        },
        output("call_mock_1", "Paris: 18°C, sunny"),
        output("call_mock_2", "Tokyo: 24°C, cloudy"),
    ]
    tools = spans_named(global_spans, "execute_tool")  # one each: the dspy.Tool run inside makes none
    assert sorted(s.attributes["gen_ai.tool.call.id"] for s in tools) == ["call_mock_1", "call_mock_2"]
    assert traced.metas()[0]["metadata"]["name"] == "NativeCalls"


def test_an_answer_from_dspys_cache_is_a_model_step_with_no_usage(traced: Traced, global_spans: Any) -> None:
    city = f"Paris {uuid.uuid4()}"  # no earlier run cached it
    with MockLLMServer() as server:
        server.script(Reply.text("[[ ## weather ## ]]\nSunny\n\n[[ ## completed ## ]]"))
        predict = dspy.Predict("city -> weather")
        predict.set_lm(lm(server, cache=True))
        assert [predict(city=city).weather for _ in range(2)] == ["Sunny", "Sunny"]
        assert len(server.requests) == 1
        first = sent(server, 0)
    answer = {"role": "assistant", "content": "[[ ## weather ## ]]\nSunny\n\n[[ ## completed ## ]]"}
    assert traced.traces() == [[*first, answer], [*first, answer]]
    steps = [meta["metadata"]["steps"] for meta in traced.metas()]
    assert [len(s) for s in steps] == [1, 1]
    assert steps[0][0]["usage"]["input_tokens"] > 0 and "usage" not in steps[1][0] and "cost" not in steps[1][0]
    assert [s.name for s in spans_named(global_spans, "invoke_agent")] == ["invoke_agent Predict"] * 2


class TestContract(Contract):
    @pytest.fixture
    def framework(self) -> Framework:
        def run(server: MockLLMServer) -> MockLLMServer:
            server.script(*WEATHER_REPLIES)
            agent(server)(question=QUESTION)
            return server

        return Framework(run, assert_weather_trace)


def test_with_content_capture_off_the_run_keeps_its_structure(traced_off: Traced) -> None:
    with MockLLMServer() as server:
        server.script(*WEATHER_REPLIES)
        agent(server)(question=QUESTION)
    events = traced_off.one()
    # the extraction's prompt, its content left out, is the first step's system and user messages to the fold
    assert [e["role"] for e in events] == ["system", "user", *(["assistant", "tool"] * 4), "assistant"]
    calls = [(c["id"], c["function"]["name"]) for e in events for c in e.get("tool_calls") or []]
    assert calls == [
        ("react_0", "get_weather"),
        ("react_1", "get_weather"),
        ("react_2", "convert_temperature"),
        ("react_3", "finish"),
    ]
    assert all(e.get("content") in (None, "") for e in events)


class _Weather(dspy.Module):
    """A program that asks the weather agent two questions at once with ``dspy.Parallel`` (its threads)."""

    def __init__(self, server: MockLLMServer) -> None:
        super().__init__()
        self.react = agent(server)

    def forward(self, questions: list[str]) -> list[Any]:
        parallel = dspy.Parallel(num_threads=2)
        return parallel([(self.react, dspy.Example(question=q).with_inputs("question")) for q in questions])


def test_a_program_running_dspy_parallel_is_one_trace(traced: Traced) -> None:
    """``dspy.Parallel`` runs its calls in a thread pool: with threads on (the default) the context follows them, and
    the program's run is one trace holding both agents' model steps and tool runs (it was a trace per thread)."""
    replies = {"Paris?": "Paris", "Tokyo?": "Tokyo"}

    def reply(request: Any) -> Reply:
        text = json.dumps(request.body)
        city = next(c for q, c in replies.items() if q in text)
        if "next_thought" not in text:  # the extraction
            return Reply.text(extracted("done", f"{city} answered"))
        if "observation_0" not in text:
            return step(f"The weather in {city}.", "get_weather", {"city": city})
        return step("I have it.", "finish", {})

    with MockLLMServer(reply) as server:
        _Weather(server)(questions=list(replies))
    events = traced.one()
    (meta,) = traced.metas()
    assert meta["metadata"]["name"] == "_Weather"
    tools = [(c["function"]["name"], c["function"]["arguments"]) for e in events for c in e.get("tool_calls") or []]
    assert sorted(arguments["city"] for name, arguments in tools if name == "get_weather") == ["Paris", "Tokyo"]

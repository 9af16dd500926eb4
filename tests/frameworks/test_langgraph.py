"""LangGraph's prebuilt ReAct agent with LangChain tools and ChatOpenAI, on the embedded mock server, under
spanfold.init(): each graph run is one trace rooted at ``invoke_agent {graph name}``, equal event by event to the
trace of the plain-openai weather agent, with the tool runs' own spans."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

import spanfold
from spanfold import counters
from spanfold.testing import WEATHER, MockLLMServer

from ..conftest import Traced, in_threads
from .contract import Contract, Framework, events_are
from .langchain_helpers import (
    AGENT_NAME,
    RAISED,
    aget_weather,
    convert_temperature,
    failing_weather,
    question,
    run_plain_openai_agent,
    unknown_city_weather,
    weather_agent,
)
from .weather import WEATHER_RUN

WEATHER_OUTPUTS = ["Paris: 18°C, sunny", "Tokyo: 24°C, cloudy", "18°C is 64.4°F"]


def final_text(state: dict[str, Any]) -> str:
    return str(state["messages"][-1].content)


def agent_spans(global_spans: Any) -> list[str]:
    """The names of the run roots: ``invoke_agent`` (an agent) and ``invoke_workflow`` (a graph of the
    application's)."""
    return [s.name for s in global_spans.get_finished_spans() if s.name.startswith(("invoke_agent", "invoke_workflow"))]


# --- the weather agent: the same flat trace as the plain-openai agent -------------------------------------------


def test_invoke_folds_like_the_plain_openai_agent(traced: Traced, server: MockLLMServer, global_spans: Any) -> None:
    run_plain_openai_agent()
    state = weather_agent(server).invoke(question())
    plain, ours = traced.traces()
    assert ours == plain
    assert [e["content"] for e in ours if e["role"] == "tool"] == WEATHER_OUTPUTS
    assert [e["tool_call_id"] for e in ours if e["role"] == "tool"] == ["call_mock_1", "call_mock_2", "call_mock_3"]
    assert final_text(state) == ours[-1]["content"]
    plain_meta, meta = traced.metas()
    assert meta["metadata"]["name"] == AGENT_NAME
    # three model steps, their tokens counted once (the input differs: LangChain words the tool schemas its way)
    replies = [m for m in state["messages"] if isinstance(m, AIMessage)]
    assert meta["metadata"]["usage"] == {
        "input_tokens": sum(m.usage_metadata["input_tokens"] for m in replies),
        "output_tokens": sum(m.usage_metadata["output_tokens"] for m in replies),
    }
    assert meta["metadata"]["usage"]["output_tokens"] == plain_meta["metadata"]["usage"]["output_tokens"]
    assert meta["summary"] == plain_meta["summary"]
    # one trace: the graph's root, three model calls, three tool runs, all in it
    assert meta["metadata"]["span_count"] == 7
    assert "otel_trace_ids" not in meta["metadata"]
    assert agent_spans(global_spans) == [f"invoke_agent {AGENT_NAME}"] * 2  # the plain agent's and the graph's


def test_tool_runs_are_spans_paired_with_the_model_calls(
    traced: Traced, server: MockLLMServer, global_spans: Any
) -> None:
    weather_agent(server).invoke(question())
    traced.one()
    spans = global_spans.get_finished_spans()
    (root,) = [s for s in spans if s.name == f"invoke_agent {AGENT_NAME}"]
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    assert sorted(s.name for s in tools) == ["execute_tool convert_temperature", *["execute_tool get_weather"] * 2]
    by_id = {s.attributes["gen_ai.tool.call.id"]: s for s in tools}
    assert by_id["call_mock_1"].attributes["gen_ai.tool.call.arguments"] == '{"city":"Paris"}'
    assert by_id["call_mock_1"].attributes["gen_ai.tool.call.result"] == "Paris: 18°C, sunny"
    assert by_id["call_mock_3"].attributes["gen_ai.tool.call.result"] == "18°C is 64.4°F"
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(chats) == 3
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id for s in chats)


def assert_one_tree(global_spans: Any) -> None:
    """The graph's span is the root; every model call and tool run is in its trace, the model calls its children."""
    spans = global_spans.get_finished_spans()
    (root,) = [s for s in spans if s.name.startswith("invoke_agent")]
    assert root.parent is None
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(chats) == 3 and len([s for s in spans if s.name.startswith("execute_tool")]) == 3
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id for s in chats)


async def test_ainvoke_folds_like_the_plain_openai_agent(
    traced: Traced, server: MockLLMServer, global_spans: Any
) -> None:
    run_plain_openai_agent()
    global_spans.clear()
    state = await weather_agent(server, [aget_weather, convert_temperature]).ainvoke(question())
    plain, ours = traced.traces()
    assert ours == plain
    assert final_text(state) == ours[-1]["content"]
    assert traced.metas()[1]["metadata"]["name"] == AGENT_NAME
    assert_one_tree(global_spans)


async def test_astream_events_is_one_run(traced: Traced, server: MockLLMServer, global_spans: Any) -> None:
    events = [e async for e in weather_agent(server).astream_events(question(), version="v2")]
    assert [e["name"] for e in events if e["event"] == "on_tool_end"] == ["get_weather"] * 2 + ["convert_temperature"]
    assert [e["content"] for e in traced.one() if e["role"] == "tool"] == WEATHER_OUTPUTS
    assert traced.metas()[0]["metadata"]["name"] == AGENT_NAME
    assert_one_tree(global_spans)


def test_streamed_run_folds_like_the_plain_openai_agent(
    traced: Traced, server: MockLLMServer, global_spans: Any
) -> None:
    """``stream_mode="messages"``: ChatOpenAI streams its calls (the openai patch records them); the graph's span
    ends when the stream is exhausted. The iterator is LangGraph's own generator, proxied."""
    run_plain_openai_agent(stream=True)
    global_spans.clear()
    stream = weather_agent(server).stream(question(), stream_mode="messages")
    assert isinstance(stream, types.GeneratorType)
    chunks = list(stream)
    tokens = [m for m, _ in chunks if isinstance(m, AIMessage)]
    assert len(tokens) > 3 and [m for m, _ in chunks if isinstance(m, ToolMessage)]
    plain, ours = traced.traces()
    assert ours == plain
    assert traced.metas()[1]["metadata"]["span_count"] == 7
    assert_one_tree(global_spans)


async def test_astream_folds_like_the_plain_openai_agent(traced: Traced, server: MockLLMServer) -> None:
    run_plain_openai_agent()
    stream = weather_agent(server, [aget_weather, convert_temperature]).astream(question(), stream_mode="updates")
    assert isinstance(stream, types.AsyncGeneratorType)
    updates = [update async for update in stream]
    assert [list(u) for u in updates] == [["agent"], ["tools"], ["tools"], ["agent"], ["tools"], ["agent"]]
    plain, ours = traced.traces()
    assert ours == plain


def test_stream_closed_early_ends_the_run(traced: Traced, server: MockLLMServer, global_spans: Any) -> None:
    stream = weather_agent(server).stream(question(), stream_mode="updates")
    first = next(stream)
    assert "agent" in first
    stream.close()
    events = traced.one()
    assert [e["role"] for e in events] == ["system", "user", "assistant"]
    assert agent_spans(global_spans) == [f"invoke_agent {AGENT_NAME}"]


async def test_astream_closed_early_ends_the_run(traced: Traced, server: MockLLMServer, global_spans: Any) -> None:
    stream = weather_agent(server).astream(question(), stream_mode="updates")
    assert "agent" in await stream.__anext__()
    await stream.aclose()
    assert [e["role"] for e in traced.one()] == ["system", "user", "assistant"]
    assert agent_spans(global_spans) == [f"invoke_agent {AGENT_NAME}"]


# --- tool errors -------------------------------------------------------------------------------------------------


def test_a_raising_tool_is_an_error_step_and_the_run_goes_on(traced: Traced, server: MockLLMServer) -> None:
    """ToolNode(handle_tool_errors=True) sends the error to the model; the trace's tool step is the error."""
    agent = weather_agent(server, ToolNode([failing_weather, convert_temperature], handle_tool_errors=True))
    state = agent.invoke(question())
    events = traced.one()
    tools = [e for e in events if e["role"] == "tool"]
    assert [e["tool_call_id"] for e in tools] == ["call_mock_1", "call_mock_2", "call_mock_3"]
    assert tools[0]["content"] == "Paris: 18°C, sunny"
    assert tools[1]["content"] == "no forecast for Tokyo"
    sent = [m for m in state["messages"] if isinstance(m, ToolMessage)][1]
    assert sent.status == "error" and "no forecast for Tokyo" in str(sent.content)
    (meta,) = traced.metas()
    assert meta["summary"]["errorCount"] == 1


def test_a_raising_tool_that_ends_the_run_raises_the_very_exception(
    traced: Traced, server: MockLLMServer, global_spans: Any
) -> None:
    RAISED.clear()
    agent = weather_agent(server, [failing_weather, convert_temperature])  # ToolNode's default: re-raise
    with pytest.raises(ValueError) as info:
        agent.invoke(question())
    assert info.value is RAISED[0]
    events = traced.one()
    assert [e["role"] for e in events][:3] == ["system", "user", "assistant"]
    assert "no forecast for Tokyo" in [e.get("content") for e in events]
    (root,) = [s for s in global_spans.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert root.status.status_code.name == "ERROR"
    assert root.attributes["error.type"] == "ValueError"
    assert counters.snapshot().get("faults", 0) == 0


def test_a_handled_tool_exception_is_an_error_result(traced: Traced, server: MockLLMServer, global_spans: Any) -> None:
    state = weather_agent(server, [unknown_city_weather, convert_temperature]).invoke(question())
    sent = [m for m in state["messages"] if isinstance(m, ToolMessage)][1]
    assert (sent.content, sent.status) == ("unknown city Tokyo", "error")
    events = traced.one()
    tools = [e for e in events if e["role"] == "tool"]
    assert tools[1]["content"] == "unknown city Tokyo"
    assert traced.metas()[0]["summary"]["errorCount"] == 1
    (span,) = [s for s in global_spans.get_finished_spans() if s.attributes.get("gen_ai.tool.call.id") == "call_mock_2"]
    assert span.attributes["error.type"] == "tool_error"
    assert span.attributes["gen_ai.tool.call.result"] == "unknown city Tokyo"
    assert span.status.status_code.name == "ERROR"


# --- one trace per run, names, nesting ------------------------------------------------------------------------------


def test_one_trace_per_run(traced: Traced, server: MockLLMServer) -> None:
    agent = weather_agent(server)
    for n in range(2):
        agent.invoke(question(f"Run {n}: weather in Paris and Tokyo?"))
    first, second = traced.traces()
    assert [e["content"] for e in first if e["role"] == "user"] == ["Run 0: weather in Paris and Tokyo?"]
    assert [e["content"] for e in second if e["role"] == "user"] == ["Run 1: weather in Paris and Tokyo?"]
    assert [m["metadata"]["name"] for m in traced.metas()] == [AGENT_NAME, AGENT_NAME]


def test_concurrent_runs_in_threads_do_not_mix(traced: Traced, server: MockLLMServer) -> None:
    agents = [weather_agent(server, name=f"bot-{n}") for n in range(4)]
    in_threads(lambda n: agents[n].invoke(question(f"Run {n}: weather?")), 4)
    traces = traced.traces()
    assert len(traces) == 4
    for events in traces:
        user = next(e["content"] for e in events if e["role"] == "user")
        assert [e["content"] for e in events if e["role"] == "tool"] == WEATHER_OUTPUTS, user
    assert {m["metadata"]["name"] for m in traced.metas()} == {f"bot-{n}" for n in range(4)}


async def test_concurrent_async_runs_do_not_mix(traced: Traced, server: MockLLMServer) -> None:
    agents = [weather_agent(server, [aget_weather, convert_temperature], name=f"bot-{n}") for n in range(3)]
    await asyncio.gather(*(a.ainvoke(question(f"Run {n}")) for n, a in enumerate(agents)))
    assert len(traced.traces()) == 3
    assert {m["metadata"]["name"] for m in traced.metas()} == {"bot-0", "bot-1", "bot-2"}


def test_run_name_names_the_run(traced: Traced, server: MockLLMServer) -> None:
    weather_agent(server).invoke(question(), {"run_name": "forecaster"})
    traced.one()
    assert traced.metas()[0]["metadata"]["name"] == "forecaster"


def test_checkpointer_thread_is_the_conversation_id(traced: Traced, server: MockLLMServer, global_spans: Any) -> None:
    """``configurable.thread_id`` is the run's ``gen_ai.conversation.id`` (a backend groups a thread's runs by it);
    a run without one records none."""
    import warnings

    from langgraph.checkpoint.memory import MemorySaver
    from langgraph.prebuilt import create_react_agent

    from .langchain_helpers import WEATHER_TOOLS, chat_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(
            chat_model(server), WEATHER_TOOLS, prompt=WEATHER.system, name=AGENT_NAME, checkpointer=MemorySaver()
        )
    thread = {"configurable": {"thread_id": "support-42"}}
    agent.invoke(question("Run 0: weather in Paris and Tokyo?"), thread)
    agent.invoke(question("Thanks. And tomorrow?"), thread)
    weather_agent(server).invoke(question())
    assert len(traced.traces()) == 3
    runs = sorted(
        (s for s in global_spans.get_finished_spans() if s.name.startswith("invoke_agent")), key=lambda s: s.start_time
    )
    assert [(s.attributes or {}).get("gen_ai.conversation.id") for s in runs] == ["support-42", "support-42", None]


class TestContract(Contract):
    @pytest.fixture
    def framework(self) -> Framework:
        return Framework(
            lambda server: weather_agent(server).invoke(question()), events_are(WEATHER_RUN), WEATHER.replies
        )


def test_a_subgraph_opens_no_second_root(traced: Traced, server: MockLLMServer, global_spans: Any) -> None:
    inner = weather_agent(server)

    def ask(state: MessagesState) -> dict[str, Any]:
        return {"messages": inner.invoke(state)["messages"][len(state["messages"]) :]}

    outer = StateGraph(MessagesState)
    outer.add_node("ask", ask)
    outer.add_edge(START, "ask")
    outer.add_edge("ask", END)
    graph = outer.compile(name="supervisor")
    graph.invoke(question())
    events = traced.one()
    assert [e["content"] for e in events if e["role"] == "tool"] == WEATHER_OUTPUTS
    assert traced.metas()[0]["metadata"]["name"] == "supervisor"
    assert agent_spans(global_spans) == ["invoke_workflow supervisor"]  # a StateGraph: the application's flow


# --- content capture off, faults ---------------------------------------------------------------------------------


def test_capture_off_folds_like_the_plain_openai_agent(
    traced_off: Traced, server: MockLLMServer, global_spans: Any
) -> None:
    run_plain_openai_agent()
    weather_agent(server).invoke(question())
    plain, ours = traced_off.traces()
    assert ours == plain
    assert [e["role"] for e in ours] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert not any(e.get("content") for e in ours)
    tools = [s for s in global_spans.get_finished_spans() if s.name.startswith("execute_tool")]
    assert len(tools) == 6
    for span in tools:
        assert "gen_ai.tool.call.arguments" not in span.attributes
        assert "gen_ai.tool.call.result" not in span.attributes


def test_a_fault_in_spanfold_leaves_the_run_alone(
    traced: Traced, server: MockLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spanfold.instrumentation.frameworks import langgraph as lg

    def broken(*args: Any) -> str:
        raise RuntimeError("spanfold bug")

    monkeypatch.setattr(lg, "_name", broken)
    state = weather_agent(server).invoke(question())
    assert final_text(state).startswith("Here is the weather: Paris: 18°C, sunny")
    assert counters.snapshot()["fault.langgraph.start"] == 1
    events = traced.one()  # no root: the model calls are still stitched into one trace, the tool runs with them
    assert [e["content"] for e in events if e["role"] == "tool"] == WEATHER_OUTPUTS


# --- init() before the app imports LangChain: patched on import, never imported by spanfold ---------------------------

APP = """
import json, sys
import spanfold
spanfold.init(output=sys.argv[1], capture_content=True)
# (finding langgraph.pregel imports the ``langgraph`` namespace package: a directory, no code runs)
assert not {"langchain_core", "langgraph.pregel"} & set(sys.modules), "spanfold imported the framework"
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent
from spanfold.testing import WEATHER, MockLLMServer, scenarios
from spanfold.testing.agents import PROVIDERS

@tool
def get_weather(city: str) -> str:
    '''Get the current weather in a city.'''
    return scenarios.get_weather(city)

@tool
def convert_temperature(celsius: float, to: str = "fahrenheit") -> str:
    '''Convert a temperature in degrees Celsius to another unit.'''
    return scenarios.convert_temperature(celsius, to)

with MockLLMServer(scenarios.weather_agent) as server:
    model = ChatOpenAI(model=PROVIDERS["openai"].model, base_url=server.base_url, api_key="k", max_retries=0)
    agent = create_react_agent(model, [get_weather, convert_temperature], prompt=WEATHER.system, name="app-bot")
    agent.invoke({"messages": [{"role": "user", "content": WEATHER.question}]})
spanfold.shutdown()
"""


def test_patched_when_the_app_imports_it(tmp_path: Path) -> None:
    out = tmp_path / "traces"
    script = tmp_path / "app.py"
    script.write_text(APP, encoding="utf-8")
    src = str(Path(spanfold.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-W", "ignore", str(script), str(out)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    (meta,) = [json.loads(line) for line in (out / "traces.meta.jsonl").read_text(encoding="utf-8").splitlines()]
    assert meta["metadata"]["name"] == "app-bot"
    assert meta["metadata"]["span_count"] == 7  # the graph, three model calls, three tool runs
    (events,) = [json.loads(line) for line in (out / "traces.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [e["content"] for e in events if e["role"] == "tool"] == WEATHER_OUTPUTS

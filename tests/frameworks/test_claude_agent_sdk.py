"""Claude Agent SDK under spanfold.init(), end to end: the real SDK and its bundled Claude Code CLI (a subprocess, as
in production) against the embedded mock server's Anthropic route: ``ANTHROPIC_BASE_URL``, a made-up API key, a fresh
``HOME``, and the CLI's telemetry, error reporting, auto-update and non-essential traffic off, so it needs no network
and no login. The CLI runs the agent loop, the model calls and the built-in tools; spanfold sees the SDK's message
stream, and each run (``query()``, a client's turn) folds to one trace, asserted event by event against the messages
the application received. Tested in a venv of its own (``.ci/frameworks``: the wheel bundles the 400 MB CLI)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AgentDefinition,
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultError,
    ResultMessage,
    ToolResultBlock,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)
from opentelemetry.trace import SpanKind

from spanfold.testing import MockLLMServer, MockRequest, Reply, ToolCallSpec, scenarios

from ..conftest import Traced
from .contract import Contract, Framework
from .helpers import folded

SYSTEM = "You are a weather assistant. Use the tools."
QUESTION = "What is the weather in Paris?"


@tool("get_weather", "Get the current weather in a city.", {"city": str})
async def get_weather(args: dict[str, Any]) -> dict[str, Any]:
    if args["city"] == "Atlantis":
        raise ValueError("no forecast for Atlantis")
    return {"content": [{"type": "text", "text": scenarios.get_weather(args["city"])}]}


WEATHER = create_sdk_mcp_server("weather", tools=[get_weather])
TOOL = "mcp__weather__get_weather"


def environment(server: MockLLMServer, home: Path) -> dict[str, str]:
    """The CLI's environment, pointed at the mock server, ``home`` its home."""
    home.mkdir(exist_ok=True)
    return {
        "ANTHROPIC_BASE_URL": server.anthropic_base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[tuple[MockLLMServer, dict[str, str]]]:
    """The mock server and the CLI's environment pointed at it."""
    with MockLLMServer() as server:
        yield server, environment(server, tmp_path / "home")


def options(env: dict[str, str], **more: Any) -> ClaudeAgentOptions:
    settings: dict[str, Any] = {
        "system_prompt": SYSTEM,
        "mcp_servers": {"weather": WEATHER},
        "allowed_tools": [TOOL],
        "max_turns": 6,
    }
    return ClaudeAgentOptions(env=env, cwd=env["HOME"], **{**settings, **more})


def tool_results(messages: list[Any]) -> dict[str, ToolResultBlock]:
    """The tool results the application received, by tool use id."""
    return {
        block.tool_use_id: block
        for message in messages
        if isinstance(message, UserMessage) and isinstance(message.content, list)
        for block in message.content
        if isinstance(block, ToolResultBlock)
    }


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def notes(env: dict[str, str]) -> str:
    """A file the built-in ``Read`` tool may read (in the working directory), which does not exist."""
    return f"{env['HOME']}/notes.txt"


def weather_script(server: MockLLMServer, env: dict[str, str]) -> None:
    server.script(
        Reply.tools([ToolCallSpec(TOOL, {"city": "Paris"}), ToolCallSpec(TOOL, {"city": "Atlantis"})]),
        Reply.tools([ToolCallSpec("Read", {"file_path": notes(env)})]),
        Reply.text("It is sunny in Paris, 18°C."),
    )


def weather_events(received: list[Any], env: dict[str, str]) -> list[dict[str, Any]]:
    """The flat trace of the weather run, its tool outputs as the SDK delivered them (the CLI words its errors)."""
    results = tool_results(received)
    atlantis, read = results["toolu_mock_2"].content, results["toolu_mock_3"].content
    assert isinstance(atlantis, str) and atlantis.startswith("no forecast for Atlantis")
    assert isinstance(read, str) and read.startswith("File does not exist.")
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                call("toolu_mock_1", TOOL, {"city": "Paris"}),
                call("toolu_mock_2", TOOL, {"city": "Atlantis"}),
            ],
        },
        {"role": "tool", "content": scenarios.get_weather("Paris"), "tool_call_id": "toolu_mock_1"},
        {
            "role": "tool",
            "content": atlantis,
            "tool_call_id": "toolu_mock_2",
            "error": {"type": "tool_error", "message": atlantis},
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("toolu_mock_3", "Read", {"file_path": notes(env)})],
        },
        {
            "role": "tool",
            "content": read,
            "tool_call_id": "toolu_mock_3",
            "error": {"type": "tool_error", "message": read},
        },
        {"role": "assistant", "content": "It is sunny in Paris, 18°C."},
    ]


def result_of(received: list[Any]) -> ResultMessage:
    (result,) = [m for m in received if isinstance(m, ResultMessage)]
    return result


def assert_weather_run(
    traced: Traced, global_spans: Any, received: list[Any], env: dict[str, str], name: str = "claude_agent"
) -> None:
    assert traced.one() == weather_events(received, env)
    result = result_of(received)
    (meta,) = traced.metas()
    assert meta["metadata"]["name"] == name
    assert meta["metadata"]["status"] == "complete"
    assert meta["metadata"]["conversation_id"] == result.session_id
    assert meta["metadata"]["cost_usd"] == pytest.approx(result.total_cost_usd)
    assert meta["metadata"]["usage"]["output_tokens"] == result.usage["output_tokens"]  # type: ignore[index]
    assert [(s["kind"], s.get("name")) for s in meta["metadata"]["steps"]] == [
        ("model", None),
        ("tool", TOOL),
        ("tool", TOOL),
        ("model", None),
        ("tool", "Read"),
        ("model", None),
    ]
    spans = global_spans.get_finished_spans()
    (root,) = [s for s in spans if s.parent is None and s.name.startswith("invoke_agent")]
    assert root.name == f"invoke_agent {name}"
    # One trace: the in-process MCP server's own tools/call spans nest under the tool use's span (and fold into it).
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in spans if s.name == f"execute_tool {TOOL}"}
    servers = [s for s in spans if s.kind == SpanKind.SERVER and s.name == "tools/call get_weather"]
    assert sorted(s.parent.span_id for s in servers) == sorted(t.context.span_id for t in tools.values())
    steps = [s for s in spans if s.name.startswith("chat ")]
    assert [s.attributes["gen_ai.response.id"] for s in steps] == ["msg_mock_1", "msg_mock_2", "msg_mock_3"]
    assert all(s.attributes["gen_ai.provider.name"] == "anthropic" for s in steps)
    assert steps[-1].attributes["gen_ai.usage.cost.amount"] == pytest.approx(result.total_cost_usd)


async def test_a_query_is_one_trace_with_its_model_steps_and_tool_runs(
    traced: Traced, global_spans: Any, cli: tuple[MockLLMServer, dict[str, str]]
) -> None:
    server, env = cli
    weather_script(server, env)
    received = [m async for m in query(prompt=QUESTION, options=options(env))]
    assert_weather_run(traced, global_spans, received, env)


async def test_a_streamed_query_with_an_async_prompt_is_the_same_trace(
    traced: Traced, global_spans: Any, cli: tuple[MockLLMServer, dict[str, str]]
) -> None:
    """An async iterable prompt (the SDK's streaming input) and partial messages (``StreamEvent``s) on."""
    server, env = cli
    weather_script(server, env)

    async def prompts() -> AsyncIterator[dict[str, Any]]:
        yield {"type": "user", "message": {"role": "user", "content": QUESTION}, "parent_tool_use_id": None}

    received = [m async for m in query(prompt=prompts(), options=options(env, include_partial_messages=True))]
    assert any(type(m).__name__ == "StreamEvent" for m in received)
    assert_weather_run(traced, global_spans, received, env)


async def test_a_named_agent_names_the_run(
    traced: Traced, global_spans: Any, cli: tuple[MockLLMServer, dict[str, str]]
) -> None:
    """The CLI's ``--agent``: the run is named after it, and its definition's prompt is the system prompt."""
    server, env = cli
    weather_script(server, env)
    agents = {"weather-bot": AgentDefinition(description="Weather", prompt=SYSTEM)}
    settings = options(env, system_prompt=None, agents=agents, extra_args={"agent": "weather-bot"})
    received = [m async for m in query(prompt=QUESTION, options=settings)]
    assert SYSTEM in str(server.requests[0].body["system"])
    assert_weather_run(traced, global_spans, received, env, name="weather-bot")


async def test_each_turn_of_a_client_is_a_trace_of_the_conversation(
    traced: Traced, global_spans: Any, cli: tuple[MockLLMServer, dict[str, str]]
) -> None:
    server, env = cli
    server.script(
        Reply.tools([ToolCallSpec(TOOL, {"city": "Paris"})]),
        Reply.text("Sunny in Paris."),
        Reply.text("Yes, take sunglasses."),
    )
    async with ClaudeSDKClient(options(env)) as client:
        await client.query(QUESTION)
        first = [m async for m in client.receive_response()]
        await client.query("Should I take sunglasses?")
        second = [m async for m in client.receive_response()]
    one, two = traced.traces()
    paris = call("toolu_mock_1", TOOL, {"city": "Paris"})
    turn_one = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": None, "tool_calls": [paris]},
        {"role": "tool", "content": scenarios.get_weather("Paris"), "tool_call_id": "toolu_mock_1"},
        {"role": "assistant", "content": "Sunny in Paris."},
    ]
    assert one == turn_one
    assert two == [
        *turn_one,
        {"role": "user", "content": "Should I take sunglasses?"},
        {"role": "assistant", "content": "Yes, take sunglasses."},
    ]
    metas = [m["metadata"] for m in traced.metas()]
    assert [m["name"] for m in metas] == ["claude_agent", "claude_agent"]
    assert {m["conversation_id"] for m in metas} == {result_of(first).session_id}
    # total_cost_usd adds up the session: each turn's cost is what it added
    costs = [result_of(first).total_cost_usd, result_of(second).total_cost_usd]
    assert [m["cost_usd"] for m in metas] == pytest.approx([costs[0], costs[1] - costs[0]])  # type: ignore[operator]
    roots = [s for s in global_spans.get_finished_spans() if s.parent is None and s.name.startswith("invoke_agent")]
    assert len(roots) == 2 and roots[0].context.trace_id != roots[1].context.trace_id


#: The main agent's ``Agent`` call: its researcher runs in the foreground (the CLI's default is the background).
HANDOFF = {
    "subagent_type": "researcher",
    "description": "Look up the weather",
    "prompt": "Find the weather in Paris.",
    "run_in_background": False,
}


def subagent_replies(request: MockRequest) -> Reply:
    """The main agent hands the question to its researcher (in the foreground), who looks the weather up."""
    body = request.body
    researcher = "You research the weather." in str(body.get("system"))
    answered = sum(1 for m in body["messages"] if '"tool_result"' in str(m).replace("'", '"'))
    if researcher:
        if answered:
            return Reply.text("Paris: sunny, 18°C.")
        return Reply.tools([ToolCallSpec(TOOL, {"city": "Paris"})])
    if answered:
        return Reply.text("The researcher says it is sunny in Paris.")
    return Reply.tools([ToolCallSpec("Agent", HANDOFF)])


async def test_a_subagent_runs_under_its_own_name_inside_its_tool_call(
    traced: Traced, global_spans: Any, cli: tuple[MockLLMServer, dict[str, str]]
) -> None:
    """The ``Agent`` tool's run: the subagent's messages (``parent_tool_use_id``; its text with
    ``forward_subagent_text``) are a thread of their own, under the tool's span."""
    server, env = cli
    server.responder = subagent_replies
    researcher = AgentDefinition(description="Researches the weather", prompt="You research the weather.")
    settings = options(
        env, agents={"researcher": researcher}, allowed_tools=["Agent", TOOL], forward_subagent_text=True
    )
    received = [m async for m in query(prompt=QUESTION, options=settings)]
    handed_back = tool_results(received)["toolu_mock_1"].content
    assert isinstance(handed_back, list)
    (run,) = folded(global_spans)
    assert [(e.role, e.metadata.get("agent")) for e in run.events] == [
        ("system", "claude_agent"),
        ("user", "claude_agent"),
        ("assistant", "claude_agent"),
        ("system", "researcher"),
        ("user", "researcher"),
        ("assistant", "researcher"),
        ("tool", "researcher"),
        ("assistant", "researcher"),
        ("tool", "claude_agent"),
        ("assistant", "claude_agent"),
    ]
    assert traced.one() == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": None, "tool_calls": [call("toolu_mock_1", "Agent", HANDOFF)]},
        {"role": "system", "content": "You research the weather."},
        {"role": "user", "content": "Find the weather in Paris."},
        {"role": "assistant", "content": None, "tool_calls": [call("toolu_mock_2", TOOL, {"city": "Paris"})]},
        {"role": "tool", "content": scenarios.get_weather("Paris"), "tool_call_id": "toolu_mock_2"},
        {"role": "assistant", "content": "Paris: sunny, 18°C."},
        {"role": "tool", "content": "".join(b["text"] for b in handed_back), "tool_call_id": "toolu_mock_1"},
        {"role": "assistant", "content": "The researcher says it is sunny in Paris."},
    ]
    spans = global_spans.get_finished_spans()
    (agent_tool,) = [s for s in spans if s.name == "execute_tool Agent"]
    (sub,) = [s for s in spans if s.name == "invoke_agent researcher"]
    assert sub.parent.span_id == agent_tool.context.span_id
    assert traced.metas()[0]["metadata"]["name"] == "claude_agent"


async def test_a_failed_model_call_fails_the_run(
    traced: Traced, global_spans: Any, cli: tuple[MockLLMServer, dict[str, str]]
) -> None:
    """The CLI tells an API error as an assistant message of its own (``error``), ends with an error result, and the
    SDK raises: the step, the run and the trace fail."""
    server, env = cli
    server.responder = lambda request: Reply.error(400, "the mock refuses", should_retry=False)
    received: list[Any] = []
    with pytest.raises(ResultError):
        async for message in query(prompt=QUESTION, options=options(env)):
            received.append(message)
    assert result_of(received).is_error
    (failed,) = [m for m in received if isinstance(m, AssistantMessage)]
    assert failed.error
    events = traced.one()
    assert [e["role"] for e in events] == ["system", "user", "error"]
    assert events[2]["error"]["type"] == failed.error
    meta = traced.metas()[0]["metadata"]
    assert meta["status"] == "error"
    (root,) = [s for s in global_spans.get_finished_spans() if s.name == "invoke_agent claude_agent"]
    assert not root.status.is_ok
    assert root.attributes["error.type"] == "claude_agent_sdk.ResultError"


async def test_a_run_past_its_turns_is_failed_with_its_steps_kept(
    traced: Traced, global_spans: Any, cli: tuple[MockLLMServer, dict[str, str]]
) -> None:
    server, env = cli
    server.script(Reply.tools([ToolCallSpec(TOOL, {"city": "Paris"})]), Reply.text("unused"))
    received: list[Any] = []
    with pytest.raises(ResultError):
        async for message in query(prompt=QUESTION, options=options(env, max_turns=1)):
            received.append(message)
    assert result_of(received).subtype == "error_max_turns"
    assert [e["role"] for e in traced.one()] == ["system", "user", "assistant", "tool"]
    assert traced.metas()[0]["metadata"]["status"] == "error"


class TestContract(Contract):
    @pytest.fixture
    def framework(self, tmp_path: Path) -> Framework:
        async def run(server: MockLLMServer) -> tuple[list[Any], dict[str, str]]:
            env = environment(server, tmp_path / "home")
            weather_script(server, env)
            return [m async for m in query(prompt=QUESTION, options=options(env))], env

        def trace(events: list[dict[str, Any]], returned: tuple[list[Any], dict[str, str]]) -> None:
            assert events == weather_events(*returned)

        return Framework(run, trace)


async def test_with_content_capture_off_a_run_keeps_its_shape_and_ids(
    traced_off: Traced, global_spans: Any, cli: tuple[MockLLMServer, dict[str, str]]
) -> None:
    server, env = cli
    weather_script(server, env)
    [m async for m in query(prompt=QUESTION, options=options(env))]
    events = traced_off.one()
    assert [(e["role"], [c["id"] for c in e.get("tool_calls") or []], e.get("tool_call_id")) for e in events] == [
        ("system", [], None),
        ("user", [], None),
        ("assistant", ["toolu_mock_1", "toolu_mock_2"], None),
        ("tool", [], "toolu_mock_1"),
        ("tool", [], "toolu_mock_2"),
        ("assistant", ["toolu_mock_3"], None),
        ("tool", [], "toolu_mock_3"),
        ("assistant", [], None),
    ]
    assert all(e["content"] is None for e in events)
    assert [e["error"]["type"] for e in events if "error" in e] == ["tool_error", "tool_error"]
    spans = global_spans.get_finished_spans()
    assert not any(
        "gen_ai.tool.call.arguments" in s.attributes or "gen_ai.tool.call.result" in s.attributes for s in spans
    )


async def test_a_client_turn_past_its_turns_fails_with_the_results_subtype(
    traced: Traced, global_spans: Any, cli: tuple[MockLLMServer, dict[str, str]]
) -> None:
    server, env = cli
    server.script(Reply.tools([ToolCallSpec(TOOL, {"city": "Paris"})]), Reply.text("unused"))
    async with ClaudeSDKClient(options(env, max_turns=1)) as client:
        await client.query(QUESTION)
        received = [m async for m in client.receive_response()]
    assert result_of(received).subtype == "error_max_turns"
    assert [e["role"] for e in traced.one()] == ["system", "user", "assistant", "tool"]
    assert traced.metas()[0]["metadata"]["status"] == "error"
    (root,) = [s for s in global_spans.get_finished_spans() if s.name == "invoke_agent claude_agent"]
    assert root.attributes["error.type"] == "error_max_turns"


#: A 1x1 PNG, as a tool returns a chart and an application attaches a picture.
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


@tool("chart", "Draw the week's weather as a chart.", {"city": str})
async def chart(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "image", "data": PIXEL, "mimeType": "image/png"}]}


async def test_images_in_a_tool_result_and_a_prompt_are_media_parts(
    traced: Traced, cli: tuple[MockLLMServer, dict[str, str]]
) -> None:
    """A tool's image result and a prompt's image block are read as the Anthropic API's blocks are: media, not raw
    blocks or bare types."""
    server, env = cli
    name = "mcp__charts__chart"
    server.script(Reply.tools([ToolCallSpec(name, {"city": "Paris"})]), Reply.text("Here is the chart."))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}}

    async def prompts() -> AsyncIterator[dict[str, Any]]:
        content = [{"type": "text", "text": "Chart the weather like this one."}, image]
        yield {"type": "user", "message": {"role": "user", "content": content}, "parent_tool_use_id": None}

    charts = create_sdk_mcp_server("charts", tools=[chart])
    settings = options(env, mcp_servers={"charts": charts}, allowed_tools=[name])
    received = [m async for m in query(prompt=prompts(), options=settings)]
    (result,) = tool_results(received)["toolu_mock_1"].content[:1]  # (the CLI adds a text block naming its copy)
    assert result == image
    events = traced.one()
    assert events[1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Chart the weather like this one."},
            {"type": "image", "image_url": f"data:image/png;base64,{PIXEL}"},
        ],
    }
    assert events[3]["role"] == "tool" and events[3]["tool_call_id"] == "toolu_mock_1"
    blob = {"type": "blob", "modality": "image", "mime_type": "image/png", "content": PIXEL}
    assert json.loads(events[3]["content"])[0] == blob
    assert events[4] == {"role": "assistant", "content": "Here is the chart."}

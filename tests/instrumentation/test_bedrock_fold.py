"""Amazon Bedrock Runtime, folded: the real boto3 (and aiobotocore) client, SigV4-signed, over real HTTP to the
embedded mock server (``endpoint_url``), ``spanfold.init()``, the Invariant trace asserted event by event against an
oracle built from the agent's own Converse history (no spanfold code)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import boto3
import openai
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from click.testing import CliRunner

import spanfold
from spanfold.cli import main
from spanfold.testing import WEATHER, MockLLMServer, Reply, ToolCallSpec, run_agent, scenarios, streams

from ..conftest import EXPECTED_SHAPE, in_threads, shape

MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"
SYSTEM = WEATHER.system
QUESTION = "Weather in Paris and Tokyo, and Paris in Fahrenheit?"
TOOLS = {"tools": scenarios.WEATHER_TOOLS_BEDROCK}
NO_RETRIES = Config(retries={"total_max_attempts": 1})


def client_for(server: MockLLMServer) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=server.url,
        region_name="us-east-1",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret",
        config=NO_RETRIES,
    )


def invariant_of(system: str | None, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Invariant events a Converse conversation stands for (the oracle)."""
    events: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in history:
        texts, calls = [], []
        for block in message["content"]:
            if "toolResult" in block:
                result = block["toolResult"]
                text = "".join(item["text"] for item in result["content"])
                events.append({"role": "tool", "content": text, "tool_call_id": result["toolUseId"]})
            elif "text" in block:
                texts.append(block["text"])
            elif "toolUse" in block:
                use = block["toolUse"]
                function = {"name": use["name"], "arguments": use["input"]}
                calls.append({"id": use["toolUseId"], "type": "function", "function": function})
        if texts or calls:
            event: dict[str, Any] = {"role": message["role"], "content": "".join(texts) or None}
            if calls:
                event["tool_calls"] = calls
            events.append(event)
    return events


def tool_results(message: dict[str, Any], traced_tools: bool = True) -> dict[str, Any]:
    results = []
    for block in message["content"]:
        if "toolUse" in block:
            use = block["toolUse"]
            if traced_tools:
                text = WEATHER.tool_functions[use["name"]](**use["input"], tool_call_id=use["toolUseId"])
            else:
                text = scenarios.run_weather_tool(use["name"], use["input"])
            results.append({"toolResult": {"toolUseId": use["toolUseId"], "content": [{"text": text}]}})
    return {"role": "user", "content": results}


def agent_loop(client: Any, *, stream: bool = False, traced_tools: bool = True) -> list[dict[str, Any]]:
    """A plain Converse tool loop; returns the history it built (the oracle's input)."""
    history: list[dict[str, Any]] = [{"role": "user", "content": [{"text": QUESTION}]}]
    request = {"modelId": MODEL, "system": [{"text": SYSTEM}], "messages": history, "toolConfig": TOOLS}
    for _ in range(6):
        if stream:
            message = streams.converse_message(client, request)
        else:
            message = client.converse(**request)["output"]["message"]
        history.append(message)
        if not any("toolUse" in block for block in message["content"]):
            return history
        history.append(tool_results(message, traced_tools))
    raise AssertionError("agent did not finish")


def test_single_call(traced: Any, server: MockLLMServer) -> None:
    server.script(Reply.text("Hello there."))
    client_for(server).converse(modelId=MODEL, messages=[{"role": "user", "content": [{"text": "Hi!"}]}])
    assert traced.one() == [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello there."}]
    assert server.last_request.path == "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse"
    assert server.last_request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")


def test_multi_step_parallel_tools(traced: Any, server: MockLLMServer) -> None:
    with spanfold.agent("bedrock-weather"):
        history = agent_loop(client_for(server))
    events = traced.one()
    assert events == invariant_of(SYSTEM, history)
    assert shape(events) == EXPECTED_SHAPE
    assert events[3] == {
        "role": "tool",
        "content": scenarios.get_weather("Paris"),
        "tool_call_id": events[2]["tool_calls"][0]["id"],
    }


def test_multi_step_streamed(traced: Any, server: MockLLMServer) -> None:
    with spanfold.agent("bedrock-weather"):
        history = agent_loop(client_for(server), stream=True)
    events = traced.one()
    assert events == invariant_of(SYSTEM, history)
    assert shape(events) == EXPECTED_SHAPE


async def test_multi_step_async_aiobotocore(traced: Any, server: MockLLMServer) -> None:
    from aiobotocore.session import get_session

    session = get_session()
    async with session.create_client(
        "bedrock-runtime",
        endpoint_url=server.url,
        region_name="us-east-1",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret",
        config=NO_RETRIES,
    ) as client:
        history: list[dict[str, Any]] = [{"role": "user", "content": [{"text": QUESTION}]}]
        request = {"modelId": MODEL, "system": [{"text": SYSTEM}], "messages": history, "toolConfig": TOOLS}
        async with spanfold.agent("bedrock-async"):
            for step in range(6):
                if step % 2:  # streamed and not, alternately
                    response = await client.converse_stream(**request)
                    events = [event async for event in response["stream"]]
                    message = _assemble(events)
                else:
                    message = (await client.converse(**request))["output"]["message"]
                history.append(message)
                if not any("toolUse" in block for block in message["content"]):
                    break
                await asyncio.sleep(0)
                history.append(tool_results(message, traced_tools=False))
    events = traced.one()
    assert events == invariant_of(SYSTEM, history)
    assert shape(events) == EXPECTED_SHAPE


def _assemble(events: list[dict[str, Any]]) -> dict[str, Any]:
    class Replayed:
        def converse_stream(self, **_: Any) -> dict[str, Any]:
            return {"stream": iter(events)}

    return streams.converse_message(Replayed(), {})


def test_loop_without_agent_or_tool_is_one_trace(traced: Any, server: MockLLMServer) -> None:
    history = agent_loop(client_for(server), traced_tools=False)
    assert traced.one() == invariant_of(SYSTEM, history)


def test_multimodal_user_message(traced: Any, server: MockLLMServer) -> None:
    server.script(Reply.text("A cat."))
    content = [{"text": "What is this?"}, {"image": {"format": "png", "source": {"bytes": b"\x89PNG\r\n"}}}]
    client_for(server).converse(modelId=MODEL, messages=[{"role": "user", "content": content}])
    assert traced.one() == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "image_url": "data:image/png;base64,iVBORw0K"},
            ],
        },
        {"role": "assistant", "content": "A cat."},
    ]


def test_server_error_mid_run(traced: Any, server: MockLLMServer) -> None:
    server.respond_with(
        scenarios.failing_call(2, Reply.error(429, "Too many requests, please wait before trying again."))
    )
    with pytest.raises(ClientError) as info, spanfold.agent("bedrock-weather"):
        agent_loop(client_for(server))
    assert info.value.response["Error"]["Code"] == "ThrottlingException"
    assert type(info.value).__name__ == "ThrottlingException"  # the user's exception, as botocore raised it
    events = traced.one()
    assert shape(events)[:5] == EXPECTED_SHAPE[:5]
    assert events[5]["role"] == "error"
    assert events[5]["error"]["type"] == "botocore.errorfactory.ThrottlingException"


def test_stream_broken_off(traced: Any, server: MockLLMServer) -> None:
    server.script(Reply.broken(after_events=4, reply=Reply.text("This answer will never be finished, sorry.")))
    received = []
    with pytest.raises(Exception) as info, spanfold.agent("bot"):
        response = client_for(server).converse_stream(
            modelId=MODEL, messages=[{"role": "user", "content": [{"text": "Talk."}]}]
        )
        for event in response["stream"]:
            received.append(event)
    assert len(received) == 4  # the user saw every event that arrived
    events = traced.one()
    assert events[0] == {"role": "user", "content": "Talk."}
    assert events[-1]["role"] == "error"
    assert events[-1]["error"]["type"].endswith(type(info.value).__qualname__)
    assert spanfold.stats().get("faults", 0) == 0


def test_concurrent_runs_in_threads_do_not_mix(traced: Any, server: MockLLMServer) -> None:
    client = client_for(server)

    def run(n: int) -> None:
        with spanfold.agent(f"bot-{n}"):
            run_agent("bedrock", client, f"Run {n}: weather?", stream=n % 2 == 1)

    in_threads(run, 6)
    traces = traced.traces()
    assert sorted(next(e["content"] for e in events if e["role"] == "user") for events in traces) == [
        f"Run {n}: weather?" for n in range(6)
    ]
    for events in traces:
        assert shape(events) == EXPECTED_SHAPE
        calls = [c["id"] for e in events for c in e.get("tool_calls") or []]
        assert [e["tool_call_id"] for e in events if e["role"] == "tool"] == calls


def test_agent_mixing_bedrock_and_openai(traced: Any, server: MockLLMServer) -> None:
    """One agent: Claude on Bedrock plans (tool calls), the tools run, GPT (chat) writes the answer."""
    gpt = openai.OpenAI(api_key="sk-secret", base_url=server.base_url, max_retries=0)
    server.script(
        Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"}), ToolCallSpec("get_weather", {"city": "Tokyo"})]),
        Reply.text("Paris is sunny, Tokyo is cloudy."),
    )
    with spanfold.agent("mixed"):
        history: list[dict[str, Any]] = [{"role": "user", "content": [{"text": QUESTION}]}]
        request = {"modelId": MODEL, "system": [{"text": SYSTEM}], "messages": history, "toolConfig": TOOLS}
        message = client_for(server).converse(**request)["output"]["message"]
        history.append(message)
        results = tool_results(message)
        summary = "; ".join(r["toolResult"]["content"][0]["text"] for r in results["content"])
        history.append(results)
        chat = gpt.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"Summarise: {summary}"}]
        )
    events = traced.one()
    assert events[:5] == invariant_of(SYSTEM, history)
    assert events[5:] == [
        {"role": "user", "content": f"Summarise: {summary}"},
        {"role": "assistant", "content": chat.choices[0].message.content},
    ]


# --- invoke_model: Claude and Nova bodies ------------------------------------------------------------


def invoke_claude_loop(client: Any, *, stream: bool) -> list[dict[str, Any]]:
    """The Anthropic tool loop over ``invoke_model`` (the Messages body, ``anthropic_version``)."""
    history: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    for _ in range(6):
        body = {
            "anthropic_version": "bedrock-2023-05-31",
            "max_tokens": 512,
            "system": SYSTEM,
            "messages": history,
            "tools": scenarios.WEATHER_TOOLS_ANTHROPIC,
        }
        if stream:
            response = client.invoke_model_with_response_stream(modelId=MODEL, body=json.dumps(body))
            content = _claude_streamed([json.loads(e["chunk"]["bytes"]) for e in response["body"]])
        else:
            content = json.loads(client.invoke_model(modelId=MODEL, body=json.dumps(body))["body"].read())["content"]
        history.append({"role": "assistant", "content": content})
        uses = [b for b in content if b["type"] == "tool_use"]
        if not uses:
            return history
        results = [
            {
                "type": "tool_result",
                "tool_use_id": u["id"],
                "content": scenarios.run_weather_tool(u["name"], u["input"]),
            }
            for u in uses
        ]
        history.append({"role": "user", "content": results})
    raise AssertionError("agent did not finish")


def _claude_streamed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    blocks: dict[int, dict[str, Any]] = {}
    for event in events:
        if event["type"] == "content_block_start":
            blocks[event["index"]] = {**event["content_block"], "_json": ""}
        elif event["type"] == "content_block_delta":
            delta = event["delta"]
            if delta["type"] == "text_delta":
                blocks[event["index"]]["text"] += delta["text"]
            else:
                blocks[event["index"]]["_json"] += delta["partial_json"]
    content = []
    for index in sorted(blocks):
        block = blocks[index]
        raw = block.pop("_json")
        if block["type"] == "tool_use":
            block["input"] = json.loads(raw or "{}")
        content.append(block)
    return content


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_invoke_model_claude_agent(traced: Any, server: MockLLMServer, stream: bool) -> None:
    with spanfold.agent("claude-on-bedrock"):
        history = invoke_claude_loop(client_for(server), stream=stream)
    events = traced.one()
    assert shape(events) == EXPECTED_SHAPE
    assert events[1] == {"role": "user", "content": QUESTION}
    assert events[2]["tool_calls"][0]["id"] == history[1]["content"][0]["id"]
    assert events[-1] == {"role": "assistant", "content": history[-1]["content"][0]["text"]}


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_invoke_model_nova_agent(traced: Any, server: MockLLMServer, stream: bool) -> None:
    client = client_for(server)
    history: list[dict[str, Any]] = [{"role": "user", "content": [{"text": QUESTION}]}]
    with spanfold.agent("nova"):
        for _ in range(6):
            body = json.dumps(
                {
                    "schemaVersion": "messages-v1",
                    "system": [{"text": SYSTEM}],
                    "messages": history,
                    "toolConfig": TOOLS,
                    "inferenceConfig": {"max_new_tokens": 300},
                }
            )
            if stream:
                response = client.invoke_model_with_response_stream(modelId="amazon.nova-pro-v1:0", body=body)
                events = [json.loads(e["chunk"]["bytes"]) for e in response["body"]]
                message = _assemble(events)
            else:
                response = client.invoke_model(modelId="amazon.nova-pro-v1:0", body=body)
                message = json.loads(response["body"].read())["output"]["message"]
            history.append(message)
            if not any("toolUse" in block for block in message["content"]):
                break
            history.append(tool_results(message, traced_tools=False))
    events = traced.one()
    assert events == invariant_of(SYSTEM, history)


def test_demo_bedrock(tmp_path: Path, _global_provider: Any) -> None:
    for stream in (False, True):
        out = tmp_path / str(stream)
        args = ["demo", "--provider", "bedrock", "-o", str(out)] + (["--stream"] if stream else [])
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        (line,) = (out / "traces.jsonl").read_text(encoding="utf-8").splitlines()
        events = json.loads(line)
        assert shape(events) == EXPECTED_SHAPE
        assert [c["id"] for e in events for c in e.get("tool_calls") or []] == [
            "tooluse_mock_1",
            "tooluse_mock_2",
            "tooluse_mock_3",
        ]
        (meta_line,) = (out / "traces.meta.jsonl").read_text(encoding="utf-8").splitlines()
        meta = json.loads(meta_line)["metadata"]
        assert meta["status"] == "complete" and meta["usage"]["input_tokens"] > 0
        assert "Here is the weather: Paris: 18°C, sunny" in result.output

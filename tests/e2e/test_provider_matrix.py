"""The scenarios every API must fold alike: the same weather agent (``spanfold.testing``'s loops) on Chat Completions,
Anthropic Messages and the Responses API, run concurrently, without an agent wrapper, and with a broken stream."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import openai
import pytest

import spanfold
from spanfold.testing import WEATHER, MockLLMServer, Reply, run_agent, scenarios
from spanfold.testing.agents import PROVIDERS

from ..conftest import in_threads
from .provider_specs import SPECS, made_ids

INSTALLED = [name for name, p in PROVIDERS.items() if p.installed()]  # the SDK matrix venvs have two
PREFIX: dict[str, str | None] = {
    "openai": "call_mock_",
    "openai-responses": "call_mock_",
    "anthropic": "toolu_mock_",
    "gemini": None,  # Gemini's calls carry no ids: the fold makes them and pairs the outputs by name and order
}
PREFIX.update({name: spec.call_prefix for name, spec in SPECS.items()})


def shape(events: list[dict[str, Any]]) -> list[str]:
    """Each event as ``role`` or ``role->tool,tool``: the trajectory with the ids left out."""
    out = []
    for event in events:
        calls = [c["function"]["name"] for c in event.get("tool_calls") or []]
        out.append(f"{event['role']}->{','.join(calls)}" if calls else event["role"])
    return out


WEATHER_SHAPE = [
    "system",
    "user",
    "assistant->get_weather,get_weather",
    "tool",
    "tool",
    "assistant->convert_temperature",
    "tool",
    "assistant",
]


def question(n: int) -> str:
    return f"Run {n}: what's the weather in Paris and Tokyo?"


def user_text(events: list[dict[str, Any]]) -> str:
    return next(str(e["content"]) for e in events if e["role"] == "user")


@pytest.mark.parametrize("provider", INSTALLED)
def test_concurrent_agents_in_threads_do_not_mix(traced: Any, server: MockLLMServer, provider: str) -> None:
    chosen = PROVIDERS[provider]
    client = chosen.client(server)

    def run(n: int) -> None:
        with spanfold.agent(f"bot-{n}"):
            chosen.run(client, question(n), stream=n % 2 == 1)

    in_threads(run, 6)
    traces = traced.traces()
    assert len(traces) == 6
    by_question = {user_text(events): events for events in traces}
    assert set(by_question) == {question(n) for n in range(6)}
    metas = {m["metadata"]["name"] for m in traced.metas()}
    assert metas == {f"bot-{n}" for n in range(6)}
    for events in traces:
        assert shape(events) == WEATHER_SHAPE
        calls = [c.get("id") for e in events for c in e.get("tool_calls") or []]
        outputs = [e.get("tool_call_id") for e in events if e["role"] == "tool"]
        assert outputs == calls  # every result answers a call of its own trace, in the model's order
        if PREFIX[provider] is None:
            made_ids(events)  # every call has an id the fold made, each its own
        else:
            assert all(c.startswith(PREFIX[provider]) for c in calls)


async def _anthropic_run(client: anthropic.AsyncAnthropic, n: int) -> None:
    history: list[Any] = [{"role": "user", "content": question(n)}]
    tools = scenarios.WEATHER_TOOLS_ANTHROPIC
    while True:
        message = await client.messages.create(
            model=PROVIDERS["anthropic"].model, max_tokens=512, system=WEATHER.system, messages=history, tools=tools
        )
        history.append({"role": "assistant", "content": message.content})
        uses = [b for b in message.content if b.type == "tool_use"]
        if not uses:
            return
        results = [
            {"type": "tool_result", "tool_use_id": u.id, "content": scenarios.run_weather_tool(u.name, u.input)}
            for u in uses
        ]
        history.append({"role": "user", "content": results})


async def _responses_run(client: openai.AsyncOpenAI, n: int) -> None:
    items: list[Any] = [{"role": "user", "content": question(n)}]
    previous: str | None = None
    while True:
        extra = {"previous_response_id": previous} if previous else {}
        response = await client.responses.create(
            model=PROVIDERS["openai"].model,
            instructions=WEATHER.system,
            input=items,
            tools=scenarios.WEATHER_TOOLS_RESPONSES,
            **extra,  # type: ignore[arg-type]
        )
        previous = response.id
        calls = [i for i in response.output if i.type == "function_call"]
        if not calls:
            return
        items = [
            {
                "type": "function_call_output",
                "call_id": c.call_id,
                "output": scenarios.run_weather_tool(c.name, json.loads(c.arguments)),
            }
            for c in calls
        ]


@pytest.mark.parametrize("provider", ["anthropic", "openai-responses"])
async def test_concurrent_agents_in_asyncio_tasks_do_not_mix(traced: Any, server: MockLLMServer, provider: str) -> None:
    if provider == "anthropic":
        aclient: Any = anthropic.AsyncAnthropic(api_key="k", base_url=server.anthropic_base_url, max_retries=0)
        run = _anthropic_run
    else:
        aclient = openai.AsyncOpenAI(api_key="k", base_url=server.base_url, max_retries=0)
        run = _responses_run  # type: ignore[assignment]

    async def one(n: int) -> None:
        async with spanfold.agent(f"bot-{n}"):
            await run(aclient, n)

    await asyncio.gather(*(one(n) for n in range(12)))
    traces = traced.traces()
    assert len(traces) == 12
    assert {user_text(events) for events in traces} == {question(n) for n in range(12)}
    for events in traces:
        assert shape(events) == WEATHER_SHAPE


def _untraced(fn: Any) -> Any:
    """A plain tool function (no ``@spanfold.tool``), called as the demo calls its tools."""
    return lambda tool_call_id=None, **arguments: fn(**arguments)


@pytest.mark.parametrize("provider", INSTALLED)
def test_no_agent_and_no_tool_decorator_is_one_trace_per_run(traced: Any, server: MockLLMServer, provider: str) -> None:
    """Zero-code grouping: two runs, one after the other, no ``spanfold.agent``: one trace each (the Responses run
    is chained by ``previous_response_id``, its history never re-sent)."""
    chosen = PROVIDERS[provider]
    client = chosen.client(server)
    plain = {tool.name: _untraced(tool.function) for tool in WEATHER.tools}
    for n in range(2):
        chosen.run(client, question(n), tools=plain)
    traces = traced.traces()
    assert [user_text(events) for events in traces] == [question(0), question(1)]
    for events in traces:
        assert shape(events) == WEATHER_SHAPE
        outputs = [e["content"] for e in events if e["role"] == "tool"]
        assert outputs == ["Paris: 18°C, sunny", "Tokyo: 24°C, cloudy", "18°C is 64.4°F"]


def _break_anthropic(client: anthropic.Anthropic) -> list[Any]:
    received = []
    with client.messages.stream(
        model=PROVIDERS["anthropic"].model, max_tokens=64, messages=[{"role": "user", "content": "Talk."}]
    ) as stream:
        for event in stream:
            received.append(event)
    return received


def _break_responses(client: openai.OpenAI) -> list[Any]:
    return list(client.responses.create(model=PROVIDERS["openai"].model, input="Talk.", stream=True))


def _break_chat(client: openai.OpenAI) -> list[Any]:
    return list(
        client.chat.completions.create(
            model=PROVIDERS["openai"].model, messages=[{"role": "user", "content": "Talk."}], stream=True
        )
    )


def _break_gemini(client: Any) -> list[Any]:
    return list(client.models.generate_content_stream(model=PROVIDERS["gemini"].model, contents="Talk."))


BREAKERS = {
    "openai": _break_chat,
    "anthropic": _break_anthropic,
    "openai-responses": _break_responses,
    "gemini": _break_gemini,
}


def _break_bedrock(client: Any) -> list[Any]:
    response = client.converse_stream(
        modelId=PROVIDERS["bedrock"].model, messages=[{"role": "user", "content": [{"text": "Talk."}]}]
    )
    return list(response["stream"])


BREAKERS["bedrock"] = _break_bedrock
PREFIX["bedrock"] = "tooluse_mock_"
BREAKERS.update({name: (lambda client, spec=spec: spec.say(client, "Talk.", True)) for name, spec in SPECS.items()})


@pytest.mark.parametrize("provider", INSTALLED)
def test_stream_broken_off_records_the_error(traced: Any, server: MockLLMServer, provider: str) -> None:
    server.script(Reply.broken(after_events=4, reply=Reply.text("This answer will never be finished, sorry.")))
    client = PROVIDERS[provider].client(server)
    with pytest.raises(Exception) as info, spanfold.agent("bot"):
        BREAKERS[provider](client)
    events = traced.one()
    assert events[0] == {"role": "user", "content": "Talk."}
    assert events[-1]["role"] == "error"
    assert events[-1]["error"]["type"].endswith(type(info.value).__qualname__)
    assert spanfold.stats().get("faults", 0) == 0


def test_a_stitched_run_is_bounded_like_any_trace(tmp_path: Any, _global_provider: Any, server: MockLLMServer) -> None:
    """Without an agent span every call is its own OTel trace; the conversation they are stitched into obeys the
    per-trace limits: past them it is written, marked truncated, and what follows starts a new one."""
    spanfold.init(output=str(tmp_path), max_spans_per_trace=4)
    try:
        run_agent("openai", PROVIDERS["openai"].client(server))  # 3 model calls + 3 tool runs: 6 spans
        assert spanfold.flush(timeout=30)
    finally:
        spanfold.shutdown()
    metas = [json.loads(line)["metadata"] for line in (tmp_path / "traces.meta.jsonl").read_text().splitlines()]
    assert [(m["status"], m["span_count"]) for m in metas] == [("truncated", 5), ("complete", 1)]
    assert spanfold.stats()["traces_truncated"] == 1


# --- the contract every API answers alike (each API's own fold tests keep only what is its own) ---------------------


@pytest.mark.parametrize("provider", INSTALLED)
def test_content_capture_off_writes_no_content(
    tmp_path: Any, _global_provider: Any, server: MockLLMServer, provider: str
) -> None:
    """Capture off: the run's shape, ids and pairing are written, none of what was said (the question, the system
    prompt, tool arguments and outputs, the answers)."""
    chosen = PROVIDERS[provider]
    spanfold.init(output=str(tmp_path), capture_content=False)
    try:
        with spanfold.agent("private-bot"):
            chosen.run(chosen.client(server), "My secret question about Paris and Tokyo")
        assert spanfold.flush(timeout=30)
        text = (tmp_path / "traces.jsonl").read_text()
    finally:
        spanfold.shutdown()
    events = json.loads(text)
    assert shape(events) == WEATHER_SHAPE
    for needle in ("secret", "Paris", "Tokyo", "sunny", "°C", "°F", "weather assistant"):
        assert needle not in text, needle
    assert all(event.get("content") is None for event in events)
    calls = [call for event in events for call in event.get("tool_calls") or []]
    outputs = [event for event in events if event["role"] == "tool"]
    assert [output["tool_call_id"] for output in outputs] == [call["id"] for call in calls]


@pytest.mark.parametrize("provider", INSTALLED)
def test_a_server_error_mid_run_is_its_last_event(traced: Any, server: MockLLMServer, provider: str) -> None:
    """The second model call answers HTTP 500: the application gets the SDK's own exception, and the run's trace
    is what happened before it, then that error (its type the exception's, its message the server's)."""
    server.respond_with(scenarios.failing_call(2, Reply.error(500, "The server had an error processing your request.")))
    chosen = PROVIDERS[provider]
    with pytest.raises(Exception) as info, spanfold.agent("weather-bot"):
        chosen.run(chosen.client(server), question(0))
    events = traced.one()
    assert shape(events) == [*WEATHER_SHAPE[:5], "error"]
    error = events[5]
    assert error["error"]["type"].endswith(type(info.value).__qualname__)
    assert "The server had an error" in error["content"]
    (meta,) = traced.metas()
    assert meta["summary"]["errorCount"] == 1
    assert meta["metadata"]["status"] == "error"

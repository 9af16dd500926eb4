"""The scenario matrix on each added provider (groq, mistral, ollama, cohere): the real SDK over real HTTP to the
embedded mock server speaking that API's wire format, ``spanfold.init()``, the folded trace asserted event by event.

The matrix's other rows run in ``test_provider_matrix.py`` for every demo provider: concurrent runs in threads, no
agent wrapper (stitched), a stream broken off.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import openai
import pytest

import spanfold
from spanfold.testing import MockLLMServer, MockRequest, Reply, scenarios
from spanfold.testing.agents import PROVIDERS

from ..test_demo import ANSWER, QUESTION, expected_events
from .provider_specs import SPECS, Spec, made_ids
from .test_provider_matrix import WEATHER_SHAPE, question, shape, user_text

NAMES = [name for name in SPECS if PROVIDERS[name].installed()]  # the SDK matrix venvs have none of them


@pytest.fixture(params=NAMES)
def spec(request: pytest.FixtureRequest) -> Spec:
    return SPECS[request.param]


def client_for(spec: Spec, server: MockLLMServer) -> Any:
    return PROVIDERS[spec.name].client(server)


def weather_events(spec: Spec) -> list[dict[str, Any]]:
    """The demo's trace on this API (the tool-call ids its mock server gives, or the fold's made ids renumbered:
    :func:`as_expected`)."""
    return expected_events(spec.call_prefix or "made-")


def as_expected(spec: Spec, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A folded trace as :func:`weather_events` gives it: made ids checked and renumbered, for an API without ids."""
    return made_ids(events) if spec.call_prefix is None else events


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_single_call(traced: Any, server: MockLLMServer, spec: Spec, stream: bool) -> None:
    server.script(Reply.text("Hello there, how are you?"))
    assert spec.say(client_for(spec, server), "Hi!", stream) == "Hello there, how are you?"
    assert traced.one() == [
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello there, how are you?"},
    ]
    (meta,) = traced.metas()
    assert meta["metadata"]["models"] == [spec.model]
    usage = meta["metadata"]["usage"]
    if spec.stream_usage or not stream:
        assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_weather_agent_parallel_tools(traced: Any, server: MockLLMServer, spec: Spec, stream: bool) -> None:
    with spanfold.agent("weather-bot"):
        answer = PROVIDERS[spec.name].run(client_for(spec, server), stream=stream)
    assert answer == ANSWER
    assert as_expected(spec, traced.one()) == weather_events(spec)
    (meta,) = traced.metas()
    assert meta["summary"]["toolCallsByName"] == {"convert_temperature": 1, "get_weather": 2}
    assert (meta["metadata"]["usage"].get("input_tokens", 0) > 0) is (spec.stream_usage or not stream)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_async_agents_concurrently(traced: Any, server: MockLLMServer, spec: Spec, stream: bool) -> None:
    client = spec.aclient(server)

    async def one(n: int) -> str:
        async with spanfold.agent(f"bot-{n}"):
            return await spec.async_agent(client, question(n), stream)

    answers = await asyncio.gather(*(one(n) for n in range(4)))
    assert set(answers) == {ANSWER}
    traces = traced.traces()
    assert {user_text(events) for events in traces} == {question(n) for n in range(4)}
    for events in traces:
        assert shape(events) == WEATHER_SHAPE
        calls = [c.get("id") for e in events for c in e.get("tool_calls") or []]
        assert [e.get("tool_call_id") for e in events if e["role"] == "tool"] == calls


def test_server_error_mid_run(traced: Any, server: MockLLMServer, spec: Spec) -> None:
    server.respond_with(scenarios.failing_call(2, Reply.error(500, "Internal server error", should_retry=False)))
    with pytest.raises(Exception) as info, spanfold.agent("weather-bot"):
        PROVIDERS[spec.name].run(client_for(spec, server))
    assert f"{type(info.value).__module__}.{type(info.value).__qualname__}".endswith(spec.server_error.split(".")[-1])
    events = traced.one()
    assert shape(events)[:5] == WEATHER_SHAPE[:5]
    assert events[5]["role"] == "error"
    assert events[5]["error"]["type"].endswith(type(info.value).__qualname__)
    assert spanfold.stats().get("faults", 0) == 0


def test_content_capture_off(tmp_path: Path, _global_provider: Any, server: MockLLMServer, spec: Spec) -> None:
    spanfold.init(output=str(tmp_path), capture_content=False)
    try:
        with spanfold.agent("private-bot"):
            PROVIDERS[spec.name].run(client_for(spec, server))
        assert spanfold.flush(timeout=30)
        text = (tmp_path / "traces.jsonl").read_text()
    finally:
        spanfold.shutdown()
    events = json.loads(text)
    assert shape(events) == WEATHER_SHAPE
    for needle in ("Paris", "Tokyo", "sunny", "°C", "weather assistant", QUESTION[:20]):
        assert needle not in text


def test_agent_mixing_provider_and_openai(traced: Any, server: MockLLMServer, spec: Spec) -> None:
    """One agent: the provider runs the tool loop, then GPT translates the answer; one trace, in order."""
    gpt = openai.OpenAI(api_key="sk-secret", base_url=server.base_url, max_retries=0)

    def translator(request: MockRequest) -> Reply:
        if (request.last_user_text() or "").startswith("Translate:"):
            return Reply.text("Voici la météo.")
        return scenarios.weather_agent(request)

    server.respond_with(translator)
    with spanfold.agent("mixed"):
        answer = PROVIDERS[spec.name].run(client_for(spec, server))
        chat = gpt.chat.completions.create(
            model=PROVIDERS["openai"].model, messages=[{"role": "user", "content": f"Translate: {answer}"}]
        )
    events = traced.one()
    assert as_expected(spec, events[:-2]) == weather_events(spec)
    assert events[-2:] == [
        {"role": "user", "content": f"Translate: {answer}"},
        {"role": "assistant", "content": "Voici la météo."},
    ]
    assert chat.choices[0].message.content == "Voici la météo."
    models = {m for meta in traced.metas() for m in meta["metadata"]["models"]}
    assert models == {spec.model, PROVIDERS["openai"].model}

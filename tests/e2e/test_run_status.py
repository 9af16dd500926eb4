"""How a run ended (issue 36, item 6) and each of its steps' times (item 7), in its metadata: the real openai SDK
over real HTTP to the mock server, ``spanfold.init()`` writing the Invariant trace and its ``.meta.jsonl``."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import openai
import pytest

import spanfold
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec, run_agent, scenarios
from spanfold.testing.agents import PROVIDERS

INVARIANT_KEYS = {"role", "content", "tool_calls", "tool_call_id", "error"}


def client_for(server: MockLLMServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)


def ask(client: openai.OpenAI, text: str) -> Any:
    return client.chat.completions.create(model=PROVIDERS["openai"].model, messages=[{"role": "user", "content": text}])


def metas(traced: Any) -> list[dict[str, Any]]:
    """The metadata records written, once every trace is."""
    assert spanfold.flush(timeout=30)
    return [record["metadata"] for record in traced.metas()]


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_run_that_ends_normally_is_complete_and_lists_its_steps(traced: Any, server: MockLLMServer) -> None:
    with spanfold.agent("weather-bot"):
        run_agent("openai", client_for(server))
    events = traced.one()
    (meta,) = metas(traced)
    assert meta["status"] == "complete" and "error" not in meta
    models = [s for s in meta["steps"] if s["kind"] == "model"]
    assert len(models) == 3  # the demo's three model calls, in the order they started
    tools = [s for s in meta["steps"] if s["kind"] == "tool"]
    assert [t.get("name") for t in tools] == ["get_weather", "get_weather", "convert_temperature"]
    starts = [_time(s["start"]) for s in models]
    assert starts == sorted(starts) and _time(meta["start"]) <= starts[0]
    for step in models:
        assert step["model"] == PROVIDERS["openai"].model and step["duration_ms"] > 0 and "error" not in step
        end = _time(step["start"]).timestamp() * 1000 + step["duration_ms"]
        assert end <= _time(meta["end"]).timestamp() * 1000 + 1  # (milliseconds in the ISO times)
    tokens = {k: sum(s["usage"][k] for s in models) for k in ("input_tokens", "output_tokens")}
    assert tokens == meta["usage"]
    # each model call names its first event in the line: its answer (the event lines carry no span to match)
    firsts = [s["event"] for s in models]
    assert firsts == sorted(firsts) and [events[n]["role"] for n in firsts] == ["assistant"] * 3
    assert "tool_calls" in events[firsts[0]] and events[firsts[-1]]["content"].startswith("Here is the weather")
    # the metadata never changes the event lines: exactly the Invariant format, no times, no metadata
    assert all(set(e) <= INVARIANT_KEYS for e in events)
    assert len(json.dumps(events)) < len(json.dumps(meta["steps"])) * 10


def test_a_failed_last_model_call_ends_the_run_with_its_error(traced: Any, server: MockLLMServer) -> None:
    server.script(Reply.error(500, "upstream exploded", should_retry=False))
    with pytest.raises(openai.InternalServerError):
        ask(client_for(server), "Hi")  # no agent span: a zero-code run of one call
    (meta,) = metas(traced)
    assert meta["status"] == "error"
    assert meta["error"]["type"] == "openai.InternalServerError" and "upstream exploded" in meta["error"]["message"]
    (step,) = meta["steps"]
    assert step["kind"] == "model" and step["error"] == meta["error"]
    assert traced.one()[step["event"]]["role"] == "error"


def test_a_rate_limited_run_under_an_agent_is_an_error(traced: Any, server: MockLLMServer) -> None:
    server.script(Reply.text("one"), Reply.error(429, "Rate limit reached", should_retry=False))
    client = client_for(server)
    with pytest.raises(openai.RateLimitError), spanfold.agent("bot"):
        ask(client, "first")
        ask(client, "second")
    (meta,) = metas(traced)
    assert meta["status"] == "error" and meta["error"]["type"] == "openai.RateLimitError"
    assert [s.get("error", {}).get("type") for s in meta["steps"]] == [None, "openai.RateLimitError"]


def test_a_failed_call_followed_by_one_that_answers_is_complete(traced: Any, server: MockLLMServer) -> None:
    server.script(Reply.error(429, "Rate limit reached", should_retry=False), Reply.text("done"))
    client = client_for(server)
    with spanfold.agent("retrying-bot"):
        with pytest.raises(openai.RateLimitError):
            ask(client, "go")
        ask(client, "go")  # the application retries: its last step answered
    (meta,) = metas(traced)
    assert meta["status"] == "complete" and "error" not in meta


@spanfold.tool
def long_lookup(city: str) -> str:
    """A tool the user interrupts (Ctrl-C)."""
    raise KeyboardInterrupt


def test_ctrl_c_in_a_tool_ends_the_run_with_keyboard_interrupt(traced: Any, server: MockLLMServer) -> None:
    server.script(Reply.tools([ToolCallSpec("long_lookup", {"city": "Paris"})]))
    client = client_for(server)
    with pytest.raises(KeyboardInterrupt), spanfold.agent("interrupted-bot"):
        message = ask(client, "Weather in Paris?").choices[0].message
        for call in message.tool_calls or []:
            long_lookup(**json.loads(call.function.arguments), tool_call_id=call.id)
    (meta,) = metas(traced)
    assert meta["status"] == "error" and meta["error"] == {"type": "KeyboardInterrupt"}


def test_ctrl_c_in_a_tool_of_a_zero_code_run_ends_it_with_keyboard_interrupt(
    traced: Any, server: MockLLMServer
) -> None:
    """No agent span: the run is stitched from its call and its tool run; the tool run ended it."""
    server.script(Reply.tools([ToolCallSpec("long_lookup", {"city": "Paris"})]))
    message = ask(client_for(server), "Weather in Paris?").choices[0].message
    with pytest.raises(KeyboardInterrupt):
        for call in message.tool_calls or []:
            long_lookup(**json.loads(call.function.arguments), tool_call_id=call.id)
    spanfold.shutdown()  # the stitched run is written when it closes
    (meta,) = metas(traced)
    assert meta["status"] == "error" and meta["error"] == {"type": "KeyboardInterrupt"}
    assert [s["kind"] for s in meta["steps"]] == ["model", "tool"]


def test_agentv_metadata_carries_the_steps(tmp_path: Path, _global_provider: Any) -> None:
    spanfold.init(output=str(tmp_path), format="agentv", capture_content=True)
    try:
        with MockLLMServer(scenarios.weather_agent) as server, spanfold.agent("weather-bot"):
            run_agent("openai", client_for(server))
        assert spanfold.flush(timeout=30)
    finally:
        spanfold.shutdown()
    (doc,) = [json.loads(line) for line in (tmp_path / "traces.agentv.jsonl").read_text().splitlines()]
    meta = doc["metadata"]
    assert meta["status"] == "complete"
    models = [s for s in meta["steps"] if s["kind"] == "model"]
    assert [s["model"] for s in models] == [PROVIDERS["openai"].model] * 3 and all(s["duration_ms"] > 0 for s in models)
    # each model step names its span, as the events it made do
    spans = {e["metadata"]["span_id"] for e in doc["trace"] if e.get("metadata", {}).get("role") == "assistant"}
    assert {s["span_id"] for s in models} == spans

"""Real recorded provider responses, replayed byte for byte to the real SDKs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from spanfold.testing import MockLLMServer, RecordingReplay, Reply

OPENAI_FILES = [
    "test_chat_tools.json",
    "test_chat_tool_calls.json",
    "test_chat_tools_streaming.json",
    "test_open_ai_function_calls_tools_streaming_parallel.json",
]
ANTHROPIC_FILES = ["test_anthropic_tools_legacy.json", "test_anthropic_tools_streaming_legacy.json"]


def _recorded_id(interaction: dict[str, Any]) -> str:
    body = interaction["response"]["body"]
    if interaction["response"]["content_type"].startswith("application/json"):
        return str(json.loads(body)["id"])
    first = next(line for line in body.splitlines() if line.startswith("data: {"))
    data = json.loads(first.removeprefix("data: "))
    return str(data.get("id") or data["message"]["id"])


def test_all_recordings_are_covered(recordings: Path) -> None:
    assert sorted(p.name for p in recordings.glob("*.json")) == sorted(OPENAI_FILES + ANTHROPIC_FILES)


@pytest.mark.parametrize("name", OPENAI_FILES)
def test_openai_recordings(server: MockLLMServer, oai: openai.OpenAI, recordings: Path, name: str) -> None:
    replay = server.replay(recordings / name)
    for interaction in replay.interactions:
        body = dict(interaction["request"]["body"])
        if body.pop("stream", False):
            chunks = list(oai.chat.completions.create(**body, stream=True))
            assert chunks and chunks[0].id == _recorded_id(interaction)
            calls = [d for c in chunks for d in (c.choices[0].delta.tool_calls or []) if c.choices]
            assert calls and json.loads(
                "".join(d.function.arguments or "" for d in calls if d.function and d.index == 0)
            )
        else:
            completion = oai.chat.completions.create(**body)
            assert completion.id == _recorded_id(interaction)
            assert completion.choices[0].finish_reason in ("stop", "tool_calls")
    assert replay.remaining == 0
    assert [r.body for r in server.requests] == [i["request"]["body"] for i in replay.interactions]


@pytest.mark.parametrize(
    "name", ["test_chat_tools_streaming.json", "test_open_ai_function_calls_tools_streaming_parallel.json"]
)
def test_openai_streaming_recordings_through_the_helper(
    server: MockLLMServer, oai: openai.OpenAI, recordings: Path, name: str
) -> None:
    replay = server.replay(recordings / name)
    for interaction in replay.interactions:
        body = {k: v for k, v in interaction["request"]["body"].items() if k != "stream"}
        with oai.chat.completions.stream(**body) as stream:
            final = stream.get_final_completion()
        calls = final.choices[0].message.tool_calls or []
        assert calls and all(json.loads(c.function.arguments) for c in calls)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", ANTHROPIC_FILES)
def test_anthropic_recordings(server: MockLLMServer, ant: anthropic.Anthropic, recordings: Path, name: str) -> None:
    replay = server.replay(recordings / name)
    for interaction in replay.interactions:
        body = dict(interaction["request"]["body"])
        if body.pop("stream", False):
            events = list(ant.messages.create(**body, stream=True))
            assert events[0].type == "message_start" and events[0].message.id == _recorded_id(interaction)
            assert events[-1].type == "message_stop"
        else:
            message = ant.messages.create(**body)
            assert message.id == _recorded_id(interaction)
            assert message.stop_reason == "tool_use"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_anthropic_streaming_recording_through_the_async_helper(
    server: MockLLMServer, aant: anthropic.AsyncAnthropic, recordings: Path
) -> None:
    replay = server.replay(recordings / "test_anthropic_tools_streaming_legacy.json")
    body = {k: v for k, v in replay.interactions[0]["request"]["body"].items() if k != "stream"}
    async with aant.messages.stream(**body) as stream:
        final = await stream.get_final_message()
    assert [(b.name, b.input) for b in final.content if b.type == "tool_use"] == [
        ("get_weather", {"location": "San Francisco, CA", "unit": "celsius"}),
        ("get_time", {"timezone": "America/Los_Angeles"}),
    ]
    assert final.usage.output_tokens == 153


def test_replay_runs_out_and_scripts(server: MockLLMServer, oai: openai.OpenAI, recordings: Path) -> None:
    replay = RecordingReplay(recordings / "test_chat_tools.json")
    server.script(*replay.replies())
    assert oai.chat.completions.create(model="m", messages=[]).id == _recorded_id(replay.interactions[0])
    server.responder = replay
    oai.chat.completions.create(model="m", messages=[])
    with pytest.raises(openai.InternalServerError):
        oai.chat.completions.create(model="m", messages=[])
    assert (replay.served, replay.remaining) == (1, 0)


def test_raw_reply(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.raw(418, '{"error": {"message": "teapot", "type": "x", "param": null, "code": null}}'))
    with pytest.raises(openai.APIStatusError) as raised:
        oai.chat.completions.create(model="m", messages=[])
    assert raised.value.status_code == 418

"""The request the SDK sends is exactly the one it would have sent without spanfold, when nested fields are one-shot
iterables (the SDKs accept any iterable for content parts, tool calls, content blocks, tool results and item content).

spanfold records them without draining them: the bytes on the wire are the same with and without spanfold, and the
span still holds the content.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .conftest import Answer, Harness, Script, anthropic_client, openai_client

CHAT_REPLY = {
    "id": "c1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
}
ANTHROPIC_REPLY = {
    "id": "m1",
    "type": "message",
    "role": "assistant",
    "model": "claude-x",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
RESPONSES_REPLY = {
    "id": "r1",
    "object": "response",
    "created_at": 1,
    "model": "gpt-4o",
    "status": "completed",
    "output": [],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}


def _gen(*items: Any) -> Iterator[Any]:
    return (item for item in items)


def _chat(messages: Callable[[], list[Any]]) -> tuple[Any, Any, Callable[[Any], Any]]:
    return openai_client, CHAT_REPLY, lambda c: c.chat.completions.create(model="gpt-4o", messages=messages())


def _anthropic(messages: Callable[[], list[Any]]) -> tuple[Any, Any, Callable[[Any], Any]]:
    return (
        anthropic_client,
        ANTHROPIC_REPLY,
        lambda c: c.messages.create(model="claude-x", max_tokens=8, messages=messages()),
    )


def _responses(items: Callable[[], list[Any]]) -> tuple[Any, Any, Callable[[Any], Any]]:
    return openai_client, RESPONSES_REPLY, lambda c: c.responses.create(model="gpt-4o", input=items())


TOOL_CALL = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}
TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}}

#: name -> (client factory, reply body, call); each call builds its nested generators afresh.
CASES: dict[str, tuple[Any, Any, Callable[[Any], Any]]] = {
    "chat user content parts": _chat(lambda: [{"role": "user", "content": _gen({"type": "text", "text": "q1"})}]),
    "chat assistant tool_calls": _chat(
        lambda: [
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": None, "tool_calls": _gen(TOOL_CALL)},
            {"role": "tool", "tool_call_id": "call_1", "content": _gen({"type": "text", "text": "q1-sunny"})},
        ]
    ),
    "anthropic content blocks": _anthropic(lambda: [{"role": "user", "content": _gen({"type": "text", "text": "q1"})}]),
    "anthropic tool_result content": _anthropic(
        lambda: [
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": [TOOL_USE]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": _gen({"type": "text", "text": "q1-s"})}
                ],
            },
        ]
    ),
    "anthropic document source content": _anthropic(
        lambda: [
            {
                "role": "user",
                "content": [
                    {
                        "type": "document",
                        "source": {"type": "content", "content": _gen({"type": "text", "text": "q1"})},
                    }
                ],
            }
        ]
    ),
    "responses input content": _responses(
        lambda: [{"role": "user", "content": _gen({"type": "input_text", "text": "q1"})}]
    ),
    "responses message item content": _responses(
        lambda: [{"type": "message", "role": "user", "content": _gen({"type": "input_text", "text": "q1"})}]
    ),
    "responses function_call_output parts": _responses(
        lambda: [
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": _gen({"type": "input_text", "text": "q1"})},
        ]
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_nested_one_shot_iterables_go_out_unchanged(name: str, harness: Harness) -> None:
    make_client, reply, call = CASES[name]

    def run() -> list[bytes]:
        script = Script(Answer.json(reply))
        call(make_client(script))
        return script.bodies

    expected = run()
    with harness.on():
        got = run()
    assert [json.loads(b) for b in got] == [json.loads(b) for b in expected]
    assert "q1" in json.dumps(json.loads(expected[0]))  # the generator's items did go out (the test is not vacuous)
    (span,) = harness.take_spans()
    # ... and the span recorded them
    assert "q1" in str(span.attributes.get("gen_ai.input.messages"))

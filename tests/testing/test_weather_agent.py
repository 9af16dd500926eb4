"""The ``weather_agent`` scenario: a full tool loop to the final answer on each API, sync, async and streamed."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest

from spanfold.testing import (
    WEATHER_TOOLS_ANTHROPIC,
    WEATHER_TOOLS_OPENAI,
    WEATHER_TOOLS_RESPONSES,
    MockLLMServer,
    MockRequest,
    convert_temperature,
    get_weather,
    run_weather_tool,
    weather_agent,
)

QUESTION = "What's the weather in Paris and Tokyo, in Fahrenheit?"
FINAL = "Here is the weather: Paris: 18°C, sunny; Tokyo: 24°C, cloudy. In Fahrenheit: 18°C is 64.4°F."
STEPS = [
    [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo"})],
    [("convert_temperature", {"celsius": 18, "to": "fahrenheit"})],
]


@pytest.fixture(autouse=True)
def _agent(server: MockLLMServer) -> None:
    server.responder = weather_agent


def test_tools() -> None:
    assert get_weather("Paris") == "Paris: 18°C, sunny"
    assert get_weather("Tokyo") == "Tokyo: 24°C, cloudy"
    assert get_weather("Atlantis") == get_weather("Atlantis")
    assert convert_temperature(18, "fahrenheit") == "18°C is 64.4°F"
    assert convert_temperature(20, "kelvin") == "20°C is 293.15 K"
    assert run_weather_tool("convert_temperature", {"celsius": 24, "to": "fahrenheit"}) == "24°C is 75.2°F"
    with pytest.raises(ValueError):
        convert_temperature(1, "rankine")
    assert [t["function"]["name"] for t in WEATHER_TOOLS_OPENAI] == ["get_weather", "convert_temperature"]
    assert [t["name"] for t in WEATHER_TOOLS_ANTHROPIC] == [t["name"] for t in WEATHER_TOOLS_RESPONSES]


def test_chat_loop(server: MockLLMServer, oai: openai.OpenAI) -> None:
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    steps = []
    for _ in range(4):
        message = (
            oai.chat.completions.create(model="m", messages=messages, tools=WEATHER_TOOLS_OPENAI).choices[0].message
        )
        if not message.tool_calls:
            break
        calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls]  # type: ignore[union-attr]
        steps.append([(name, args) for _, name, args in calls])
        messages.append(message.model_dump(exclude_none=True))
        messages.extend({"role": "tool", "tool_call_id": i, "content": run_weather_tool(n, a)} for i, n, a in calls)
    assert steps == STEPS
    assert message.content == FINAL
    assert len(server.requests) == 3


def test_chat_loop_streamed(server: MockLLMServer, oai: openai.OpenAI) -> None:
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    steps = []
    for _ in range(4):
        with oai.chat.completions.stream(model="m", messages=messages, tools=WEATHER_TOOLS_OPENAI) as stream:
            message = stream.get_final_completion().choices[0].message
        if not message.tool_calls:
            break
        calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls]
        steps.append([(name, args) for _, name, args in calls])
        messages.append(
            {"role": "assistant", "tool_calls": [c.model_dump(exclude={"index"}) for c in message.tool_calls]}
        )
        messages.extend({"role": "tool", "tool_call_id": i, "content": run_weather_tool(n, a)} for i, n, a in calls)
    assert steps == STEPS
    assert message.content == FINAL


def _anthropic_turn(message: anthropic.types.Message, messages: list[Any]) -> list[Any] | None:
    """Append the assistant turn and the tool results; the calls made, or None at the final answer."""
    calls = [block for block in message.content if block.type == "tool_use"]
    if not calls:
        return None
    messages.append(
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in message.content]}
    )
    messages.append(
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": c.id, "content": run_weather_tool(c.name, c.input)}
                for c in calls
            ],
        }
    )
    return [(c.name, c.input) for c in calls]


def test_messages_loop(server: MockLLMServer, ant: anthropic.Anthropic) -> None:
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    steps = []
    for _ in range(4):
        message = ant.messages.create(model="claude", max_tokens=500, messages=messages, tools=WEATHER_TOOLS_ANTHROPIC)
        calls = _anthropic_turn(message, messages)
        if calls is None:
            break
        assert message.stop_reason == "tool_use"
        steps.append(calls)
    assert steps == STEPS
    assert message.stop_reason == "end_turn"
    assert message.content[0].type == "text" and message.content[0].text == FINAL


async def test_messages_loop_async_streamed(server: MockLLMServer, aant: anthropic.AsyncAnthropic) -> None:
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    steps = []
    for _ in range(4):
        async with aant.messages.stream(
            model="claude", max_tokens=500, messages=messages, tools=WEATHER_TOOLS_ANTHROPIC
        ) as stream:
            message = await stream.get_final_message()
        calls = _anthropic_turn(message, messages)
        if calls is None:
            break
        steps.append(calls)
    assert steps == STEPS
    assert message.content[0].type == "text" and message.content[0].text == FINAL


def _function_outputs(response: Any) -> tuple[list[Any], list[dict[str, Any]]]:
    calls = [item for item in response.output if item.type == "function_call"]
    outputs = [
        {
            "type": "function_call_output",
            "call_id": c.call_id,
            "output": run_weather_tool(c.name, json.loads(c.arguments)),
        }
        for c in calls
    ]
    return [(c.name, json.loads(c.arguments)) for c in calls], outputs


def test_responses_loop_resending_the_input(server: MockLLMServer, oai: openai.OpenAI) -> None:
    items: list[Any] = [{"role": "user", "content": QUESTION}]
    steps = []
    for _ in range(4):
        response = oai.responses.create(model="m", input=items, tools=WEATHER_TOOLS_RESPONSES)  # type: ignore[arg-type]
        calls, outputs = _function_outputs(response)
        if not calls:
            break
        steps.append(calls)
        items += [item.model_dump(exclude_none=True) for item in response.output] + outputs
    assert steps == STEPS
    assert response.output_text == FINAL


def test_responses_loop_with_previous_response_id(server: MockLLMServer, oai: openai.OpenAI) -> None:
    steps = []
    response = oai.responses.create(model="m", input=QUESTION, tools=WEATHER_TOOLS_RESPONSES)  # type: ignore[arg-type]
    for _ in range(4):
        calls, outputs = _function_outputs(response)
        if not calls:
            break
        steps.append(calls)
        response = oai.responses.create(
            model="m",
            previous_response_id=response.id,
            input=outputs,  # type: ignore[arg-type]
            tools=WEATHER_TOOLS_RESPONSES,  # type: ignore[arg-type]
        )
    assert steps == STEPS
    assert response.output_text == FINAL
    assert [r.body.get("previous_response_id") for r in server.requests] == [None, "resp_mock_1", "resp_mock_2"]


async def test_responses_loop_async_streamed(server: MockLLMServer, aoai: openai.AsyncOpenAI) -> None:
    steps = []
    previous: str | None = None
    outputs: list[Any] = [{"role": "user", "content": QUESTION}]
    for _ in range(4):
        kwargs: dict[str, Any] = {"previous_response_id": previous} if previous else {}
        async with aoai.responses.stream(model="m", input=outputs, tools=WEATHER_TOOLS_RESPONSES, **kwargs) as stream:
            response = await stream.get_final_response()
        calls, outputs = _function_outputs(response)
        if not calls:
            break
        steps.append(calls)
        previous = response.id
    assert steps == STEPS
    assert response.output_text == FINAL


def test_unknown_ids_and_unparseable_results() -> None:
    """Results whose call ids are unknown count as weather first; no number in Paris's result means 20."""
    body = {
        "messages": [
            {"role": "user", "content": QUESTION},
            {"role": "tool", "tool_call_id": "x1", "content": "Paris: lovely"},
            {"role": "tool", "tool_call_id": "x2", "content": "Tokyo: 24°C"},
        ]
    }
    reply = weather_agent(MockRequest("chat", "/v1/chat/completions", body))
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("convert_temperature", {"celsius": 20, "to": "fahrenheit"})
    ]


def test_one_missing_city_is_asked_again() -> None:
    body = {
        "messages": [
            {"role": "user", "content": QUESTION},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "a",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Tokyo"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "a", "content": "Tokyo: 24°C, cloudy"},
        ]
    }
    reply = weather_agent(MockRequest("chat", "/v1/chat/completions", body))
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("get_weather", {"city": "Paris"})]


def test_a_new_question_restarts_the_loop() -> None:
    body = {
        "input": [
            {"role": "user", "content": "first"},
            {"type": "function_call_output", "call_id": "c", "output": "18°C is 64.4°F"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "done", "annotations": []}]},
            {"role": "user", "content": "again?"},
        ]
    }
    reply = weather_agent(MockRequest("responses", "/v1/responses", body))
    assert [c.arguments["city"] for c in reply.tool_calls] == ["Paris", "Tokyo"]

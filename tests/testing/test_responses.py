"""The Responses API through the real openai SDK: JSON, the raw event stream, the stream helper, sync and async."""

from __future__ import annotations

import json

import openai
import pytest

from spanfold.testing import MockLLMServer, Reply, ToolCallSpec, count_tokens

PARIS_TOKYO = [ToolCallSpec("get_weather", {"city": "Paris"}), ToolCallSpec("get_weather", {"city": "Tokyo"})]
# prompt_of(input="hi", instructions="Be brief.") is 41 bytes: 11 tokens


def test_text_response(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.text("Hello there, world!"))
    response = oai.responses.create(model="gpt-5-mini", input="hi", instructions="Be brief.")

    assert (response.id, response.object, response.status, response.model) == (
        "resp_mock_1",
        "response",
        "completed",
        "gpt-5-mini",
    )
    assert response.output_text == "Hello there, world!"
    [item] = response.output
    assert item.type == "message" and item.id == "msg_mock_1" and item.status == "completed"
    assert [(c.type, c.text) for c in item.content if c.type == "output_text"] == [
        ("output_text", "Hello there, world!")
    ]
    assert response.instructions == "Be brief."
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (11, 5, 16)
    request = server.last_request
    assert (request.api, request.path, request.stream) == ("responses", "/v1/responses", False)
    assert request.input_items == [{"role": "user", "content": "hi"}]


def test_function_call_items(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.tools(PARIS_TOKYO, text="Checking."))
    response = oai.responses.create(model="m", input=[{"role": "user", "content": "weather?"}])

    assert [item.type for item in response.output] == ["message", "function_call", "function_call"]
    calls = [item for item in response.output if item.type == "function_call"]
    assert [(c.id, c.call_id, c.name, c.arguments, c.status) for c in calls] == [
        ("fc_mock_1", "call_mock_1", "get_weather", '{"city":"Paris"}', "completed"),
        ("fc_mock_2", "call_mock_2", "get_weather", '{"city":"Tokyo"}', "completed"),
    ]
    assert response.output_text == "Checking."
    assert response.usage is not None
    assert response.usage.output_tokens == count_tokens(
        'Checking.get_weather{"city":"Paris"}get_weather{"city":"Tokyo"}'
    )


def test_raw_event_stream(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})], text="Hi there"))
    events = list(oai.responses.create(model="m", input="hi", stream=True))

    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.type for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    created = events[0]
    assert created.type == "response.created"
    assert created.response.status == "in_progress" and created.response.output == []
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert deltas == ["Hi", " there"]
    fragments = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert json.loads("".join(fragments)) == {"city": "Paris"}
    added = [e for e in events if e.type == "response.output_item.added"][1]
    assert added.item.type == "function_call" and added.item.arguments == "" and added.item.call_id == "call_mock_1"
    args_done = next(e for e in events if e.type == "response.function_call_arguments.done")
    assert (args_done.item_id, args_done.output_index, args_done.arguments) == ("fc_mock_1", 1, '{"city":"Paris"}')
    completed = events[-1]
    assert completed.type == "response.completed"
    assert completed.response.status == "completed" and completed.response.output_text == "Hi there"
    assert completed.response.usage is not None and completed.response.usage.input_tokens == count_tokens(
        '{"input":"hi"}'
    )


def test_stream_helper_final_response(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.tools(PARIS_TOKYO, text="Checking both."))
    with oai.responses.stream(model="m", input="hi") as stream:
        snapshots = [e.snapshot for e in stream if e.type == "response.function_call_arguments.delta"]
        final = stream.get_final_response()

    assert snapshots[-1] == '{"city":"Tokyo"}'
    assert final.output_text == "Checking both."
    assert [(i.call_id, i.name, i.arguments) for i in final.output if i.type == "function_call"] == [
        ("call_mock_1", "get_weather", '{"city":"Paris"}'),
        ("call_mock_2", "get_weather", '{"city":"Tokyo"}'),
    ]


def test_unknown_previous_response_id_is_a_400(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.text("never sent"))
    with pytest.raises(openai.BadRequestError) as raised:
        oai.responses.create(model="m", input="hi", previous_response_id="resp_nope")
    assert raised.value.status_code == 400
    assert raised.value.code == "previous_response_not_found"
    assert raised.value.param == "previous_response_id"
    assert server.pending == 1  # the scripted reply is kept for the next request


def test_previous_response_id_history(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]), Reply.text("Done."))
    first = oai.responses.create(model="m", input="weather?")
    oai.responses.create(
        model="m",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": "call_mock_1", "output": "Paris: 18°C, sunny"}],
    )
    request = server.last_request
    assert [item.get("type", "message") for item in request.history] == ["message", "function_call"]
    assert [(t.role, t.text) for t in request.turns()] == [
        ("user", "weather?"),
        ("assistant", ""),
        ("tool", "Paris: 18°C, sunny"),
    ]
    assert request.turns()[1].tool_calls[0].id == "call_mock_1"


async def test_async_create_stream_and_helper(server: MockLLMServer, aoai: openai.AsyncOpenAI) -> None:
    server.script(Reply.text("Async hello"), Reply.tools(PARIS_TOKYO), Reply.text("Helper"))
    response = await aoai.responses.create(model="m", input="hi")
    assert response.output_text == "Async hello"

    stream = await aoai.responses.create(model="m", input="hi", stream=True)
    arguments: dict[str, str] = {}
    async for event in stream:
        if event.type == "response.function_call_arguments.done":
            arguments[event.item_id] = event.arguments
    assert arguments == {"fc_mock_1": '{"city":"Paris"}', "fc_mock_2": '{"city":"Tokyo"}'}

    async with aoai.responses.stream(model="m", input="hi") as helper:
        final = await helper.get_final_response()
    assert final.output_text == "Helper" and final.id == "resp_mock_3"

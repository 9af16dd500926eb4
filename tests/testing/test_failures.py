"""Error replies raise the SDKs' own exceptions; a broken stream raises in the middle of the iteration."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import openai
import pytest

from spanfold.testing import MockLLMServer, MockRequest, Reply, ToolCallSpec

HI: list[Any] = [{"role": "user", "content": "hi"}]
BROKEN_STREAM = (openai.APIConnectionError, anthropic.APIConnectionError, httpx2.HTTPError)

STATUSES = [
    (400, openai.BadRequestError, anthropic.BadRequestError, "invalid_request_error"),
    (401, openai.AuthenticationError, anthropic.AuthenticationError, "authentication_error"),
    (404, openai.NotFoundError, anthropic.NotFoundError, "not_found_error"),
    (429, openai.RateLimitError, anthropic.RateLimitError, "rate_limit_error"),
    (500, openai.InternalServerError, anthropic.InternalServerError, "api_error"),
    (529, openai.InternalServerError, anthropic.OverloadedError, "overloaded_error"),
]


@pytest.mark.parametrize(("status", "openai_error", "anthropic_error", "anthropic_type"), STATUSES)
def test_error_statuses(
    server: MockLLMServer,
    oai: openai.OpenAI,
    ant: anthropic.Anthropic,
    status: int,
    openai_error: type[openai.APIStatusError],
    anthropic_error: type[anthropic.APIStatusError],
    anthropic_type: str,
) -> None:
    server.script(*[Reply.error(status, f"failure {status}")] * 3)
    with pytest.raises(openai_error) as chat:
        oai.chat.completions.create(model="m", messages=HI)
    assert chat.value.status_code == status
    assert isinstance(chat.value.body, dict) and chat.value.body["message"] == f"failure {status}"
    assert set(chat.value.body) == {"message", "type", "param", "code"}
    assert chat.value.request_id == "req_mock_1"

    with pytest.raises(openai_error) as responses:
        oai.responses.create(model="m", input="hi", stream=True)
    assert responses.value.status_code == status

    with pytest.raises(anthropic_error) as messages:
        ant.messages.create(model="m", max_tokens=5, messages=HI)
    assert messages.value.status_code == status
    assert messages.value.body == {"type": "error", "error": {"type": anthropic_type, "message": f"failure {status}"}}
    assert messages.value.request_id == "req_mock_3"


def test_openai_error_fields(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(
        Reply.error(429, "Rate limit reached"),
        Reply.error(400, "Bad tool", type="invalid_request_error", code="bad_tool"),
    )
    with pytest.raises(openai.RateLimitError) as limited:
        oai.chat.completions.create(model="m", messages=HI)
    assert (limited.value.type, limited.value.code, limited.value.param) == ("requests", "rate_limit_exceeded", None)
    with pytest.raises(openai.BadRequestError) as bad:
        oai.chat.completions.create(model="m", messages=HI, stream=True)
    assert (bad.value.type, bad.value.code, bad.value.message) == (
        "invalid_request_error",
        "bad_tool",
        "Error code: 400 - Bad tool",
    )


def test_should_retry_false_is_obeyed_by_default_clients(server: MockLLMServer) -> None:
    server.script(Reply.error(503, "down", should_retry=False), Reply.error(503, "down", should_retry=False))
    with openai.OpenAI(api_key="k", base_url=server.base_url) as client, pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="m", messages=HI)
    with (
        anthropic.Anthropic(api_key="k", base_url=server.anthropic_base_url) as ant_client,
        pytest.raises(anthropic.InternalServerError),
    ):
        ant_client.messages.create(model="m", max_tokens=5, messages=HI)
    assert len(server.requests) == 2


async def test_async_errors(server: MockLLMServer, aoai: openai.AsyncOpenAI, aant: anthropic.AsyncAnthropic) -> None:
    server.script(Reply.error(500, "boom"), Reply.error(429, "slow"))
    with pytest.raises(openai.InternalServerError):
        await aoai.chat.completions.create(model="m", messages=HI)
    with pytest.raises(anthropic.RateLimitError):
        await aant.messages.create(model="m", max_tokens=5, messages=HI, stream=True)


def test_responder_exception_is_a_500(server: MockLLMServer, oai: openai.OpenAI) -> None:
    def responder(request: MockRequest) -> Reply:
        raise RuntimeError("scenario bug")

    server.responder = responder
    with pytest.raises(openai.InternalServerError) as raised:
        oai.chat.completions.create(model="m", messages=HI)
    assert "scenario bug" in str(raised.value)
    assert [type(e) for e in server.errors] == [RuntimeError]


# -- broken streams -------------------------------------------------------------------------------------------------


def test_broken_chat_stream(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.broken(after_events=3, reply=Reply.text("one two three four five")))
    received = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in oai.chat.completions.create(model="m", messages=HI, stream=True):
            received.append(chunk)
    assert [c.choices[0].delta.content for c in received] == ["", "one", " two"]


def test_broken_chat_stream_helper(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.broken(5, Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})])))
    with pytest.raises(openai.APIConnectionError), oai.chat.completions.stream(model="m", messages=HI) as stream:
        stream.get_final_completion()


def test_broken_messages_stream(server: MockLLMServer, ant: anthropic.Anthropic) -> None:
    server.script(Reply.broken(after_events=4, reply=Reply.text("one two three")))
    received = []
    with pytest.raises(BROKEN_STREAM):
        for event in ant.messages.create(model="m", max_tokens=5, messages=HI, stream=True):
            received.append(event.type)
    assert received == ["message_start", "content_block_start", "content_block_delta"]  # the 3rd event was a ping


def test_broken_messages_stream_helper(server: MockLLMServer, ant: anthropic.Anthropic) -> None:
    server.script(Reply.broken(6))
    with pytest.raises(BROKEN_STREAM), ant.messages.stream(model="m", max_tokens=5, messages=HI) as stream:
        stream.get_final_message()


def test_broken_responses_stream(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.broken(after_events=5))
    received = []
    with pytest.raises(openai.APIConnectionError):
        for event in oai.responses.create(model="m", input="hi", stream=True):
            received.append(event.type)
    assert received == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
    ]


def test_broken_non_streaming_reply(server: MockLLMServer, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    server.script(Reply.broken(), Reply.broken())
    with pytest.raises(openai.APIConnectionError):
        oai.chat.completions.create(model="m", messages=HI)
    with pytest.raises(BROKEN_STREAM):
        ant.messages.create(model="m", max_tokens=5, messages=HI)


def test_connection_is_usable_after_a_broken_stream(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.broken(1), Reply.text("fine"))
    with pytest.raises(openai.APIConnectionError):
        list(oai.chat.completions.create(model="m", messages=HI, stream=True))
    assert oai.chat.completions.create(model="m", messages=HI).choices[0].message.content == "fine"


async def test_async_broken_streams(
    server: MockLLMServer, aoai: openai.AsyncOpenAI, aant: anthropic.AsyncAnthropic
) -> None:
    server.script(Reply.broken(2), Reply.broken(2), Reply.broken(3))
    with pytest.raises(openai.APIConnectionError):
        async for _ in await aoai.chat.completions.create(model="m", messages=HI, stream=True):
            pass
    with pytest.raises(openai.APIConnectionError):
        async for _ in await aoai.responses.create(model="m", input="hi", stream=True):
            pass
    with pytest.raises(BROKEN_STREAM):
        async with aant.messages.stream(model="m", max_tokens=5, messages=HI) as stream:
            await stream.get_final_message()


def test_broken_wraps_only_messages() -> None:
    with pytest.raises(ValueError):
        Reply.broken(2, Reply.error(500, "no"))


def test_broken_never_sends_the_final_event(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.broken(after_events=1000, reply=Reply.text("all of it")))
    received = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in oai.chat.completions.create(model="m", messages=HI, stream=True):
            received.append(chunk)
    assert received[-1].choices[0].finish_reason == "stop"  # everything but [DONE]

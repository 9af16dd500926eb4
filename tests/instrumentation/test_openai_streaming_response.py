"""openai's ``with_streaming_response``: spanfold never reads the body, but follows what the user's own ``.parse()``
gives (the OpenAI Agents SDK streams every ``run_streamed`` model call this way). Real SDK, real HTTP."""

from __future__ import annotations

import gc
import json
from typing import Any

import openai

from spanfold.testing import MockLLMServer, Reply

from .conftest import Spans

MODEL = "gpt-4.1-mini"


def _text(spans: Spans, span: Any = None) -> Any:
    return spans.attrs(span)["gen_ai.output.messages"][0]["parts"][0]["content"]


def test_parsed_stream_is_followed(spans: Spans) -> None:
    with MockLLMServer() as server:
        server.script(Reply.text("Streamed, parsed."))
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        with client.responses.with_streaming_response.create(model=MODEL, input="Hi", stream=True) as response:
            assert spans.finished() == []
            events = list(response.parse())
    assert events[-1].type == "response.completed"
    assert _text(spans) == "Streamed, parsed."


async def test_async_parsed_stream_and_parsed_response(spans: Spans) -> None:
    with MockLLMServer() as server:
        server.script(Reply.text("Async stream."), Reply.text("Async whole."))
        client = openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        async with client.responses.with_streaming_response.create(model=MODEL, input="A", stream=True) as response:
            stream = await response.parse()
            assert [e.type async for e in stream][-1] == "response.completed"
        async with client.responses.with_streaming_response.create(model=MODEL, input="B") as response:
            whole = await response.parse()
    assert whole.output_text == "Async whole."
    assert [_text(spans, s) for s in spans.finished()] == ["Async stream.", "Async whole."]


def test_body_read_by_the_user_is_left_alone(spans: Spans) -> None:
    with MockLLMServer() as server:
        server.script(Reply.text("Bytes."))
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        with client.responses.with_streaming_response.create(model=MODEL, input="Hi") as response:
            body = json.loads(response.read())
            assert spans.finished() == []
        (span,) = spans.finished()  # ended when the response closed, with no output read by spanfold
    assert body["output"][0]["content"][0]["text"] == "Bytes."
    assert "gen_ai.output.messages" not in spans.attrs(span)
    del response
    gc.collect()
    assert len(spans.finished()) == 1

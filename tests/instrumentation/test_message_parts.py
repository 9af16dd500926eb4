"""Message parts as the conventions define them now: a part of a kind they name no type for is a ``generic`` part
(``generic_type`` its kind); a named kind with nothing recorded keeps its type (an encrypted reasoning block); output
messages carry ``finish_reason`` again (deprecated in the conventions, still required by Arize Phoenix: issue 46),
beside the span's ``gen_ai.response.finish_reasons``. The real SDKs over real HTTP to the mock server; the flat trace
the fold makes of them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

import spanfold
from spanfold.instrumentation.providers.anthropic.patches import AnthropicInstrumentor
from spanfold.testing import MockLLMServer, Reply

from .conftest import Spans, spans_of


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer() as srv:
        yield srv


def test_a_kind_with_no_type_is_a_generic_part(spans: Spans, server: MockLLMServer) -> None:
    server.script(Reply.text("Heard."))
    client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
    content = [{"type": "text", "text": "Listen:"}, {"type": "hologram", "hologram": {"id": "h1"}}]
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": content}])  # type: ignore[misc,list-item]
    attrs = spans.attrs()
    assert attrs["gen_ai.input.messages"] == [
        {
            "role": "user",
            "parts": [{"type": "text", "content": "Listen:"}, {"type": "generic", "generic_type": "hologram"}],
        }
    ]
    assert attrs["gen_ai.output.messages"] == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Heard."}], "finish_reason": "stop"}
    ]
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)


def test_a_named_kind_with_nothing_recorded_keeps_its_type(server: MockLLMServer) -> None:
    body = {
        "id": "msg_r",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5",
        "content": [{"type": "redacted_thinking", "data": "c2VjcmV0"}, {"type": "text", "text": "Done."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 2},
    }
    server.script(Reply.raw(200, json.dumps(body)))
    with spans_of(AnthropicInstrumentor()) as aspans:
        client = anthropic.Anthropic(api_key="k", base_url=server.anthropic_base_url, max_retries=0)
        client.messages.create(model="claude-sonnet-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}])
        attrs = aspans.attrs()
    assert attrs["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [{"type": "reasoning"}, {"type": "text", "content": "Done."}],
            "finish_reason": "stop",
        }
    ]
    assert attrs["gen_ai.response.finish_reasons"] == ("end_turn",)


def test_the_fold_shows_a_generic_part_as_before(traced: Any, server: MockLLMServer) -> None:
    """The flat trace of a request with a generic part is the one the older ``{"type": kind}`` part made: a part
    with nothing but its kind adds nothing to the event."""
    server.script(Reply.text("Heard."))
    client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
    content = [{"type": "text", "text": "Listen:"}, {"type": "hologram", "hologram": {"id": "h1"}}]
    with spanfold.agent("parts"):
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": content}])  # type: ignore[misc,list-item]
    assert traced.one() == [
        {"role": "user", "content": "Listen:"},
        {"role": "assistant", "content": "Heard."},
    ]

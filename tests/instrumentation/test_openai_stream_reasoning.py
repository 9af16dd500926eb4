"""Streamed ``reasoning_content`` (sent by some OpenAI-compatible servers, not a declared SDK field) lands in a
reasoning part, before the text, and nothing else about the stream changes."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai

from .conftest import Spans


def _sse(deltas: list[dict[str, Any]]) -> bytes:
    base = {"id": "chatcmpl-r", "object": "chat.completion.chunk", "created": 1, "model": "deepseek-reasoner"}
    events = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"


def test_reasoning_deltas_become_a_reasoning_part(spans: Spans) -> None:
    body = _sse(
        [
            {"role": "assistant", "reasoning_content": "The user wants "},
            {"reasoning_content": "a greeting."},
            {"content": "Hello"},
            {"content": "!"},
        ]
    )
    client = openai.OpenAI(
        api_key="sk-test",
        base_url="http://test.invalid/v1",
        max_retries=0,
        http_client=httpx2.Client(
            transport=httpx2.MockTransport(
                lambda _: httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)
            )
        ),
    )
    chunks = list(
        client.chat.completions.create(
            model="deepseek-reasoner", messages=[{"role": "user", "content": "Hi"}], stream=True
        )
    )
    assert [c.choices[0].delta.content for c in chunks] == [None, None, "Hello", "!", None]
    (output,) = spans.attrs()["gen_ai.output.messages"]
    assert output["parts"] == [
        {"type": "reasoning", "content": "The user wants a greeting."},
        {"type": "text", "content": "Hello!"},
    ]
    assert output["finish_reason"] == "stop"

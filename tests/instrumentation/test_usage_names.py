"""Token usage under the conventions' current names: the cache-write count as ``cache_write`` (renamed from
``cache_creation``), reasoning output tokens, per-modality counts where the provider reports them, each breakdown
count only when non-zero; none of them on an agent span. The real SDKs over real HTTP to the mock server, answering
with the provider's own usage shapes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

import spanfold
from spanfold.instrumentation.providers.gemini.patches import GeminiInstrumentor
from spanfold.testing import WEATHER, MockLLMServer, Reply
from spanfold.testing.agents import PROVIDERS

from .conftest import Spans, spans_of

USAGE = "gen_ai.usage."


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer() as srv:
        yield srv


def usage_of(attrs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attrs.items() if k.startswith(USAGE)}


def test_openai_chat_reasoning_cache_and_audio_counts(spans: Spans, server: MockLLMServer) -> None:
    body = {
        "id": "chatcmpl-usage",
        "object": "chat.completion",
        "created": 1,
        "model": "o4-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi."}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 120,
            "completion_tokens": 80,
            "total_tokens": 200,
            "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 10},
            "completion_tokens_details": {"reasoning_tokens": 50, "audio_tokens": 0},
        },
    }
    server.script(Reply.raw(200, json.dumps(body)))
    client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
    client.chat.completions.create(model="o4-mini", messages=[{"role": "user", "content": "hi"}])
    assert usage_of(spans.attrs()) == {
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 80,
        "gen_ai.usage.cache_read.input_tokens": 64,
        "gen_ai.usage.audio.input_tokens": 10,
        "gen_ai.usage.reasoning.output_tokens": 50,
    }  # the zero audio output count is left out


def test_openai_chat_zero_breakdown_is_left_out(spans: Spans, server: MockLLMServer) -> None:
    """The mock's usage has every breakdown count at zero, as most responses do."""
    server.script(Reply.text("Hi."))
    client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    assert set(usage_of(spans.attrs())) == {"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"}


def test_openai_responses_cache_write_and_reasoning(spans: Spans, server: MockLLMServer) -> None:
    body = {
        "id": "resp_usage",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "o4-mini",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Hi.", "annotations": []}],
            }
        ],
        "usage": {
            "input_tokens": 300,
            "input_tokens_details": {"cached_tokens": 100, "cache_write_tokens": 150},
            "output_tokens": 90,
            "output_tokens_details": {"reasoning_tokens": 60},
            "total_tokens": 390,
        },
    }
    server.script(Reply.raw(200, json.dumps(body)))
    client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
    client.responses.create(model="o4-mini", input="hi")
    assert usage_of(spans.attrs()) == {
        "gen_ai.usage.input_tokens": 300,
        "gen_ai.usage.output_tokens": 90,
        "gen_ai.usage.cache_read.input_tokens": 100,
        "gen_ai.usage.cache_write.input_tokens": 150,
        "gen_ai.usage.reasoning.output_tokens": 60,
    }


def test_gemini_modalities_and_thoughts(server: MockLLMServer) -> None:
    from google import genai

    body = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "A picture."}]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": 300,
            "candidatesTokenCount": 1300,
            "thoughtsTokenCount": 40,
            "cachedContentTokenCount": 0,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 42}, {"modality": "IMAGE", "tokenCount": 258}],
            "candidatesTokensDetails": [
                {"modality": "TEXT", "tokenCount": 10},
                {"modality": "IMAGE", "tokenCount": 1290},
            ],
        },
        "modelVersion": "gemini-2.5-flash-image",
        "responseId": "r-usage",
    }
    server.script(Reply.raw(200, json.dumps(body)))
    with spans_of(GeminiInstrumentor()) as gspans:
        client = genai.Client(api_key="k", http_options={"base_url": server.gemini_base_url})
        client.models.generate_content(model="gemini-2.5-flash-image", contents="Draw a cat.")
        attrs = gspans.attrs()
    assert usage_of(attrs) == {
        "gen_ai.usage.input_tokens": 300,
        "gen_ai.usage.output_tokens": 1340,  # candidates + thoughts
        "gen_ai.usage.reasoning.output_tokens": 40,
        "gen_ai.usage.text.input_tokens": 42,
        "gen_ai.usage.image.input_tokens": 258,
        "gen_ai.usage.text.output_tokens": 10,
        "gen_ai.usage.image.output_tokens": 1290,
    }  # no cache count: the response's is zero


def test_agent_spans_carry_no_usage(traced: Any, global_spans: Any) -> None:
    """Cache and token counts belong to the model calls: an ``invoke_agent`` span aggregates several models and calls,
    so it carries none (the conventions removed the cache counts from it)."""
    api = PROVIDERS["anthropic"]
    with MockLLMServer(WEATHER.replies) as srv, spanfold.agent("weather"):
        api.run(api.client(srv))
    traced.one()
    spans = global_spans.get_finished_spans()
    (run,) = [s for s in spans if s.name == "invoke_agent weather"]
    assert usage_of(dict(run.attributes or {})) == {}
    assert any(usage_of(dict(s.attributes or {})) for s in spans if s.name.startswith("chat "))

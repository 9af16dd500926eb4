"""openai embeddings: the real SDK over real HTTP to the mock server, its ``embeddings {model}`` span, and the run's
folded trace: an ``embeddings`` metadata step (model, tokens, inputs, cost) in time order with the model steps; the
event list unchanged; the call returning exactly what it returns without spanfold."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest

import spanfold
from spanfold.testing import MockLLMServer, Reply, count_tokens
from spanfold.trace.model import TraceMeta
from spanfold.trace.render import render_trace
from spanfold.trace.validate import validate_value

from ..conftest import Traced
from .conftest import Spans

MODEL = "text-embedding-3-small"
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
PRICE_PER_TOKEN = 0.02 / 1_000_000  # genai-prices' text-embedding-3-small: $0.02 per million input tokens


def _client(server: MockLLMServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)


def _meta(traced: Traced) -> dict[str, Any]:
    """The run's one metadata line (its ``metadata`` object where the line wraps it)."""
    traced.traces()  # flushed
    (line,) = traced.metas()
    meta: dict[str, Any] = line.get("metadata", line)
    return meta


def test_span_follows_the_conventions(spans: Spans, mock: MockLLMServer) -> None:
    out = _client(mock).embeddings.create(model=MODEL, input=["alpha", "beta gamma"], dimensions=8)

    assert [len(d.embedding) for d in out.data] == [8, 8]  # the SDK decoded its base64 as always
    span = spans.one()
    attrs = spans.attrs(span)
    assert span.name == f"embeddings {MODEL}"
    assert attrs["gen_ai.operation.name"] == "embeddings"
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.request.model"] == MODEL
    assert attrs["gen_ai.response.model"] == MODEL
    assert attrs["gen_ai.embeddings.dimension.count"] == 8
    assert attrs["gen_ai.usage.input_tokens"] == count_tokens("alpha") + count_tokens("beta gamma")
    assert attrs["spanfold.embeddings.input_count"] == 2
    assert (attrs["server.address"], attrs["server.port"]) == ("127.0.0.1", mock.port)
    assert "gen_ai.output.messages" not in attrs and "gen_ai.input.messages" not in attrs


def test_base64_asked_for_counts_dimensions_without_decoding(spans: Spans, mock: MockLLMServer) -> None:
    out = _client(mock).embeddings.create(model=MODEL, input="one", encoding_format="base64")
    assert isinstance(out.data[0].embedding, str)  # untouched: what the SDK gives without spanfold
    attrs = spans.attrs(spans.one())
    assert attrs["gen_ai.embeddings.dimension.count"] == 16
    assert attrs["gen_ai.request.encoding_formats"] == ("base64",)
    assert attrs["spanfold.embeddings.input_count"] == 1


def test_raw_response_and_failure(spans: Spans, mock: MockLLMServer) -> None:
    raw = _client(mock).embeddings.with_raw_response.create(model=MODEL, input="x")
    assert raw.parse().usage.prompt_tokens == count_tokens("x")
    mock.script_embeddings(Reply.error(500, "embeddings down"))
    with pytest.raises(openai.InternalServerError):
        _client(mock).embeddings.create(model=MODEL, input="x")
    ok, failed = spans.finished()
    assert spans.attrs(ok)["gen_ai.usage.input_tokens"] == count_tokens("x")
    assert failed.status.status_code.name == "ERROR"
    assert spans.attrs(failed)["error.type"] == "openai.InternalServerError"


def _rag_run(server: MockLLMServer) -> None:
    client = _client(server)
    with spanfold.agent("rag"):
        client.embeddings.create(model=MODEL, input="capital of France")
        client.chat.completions.create(model="gpt-4o-mini", messages=QUESTION)


def test_folded_run_has_an_embeddings_step(traced: Traced) -> None:
    with MockLLMServer() as server:
        server.script(Reply.text("Paris."))
        _rag_run(server)
    (trace,) = traced.traces()
    meta = _meta(traced)
    assert [e["role"] for e in trace] == ["user", "assistant"]  # the events are the conversation, as before
    embeddings, model = meta["steps"]
    assert embeddings["kind"] == "embeddings"
    assert embeddings["model"] == MODEL
    assert embeddings["inputs"] == 1
    tokens = count_tokens("capital of France")
    assert embeddings["usage"] == {"input_tokens": tokens, "output_tokens": 0}
    assert embeddings["cost"]["amount"] == pytest.approx(tokens * PRICE_PER_TOKEN)
    assert embeddings["duration_ms"] > 0 and embeddings["start"] < model["start"]
    assert embeddings["event"] == 0  # it precedes the question the model call sent
    assert model["kind"] == "model" and model["event"] == 1
    assert meta["cost"]["total"] == pytest.approx(embeddings["cost"]["amount"] + model["cost"]["amount"])
    assert meta["cost"]["by_model"][MODEL] == pytest.approx(embeddings["cost"]["amount"])
    assert meta["usage"]["input_tokens"] == model["usage"]["input_tokens"]  # the model calls' totals alone
    assert validate_value(traced.metas()[0], "metadata")[1] == []
    lines = render_trace([], TraceMeta.from_dict(meta))
    assert any(line.lstrip().startswith("embeddings") and MODEL in line for line in lines)


def test_async_and_failed_embeddings_in_a_run(traced: Traced) -> None:
    async def run(server: MockLLMServer) -> None:
        async with openai.AsyncOpenAI(api_key="k", base_url=server.base_url, max_retries=0) as client:
            with spanfold.agent("rag"):
                await client.embeddings.create(model=MODEL, input=["a", "b", "c"])
                with pytest.raises(openai.InternalServerError):
                    await client.embeddings.create(model=MODEL, input="d")
                await client.chat.completions.create(model="gpt-4o-mini", messages=QUESTION)

    with MockLLMServer() as server:
        server.script(Reply.text("Paris."))
        server.script_embeddings(Reply(), Reply.error(500, "down"))
        asyncio.run(run(server))
    meta = _meta(traced)
    first, failed, model = meta["steps"]
    assert (first["kind"], first["inputs"], first["model"]) == ("embeddings", 3, MODEL)
    assert failed["kind"] == "embeddings" and failed["error"]["type"] == "openai.InternalServerError"
    assert "usage" not in failed and "cost" not in failed
    assert model["kind"] == "model"
    assert meta["status"] == "complete"  # the run went on past the failed lookup

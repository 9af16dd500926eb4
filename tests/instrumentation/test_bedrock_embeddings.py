"""Bedrock ``invoke_model`` of embedding models (Amazon Titan, Cohere on Bedrock): the real boto3 over real HTTP to
the mock server's ``/model/{modelId}/invoke``, an ``embeddings {model}`` span read from the body the user reads (never
read by spanfold itself), and a run's folded metadata steps: embeddings (model, tokens from Titan's body or Bedrock's
header, inputs), then the Converse model call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config

import spanfold
from spanfold.instrumentation.providers.bedrock.patches import BedrockInstrumentor
from spanfold.testing import MockLLMServer, Reply, count_tokens
from spanfold.testing.wire.embeddings import vector

from ..conftest import Traced
from .conftest import Spans, spans_of

TITAN = "amazon.titan-embed-text-v2:0"
COHERE = "cohere.embed-english-v3"
TEXTS = ["Paris is the capital of France.", "Tokyo is the capital of Japan."]


@pytest.fixture
def bedrock_spans() -> Iterator[Spans]:
    with spans_of(BedrockInstrumentor()) as spans:
        yield spans


def _client(server: MockLLMServer) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=server.url,
        region_name="us-east-1",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret",
        config=Config(retries={"total_max_attempts": 1}),
    )


def test_titan_span(bedrock_spans: Spans, mock: MockLLMServer) -> None:
    client = _client(mock)  # made after instrumenting: botocore builds its class then
    out = client.invoke_model(modelId=TITAN, body=json.dumps({"inputText": TEXTS[0], "dimensions": 8}))
    body = json.loads(out["body"].read())  # the user's body, read by the user
    assert body["embedding"] == vector(TEXTS[0], 8)
    span = bedrock_spans.one()
    attrs = bedrock_spans.attrs(span)
    assert span.name == f"embeddings {TITAN}"
    assert (attrs["gen_ai.operation.name"], attrs["gen_ai.provider.name"]) == ("embeddings", "aws.bedrock")
    assert attrs["spanfold.embeddings.input_count"] == 1
    assert attrs["gen_ai.embeddings.dimension.count"] == 8
    assert attrs["gen_ai.usage.input_tokens"] == count_tokens(TEXTS[0])


def test_cohere_span_tokens_from_the_header(bedrock_spans: Spans, mock: MockLLMServer) -> None:
    client = _client(mock)
    request = {"texts": TEXTS, "input_type": "search_document"}
    out = client.invoke_model(modelId=COHERE, body=json.dumps(request))
    assert json.loads(out["body"].read())["embeddings"] == [vector(t) for t in TEXTS]
    attrs = bedrock_spans.attrs(bedrock_spans.one())
    assert attrs["spanfold.embeddings.input_count"] == 2
    assert attrs["gen_ai.embeddings.dimension.count"] == 16
    assert attrs["gen_ai.usage.input_tokens"] == sum(count_tokens(t) for t in TEXTS)


def test_chat_invoke_is_still_a_model_call(bedrock_spans: Spans, mock: MockLLMServer) -> None:
    mock.script(Reply.text("Hi."))
    client = _client(mock)
    body = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
    }
    json.loads(
        client.invoke_model(modelId="anthropic.claude-3-haiku-20240307-v1:0", body=json.dumps(body))["body"].read()
    )
    assert bedrock_spans.one().name.startswith("chat ")


def test_folded_run(traced: Traced) -> None:
    question = "What is the capital of France?"
    with MockLLMServer() as server:
        server.script(Reply.text("Paris."))
        client = _client(server)
        with spanfold.agent("rag"):
            out = client.invoke_model(modelId=TITAN, body=json.dumps({"inputText": question}))
            out["body"].read()
            client.converse(
                modelId="amazon.nova-lite-v1:0", messages=[{"role": "user", "content": [{"text": question}]}]
            )
    traced.traces()
    metas: list[dict[str, Any]] = [line.get("metadata", line) for line in traced.metas()]
    (meta,) = [m for m in metas if m.get("name") == "rag"]
    embeddings, model = meta["steps"]
    assert (embeddings["kind"], embeddings["model"], embeddings["inputs"]) == ("embeddings", TITAN, 1)
    assert embeddings["usage"]["input_tokens"] == count_tokens(question)
    assert embeddings["event"] == 0 and embeddings["start"] < model["start"]
    assert model["kind"] == "model" and model["event"] == 1

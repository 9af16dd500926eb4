"""The mock server's embeddings route through the real openai SDK: OpenAI's body, base64 as OpenAI sends it, vectors
derived from the text (the same text, the same vector; texts sharing words near each other), sync and async."""

from __future__ import annotations

import base64
import math
import struct

import openai
import pytest

from spanfold.testing import MockLLMServer, Reply, Usage, count_tokens
from spanfold.testing.wire.embeddings import DIMENSIONS, vector


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (math.hypot(*a) * math.hypot(*b))


def test_one_text_as_floats(server: MockLLMServer, oai: openai.OpenAI) -> None:
    out = oai.embeddings.create(model="text-embedding-3-small", input="The cat sat", encoding_format="float")

    assert out.object == "list"
    assert out.model == "text-embedding-3-small"
    assert [(d.object, d.index) for d in out.data] == [("embedding", 0)]
    assert len(out.data[0].embedding) == DIMENSIONS
    assert out.data[0].embedding == vector("The cat sat")
    assert math.isclose(math.hypot(*out.data[0].embedding), 1.0, rel_tol=1e-5)
    assert (out.usage.prompt_tokens, out.usage.total_tokens) == (count_tokens("The cat sat"),) * 2
    request = server.last_request
    assert (request.api, request.path, request.body["input"]) == ("embeddings", "/v1/embeddings", "The cat sat")


def test_the_sdk_default_is_base64_decoded_by_the_sdk(server: MockLLMServer, oai: openai.OpenAI) -> None:
    out = oai.embeddings.create(model="text-embedding-3-small", input=["alpha beta", "gamma"], dimensions=8)

    assert server.last_request.body["encoding_format"] == "base64"  # what the SDK asks for when the caller names none
    assert [len(d.embedding) for d in out.data] == [8, 8]
    assert [d.embedding for d in out.data] == [vector("alpha beta", 8), vector("gamma", 8)]
    assert out.usage.prompt_tokens == count_tokens("alpha beta") + count_tokens("gamma")


def test_base64_asked_for_is_sent_as_openai_does(server: MockLLMServer, oai: openai.OpenAI) -> None:
    out = oai.embeddings.create(model="m", input="hello", encoding_format="base64")

    raw = out.data[0].embedding
    assert isinstance(raw, str)  # the SDK leaves a format the caller named alone
    decoded = list(struct.unpack(f"<{DIMENSIONS}f", base64.b64decode(raw)))
    assert decoded == vector("hello")


def test_token_arrays_and_similarity(server: MockLLMServer, oai: openai.OpenAI) -> None:
    out = oai.embeddings.create(model="m", input=[[1, 2, 3], [4]], encoding_format="float")
    assert [d.embedding for d in out.data] == [vector([1, 2, 3]), vector([4])]
    assert out.usage.prompt_tokens == 4

    docs = oai.embeddings.create(
        model="m",
        input=["Paris is the capital of France", "Bananas are yellow fruit", "what is the capital of France"],
        encoding_format="float",
    ).data
    paris, bananas, query = (d.embedding for d in docs)
    assert _cosine(query, paris) > _cosine(query, bananas)


def test_embeddings_never_take_the_chat_script(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script(Reply.text("the model's reply"))
    oai.embeddings.create(model="m", input="x")
    assert server.pending == 1
    reply = oai.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "the model's reply"


def test_scripted_embeddings_replies(server: MockLLMServer, oai: openai.OpenAI) -> None:
    server.script_embeddings(Reply(usage=Usage(42, 0)), Reply.error(500, "embeddings down"))
    assert oai.embeddings.create(model="m", input="x").usage.prompt_tokens == 42
    with pytest.raises(openai.InternalServerError, match="embeddings down"):
        oai.embeddings.create(model="m", input="x")
    assert oai.embeddings.create(model="m", input="x").usage.prompt_tokens == count_tokens("x")


async def test_async(server: MockLLMServer, aoai: openai.AsyncOpenAI) -> None:
    out = await aoai.embeddings.create(model="m", input=["one", "two"])
    assert [d.embedding for d in out.data] == [vector("one"), vector("two")]

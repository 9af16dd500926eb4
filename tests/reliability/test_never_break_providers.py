"""Never break the app, for every other provider: arbitrary well-typed and malformed responses, streams in each one's
framing (SSE, NDJSON, AWS event-stream), HTTP errors and transport exceptions through the groq, mistralai, ollama,
cohere, google-genai, boto3 (Bedrock Runtime) and litellm wrappers, sync and async, differentially against the same
call without spanfold (:mod:`.test_never_break` does the same for OpenAI and Anthropic).

Each example asserts: the outcome (returned object, every chunk or event, a body's bytes, the exception type and
message) equals the uninstrumented outcome; the same request went out; where the user gets what the wrapped method
returned, the very object (or exception) the SDK method produced; exactly one span ended. Each test asserts at the
end: every internal fault was logged once per kind and counted in ``spanfold.stats()``.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spanfold
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.bedrock.patches import BedrockInstrumentor
from spanfold.instrumentation.providers.cohere import CohereInstrumentor
from spanfold.instrumentation.providers.gemini.patches import GeminiInstrumentor
from spanfold.instrumentation.providers.groq import GroqInstrumentor
from spanfold.instrumentation.providers.litellm import LiteLLMInstrumentor
from spanfold.instrumentation.providers.mistral import MistralInstrumentor
from spanfold.instrumentation.providers.ollama import OllamaInstrumentor
from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor

from . import provider_clients as pc
from .conftest import FaultLog, Harness, Returned, Script, _recorder, unwrapped
from .provider_strategies import (
    COHERE_BODY,
    COHERE_EVENT,
    CONVERSE_BODY,
    CONVERSE_EVENT,
    GEMINI_BODY,
    GROQ_BODY,
    GROQ_CHUNK,
    INVOKE_BODY,
    INVOKE_CHUNK,
    OLLAMA_BODY,
    provider_answers,
)
from .strategies import CHAT_BODY, CHAT_CHUNK

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of litellm's remote price list

#: Examples per (API, sync/async) test.
EXAMPLES = 30

CHAT_MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "w", "arguments": '{"c":"P"}'}}],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
]
OLLAMA_MESSAGES = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "w", "arguments": {"c": "P"}}}]},
    {"role": "tool", "content": "sunny", "tool_name": "w"},
]
CONVERSE_MESSAGES = [
    {"role": "user", "content": [{"text": "Weather in Paris?"}]},
    {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "w", "input": {"c": "P"}}}]},
    {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "sunny"}]}}]},
]


@dataclass(frozen=True)
class Api:
    client: Callable[[Any, bool], Any]
    body: Any
    event: Any
    framing: str
    transport: str
    #: (client, stream, raw, is_async) -> the result, or a coroutine of it
    call: Callable[[Any, bool, bool, bool], Any]
    #: whether the user gets what the wrapped SDK method returned (google-genai's public methods make their own)
    same_object: bool = True
    sync_only: bool = False
    #: the outcome as compared (litellm makes ids and times anew for each call)
    normalized: Callable[[Any], Any] = lambda outcome: outcome


def _groq(client: Any, stream: bool, raw: bool, is_async: bool) -> Any:
    target = client.chat.completions.with_raw_response if raw else client.chat.completions
    return target.create(model="llama", messages=CHAT_MESSAGES, stream=stream, temperature=0.5)


def _mistral(client: Any, stream: bool, raw: bool, is_async: bool) -> Any:
    method = ("stream" if stream else "complete") + ("_async" if is_async else "")
    return getattr(client.chat, method)(model="mistral-small", messages=CHAT_MESSAGES, random_seed=1)


def _ollama(client: Any, stream: bool, raw: bool, is_async: bool) -> Any:
    return client.chat(model="llama3.2", messages=OLLAMA_MESSAGES, stream=stream, options={"temperature": 0.1})


def _cohere(client: Any, stream: bool, raw: bool, is_async: bool) -> Any:
    method = client.chat_stream if stream else client.chat
    return method(model="command-a", messages=CHAT_MESSAGES, temperature=0.3)


def _gemini(client: Any, stream: bool, raw: bool, is_async: bool) -> Any:
    models = client.aio.models if is_async else client.models
    method = models.generate_content_stream if stream else models.generate_content
    return method(model="gemini-x", contents="Weather in Paris?")


def _converse(client: Any, stream: bool, raw: bool, is_async: bool) -> Any:
    method = client.converse_stream if stream else client.converse
    return method(modelId="amazon.nova-lite-v1:0", system=[{"text": "Be brief."}], messages=CONVERSE_MESSAGES)


def _invoke(client: Any, stream: bool, raw: bool, is_async: bool) -> Any:
    body = (
        {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 9, "messages": [{"role": "user", "content": "Hi"}]}
        if raw  # the flag picks the request family here: Claude, or a Llama prompt
        else {"prompt": "Hi", "max_gen_len": 9}
    )
    method = client.invoke_model_with_response_stream if stream else client.invoke_model
    return method(modelId="anthropic.claude-x" if raw else "meta.llama3", body=json.dumps(body))


def _litellm(client: Any, stream: bool, raw: bool, is_async: bool) -> Any:
    import litellm

    method = litellm.acompletion if is_async else litellm.completion
    return method(model="openai/gpt-4o", messages=CHAT_MESSAGES, stream=stream, **client)


APIS = {
    "groq.chat": Api(pc.groq_client, GROQ_BODY, GROQ_CHUNK, "sse", "httpx", _groq),
    "mistral.chat": Api(pc.mistral_client, CHAT_BODY, CHAT_CHUNK, "sse", "httpx", _mistral),
    "ollama.chat": Api(pc.ollama_client, OLLAMA_BODY, OLLAMA_BODY, "ndjson", "httpx", _ollama),
    "cohere.chat": Api(pc.cohere_client, COHERE_BODY, COHERE_EVENT, "sse-named", "httpx", _cohere),
    "gemini.generate_content": Api(
        pc.gemini_client, GEMINI_BODY, GEMINI_BODY, "sse", "httpx", _gemini, same_object=False
    ),
    "bedrock.converse": Api(
        pc.bedrock_client, CONVERSE_BODY, CONVERSE_EVENT, "eventstream", "botocore", _converse, sync_only=True
    ),
    "bedrock.invoke_model": Api(
        pc.bedrock_client, INVOKE_BODY, INVOKE_CHUNK, "eventstream-chunks", "botocore", _invoke, sync_only=True
    ),
    "litellm.completion": Api(
        pc.litellm_client,
        CHAT_BODY,
        CHAT_CHUNK,
        "sse",
        "httpx2",
        _litellm,
        same_object=False,
        normalized=pc.litellm_normalized,
    ),
}

#: The SDK methods spanfold wraps, recorded beneath its wrapper: module, class, method.
WRAPPED = (
    [("groq.resources.chat.completions", cls, "create") for cls in ("Completions", "AsyncCompletions")]
    + [("mistralai.client.chat", "Chat", name) for name in ("complete", "complete_async", "stream", "stream_async")]
    + [("ollama._client", cls, "chat") for cls in ("Client", "AsyncClient")]
    + [("cohere.v2.client", cls, name) for cls in ("V2Client", "AsyncV2Client") for name in ("chat", "chat_stream")]
    + [("botocore.client", "BaseClient", "_make_api_call")]
)


@pytest.fixture
def providers_harness(monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    returned = Returned()
    for module, cls, name in WRAPPED:
        owner = getattr(importlib.import_module(module), cls)
        monkeypatch.setattr(owner, name, _recorder(getattr(owner, name), returned))
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentors = [
        GroqInstrumentor(),
        MistralInstrumentor(),
        OllamaInstrumentor(),
        CohereInstrumentor(),
        GeminiInstrumentor(),
        BedrockInstrumentor(),
        LiteLLMInstrumentor(),
        OpenAIInstrumentor(),  # under litellm: its call makes no span of its own (one step per call)
    ]
    yield Harness(exporter, provider, Runtime(capture_content=True), returned, instrumentors)


def _script(api: Api, answer: Any) -> Any:
    if api.transport == "botocore":
        return pc.BedrockScript(answer)
    if api.transport == "httpx2":
        return Script(answer)
    return pc.HttpxScript(answer)


def _one_example(harness: Harness, api: Api, is_async: bool, data: st.DataObject) -> None:
    stream = data.draw(st.booleans(), "stream")
    raw = data.draw(st.booleans(), "raw")
    answer = data.draw(provider_answers(api.body, api.event, stream, api.framing, api.transport), "answer")

    def run() -> tuple[Any, Any, list[bytes]]:
        script = _script(api, answer)
        client = api.client(script, is_async)
        done = (pc.aoutcome if is_async else pc.outcome)(lambda: api.call(client, stream, raw, is_async))
        return (*done, script.bodies)

    harness.take_spans()  # (an example that failed before taking its spans)
    expected, _, sent = run()
    assert harness.take_spans() == []
    with harness.on():
        got, produced, sent_traced = run()
    assert api.normalized(got) == api.normalized(expected)
    assert sent_traced == sent  # the very same request went out
    if api.same_object and harness.returned.values:
        assert unwrapped(produced) is harness.returned.last(), "the wrapper must hand back the SDK's own object"
    spans = harness.take_spans()
    assert len(spans) == 1, [s.name for s in spans]
    assert spans[0].end_time is not None


CASES = [
    (name, is_async) for name in sorted(APIS) for is_async in (False, True) if not (is_async and APIS[name].sync_only)
]


@pytest.mark.parametrize(("name", "is_async"), CASES, ids=[f"{n}-{'async' if a else 'sync'}" for n, a in CASES])
def test_wrapped_call_is_the_unwrapped_call(
    name: str, is_async: bool, providers_harness: Harness, fault_log: FaultLog
) -> None:
    api = APIS[name]
    count = 0

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        nonlocal count
        count += 1
        providers_harness.returned.values.clear()
        _one_example(providers_harness, api, is_async, data)

    check()
    assert count >= EXAMPLES
    faults = fault_log.check_logged_once()
    stats = spanfold.stats()
    for kind, n in faults.items():
        assert stats[f"fault.{kind}"] == n

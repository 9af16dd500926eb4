"""What every provider shares, owned once by the toolkit: where a call goes (``server.*``), what a Stainless SDK's
call returned, and post-import hooks that a later ``uninstrument()`` withdraws."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anthropic
import groq
import httpx
import openai
import pytest

from spanfold.instrumentation.toolkit.calls import Result, server_of, stainless_result
from spanfold.instrumentation.toolkit.hooks import ImportHooks
from spanfold.instrumentation.toolkit.invocation import Endpoint
from spanfold.testing import MockLLMServer, Reply


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (httpx.URL("https://api.openai.com/v1"), ("api.openai.com", 443)),
        (httpx.URL("http://127.0.0.1:8080/v1"), ("127.0.0.1", 8080)),
        ("https://bedrock-runtime.us-east-1.amazonaws.com", ("bedrock-runtime.us-east-1.amazonaws.com", 443)),
        ("http://localhost:11434", ("localhost", 11434)),
        ("http://ollama.internal/", ("ollama.internal", 80)),
    ],
)
def test_the_server_is_the_urls_host_and_port_else_its_schemes_default(url: Any, expected: tuple[str, int]) -> None:
    endpoint = server_of(url)
    assert endpoint is not None
    assert (endpoint.address, endpoint.port) == expected


@pytest.mark.parametrize("url", [None, "", "not a url", 42])
def test_no_url_gives_no_server(url: Any) -> None:
    assert server_of(url) is None


def test_a_provider_named_with_the_server_is_kept_with_or_without_one() -> None:
    assert server_of("https://aiplatform.googleapis.com/", provider="gcp.vertex_ai") == Endpoint(
        "aiplatform.googleapis.com", 443, "gcp.vertex_ai"
    )
    assert server_of("", provider="gcp.gemini") == Endpoint(provider="gcp.gemini")


def test_an_sdk_call_to_a_default_port_says_the_port(replay_client: Any, spans: Any) -> None:
    client, _ = replay_client("test_chat_tools.json")  # base URL http://recorded.test/v1: no port written
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Weather in Paris?"}])
    attrs = spans.attrs()
    assert (attrs["server.address"], attrs["server.port"]) == ("recorded.test", 80)


def _module(tmp_path: Path, name: str) -> None:
    (tmp_path / f"{name}.py").write_text("VALUE = 1\n")


def test_a_withdrawn_hook_does_not_fire_and_a_new_one_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    _module(tmp_path, "spanfold_hooks_probe")
    hooks, fired = ImportHooks(), []
    stale = hooks.renew()
    hooks.register("spanfold_hooks_probe", stale, lambda module: fired.append(("stale", module.VALUE)))
    hooks.withdraw()
    current = hooks.renew()
    hooks.register("spanfold_hooks_probe", current, lambda module: fired.append(("current", module.VALUE)))
    try:
        import spanfold_hooks_probe  # noqa: F401

        assert fired == [("current", 1)]
        assert not hooks.valid(stale) and hooks.valid(current)
        hooks.register("spanfold_hooks_probe", current, lambda module: fired.append(("at once", module.VALUE)))
        assert fired[-1] == ("at once", 1)  # already imported: the hook fires at once
    finally:
        sys.modules.pop("spanfold_hooks_probe", None)


def _results(create: Any, raw: Any, streaming: Any) -> dict[str, Any]:
    """What one SDK method returns: a response, a stream, a raw response, a streaming response (opened)."""
    out = {"response": create(), "stream": create(stream=True), "raw": raw()}
    with streaming() as response:
        out["streamed_raw"] = response
    return out


def test_the_stainless_classifier_reads_each_sdks_own_types() -> None:
    """The real SDKs' results, unwrapped: ``with_streaming_response``'s left alone, or followed for openai."""
    ask: dict[str, Any] = {"messages": [{"role": "user", "content": "Hi"}]}
    with MockLLMServer() as server:
        server.respond_with(lambda request: Reply.text("Hello."))
        oa = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0).chat.completions
        gq = groq.Groq(api_key="gsk-test", base_url=server.groq_base_url, max_retries=0).chat.completions
        an = anthropic.Anthropic(api_key="sk-ant", base_url=server.anthropic_base_url, max_retries=0).messages
        chat = {**ask, "model": "gpt-4o-mini"}
        claude = {**ask, "model": "claude-mock-4", "max_tokens": 64}
        found = {
            "openai": _results(
                lambda **k: oa.create(**chat, **k),
                lambda: oa.with_raw_response.create(**chat),
                lambda: oa.with_streaming_response.create(**chat),
            ),
            "groq": _results(
                lambda **k: gq.create(**chat, **k),
                lambda: gq.with_raw_response.create(**chat),
                lambda: gq.with_streaming_response.create(**chat),
            ),
            "anthropic": _results(
                lambda **k: an.create(**claude, **k),
                lambda: an.with_raw_response.create(**claude),
                lambda: an.with_streaming_response.create(**claude),
            ),
        }
    classifiers = {sdk: stainless_result(sdk, streamed_raw=sdk == "openai") for sdk in found}
    kinds = {sdk: {name: classifiers[sdk](r) for name, r in results.items()} for sdk, results in found.items()}
    expected = {"response": Result.RESPONSE, "stream": Result.STREAM, "raw": Result.RAW}
    assert kinds == {
        "openai": {**expected, "streamed_raw": Result.STREAMED_RAW},
        "groq": {**expected, "streamed_raw": Result.OPAQUE},
        "anthropic": {**expected, "streamed_raw": Result.OPAQUE},
    }
    assert stainless_result("openai")(found["openai"]["streamed_raw"]) is Result.OPAQUE
    assert stainless_result("openai")(object()) is Result.OPAQUE

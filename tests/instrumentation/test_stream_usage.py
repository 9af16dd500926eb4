"""``init(stream_usage=True)``: an OpenAI Chat Completions stream sent without ``stream_options.include_usage`` is
asked for its usage (the one change spanfold makes to a request), and the usage-only chunk that adds is kept from the
application, which gets the very chunks it would have got. Without it, such a call's tokens are unknown, counted and
said once. The real openai SDK over HTTP to the mock server, which sends the usage chunk only when asked, as OpenAI
does."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import openai
import pytest

import spanfold
from spanfold import counters
from spanfold.testing import MockLLMServer, Reply

from ..conftest import traced_into

MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "user", "content": "Say hello"}]


def _server() -> MockLLMServer:
    server = MockLLMServer()
    server.script(Reply.text("Hello there, friend"))
    return server


def _sync_chunks(server: MockLLMServer, **extra: Any) -> list[str]:
    client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    stream = client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True, **extra)  # type: ignore[call-overload]
    return [chunk.to_json() for chunk in stream]


async def _async_chunks(server: MockLLMServer, **extra: Any) -> list[str]:
    client = openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    stream = await client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True, **extra)  # type: ignore[call-overload]
    return [chunk.to_json() async for chunk in stream]


def _untraced(run: Any, **extra: Any) -> list[str]:
    """What the application gets with spanfold off (fresh server: the same ids)."""
    with _server() as server:
        return run(server, **extra)


def _usage(directory: Path) -> Any:
    assert spanfold.flush(timeout=30)
    (line,) = (directory / "traces.meta.jsonl").read_text().splitlines()
    return json.loads(line)["metadata"].get("usage")


def test_asked_for_usage_the_application_gets_the_same_chunks(tmp_path: Path, _global_provider: Any) -> None:
    expected = _untraced(_sync_chunks)
    with traced_into(tmp_path, stream_usage=True), _server() as server:
        got = _sync_chunks(server)
        sent = server.last_request.body
        usage = _usage(tmp_path)
    assert got == expected  # chunk by chunk, as serialised: no usage chunk, no "usage": null field
    assert sent["stream_options"] == {"include_usage": True}
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0


async def test_async_stream_asked_for_usage(tmp_path: Path, _global_provider: Any) -> None:
    with _server() as server:
        expected = await _async_chunks(server)
    with traced_into(tmp_path, stream_usage=True), _server() as server:
        got = await _async_chunks(server)
        sent = server.last_request.body
        usage = _usage(tmp_path)
    assert got == expected
    assert sent["stream_options"] == {"include_usage": True}
    assert usage["output_tokens"] > 0


@pytest.mark.parametrize("include", [True, False])
def test_a_request_that_says_is_sent_as_it_is(tmp_path: Path, _global_provider: Any, include: bool) -> None:
    options = {"stream_options": {"include_usage": include}}
    expected = _untraced(_sync_chunks, **options)
    with traced_into(tmp_path, stream_usage=True), _server() as server:
        got = _sync_chunks(server, **options)
        sent = server.last_request.body
        usage = _usage(tmp_path)
    assert got == expected and sent["stream_options"] == {"include_usage": include}
    assert (usage is not None and usage.get("output_tokens", 0) > 0) is include


def test_other_stream_options_are_kept(tmp_path: Path, _global_provider: Any) -> None:
    with traced_into(tmp_path, stream_usage=True), _server() as server:
        _sync_chunks(server, stream_options={"include_obfuscation": False})
        assert server.last_request.body["stream_options"] == {"include_obfuscation": False, "include_usage": True}


def test_a_raw_response_stream_is_not_changed(tmp_path: Path, _global_provider: Any) -> None:
    with traced_into(tmp_path, stream_usage=True), _server() as server:
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES, stream=True)  # type: ignore[arg-type]
        list(raw.parse())
        assert "stream_options" not in server.last_request.body


def test_off_by_default_unknown_counted_and_said_once(
    tmp_path: Path, _global_provider: Any, caplog: pytest.LogCaptureFixture
) -> None:
    expected = _untraced(_sync_chunks)
    with caplog.at_level(logging.INFO, logger="spanfold"), traced_into(tmp_path), _server() as server:
        got = _sync_chunks(server)
        _sync_chunks(server)
        assert "stream_options" not in server.last_request.body
        assert spanfold.flush(timeout=30)
        metas = [json.loads(x)["metadata"] for x in (tmp_path / "traces.meta.jsonl").read_text().splitlines()]
    assert got == expected
    assert all(not (m.get("usage") or {}).get("output_tokens") for m in metas)  # unknown, never counted as tokens
    assert counters.snapshot()["calls_without_usage"] == 2
    said = [r for r in caplog.records if "reported no token usage" in r.getMessage()]
    assert len(said) == 1 and "stream_usage=True" in said[0].getMessage()

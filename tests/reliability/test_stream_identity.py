"""The stream proxy hands over the SDK's own chunk objects, and never swallows the user's exception.

Two breakages the parity suite compared only by value: a proxy that yields a copy of each chunk, and a proxy whose
``__exit__`` / ``__aexit__`` returns True (the exception raised inside ``with stream:`` vanishes).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from spanfold.testing import MockLLMServer, Reply

from ..conftest import Traced

REQUEST: dict[str, Any] = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "Say hello in many words."}],
    "stream": True,
}
TEXT = "Hello there, this reply comes in many small chunks."


class Boom(Exception):
    pass


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer() as srv:
        yield srv


@pytest.fixture
def sdk_chunks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every chunk the SDK's own ``Stream`` / ``AsyncStream`` yields (a class-level patch runs under the proxy)."""
    seen: list[Any] = []
    sync_iter, async_iter = openai.Stream.__iter__, openai.AsyncStream.__aiter__

    def record(self: Any) -> Iterator[Any]:
        for chunk in sync_iter(self):
            seen.append(chunk)
            yield chunk

    async def arecord(self: Any) -> Any:
        async for chunk in async_iter(self):
            seen.append(chunk)
            yield chunk

    monkeypatch.setattr(openai.Stream, "__iter__", record)
    monkeypatch.setattr(openai.AsyncStream, "__aiter__", arecord)
    return seen


def test_the_user_gets_the_sdks_own_chunk_objects(traced: Traced, server: MockLLMServer, sdk_chunks: list[Any]) -> None:
    server.script(Reply.text(TEXT))
    client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    got = list(client.chat.completions.create(**REQUEST))
    assert len(got) == len(sdk_chunks) > 3
    assert all(a is b for a, b in zip(got, sdk_chunks, strict=True))
    (events,) = traced.traces()
    assert events[-1] == {"role": "assistant", "content": TEXT}


async def test_the_async_user_gets_the_sdks_own_chunk_objects(
    traced: Traced, server: MockLLMServer, sdk_chunks: list[Any]
) -> None:
    server.script(Reply.text(TEXT))
    client = openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    got = [chunk async for chunk in await client.chat.completions.create(**REQUEST)]
    assert len(got) == len(sdk_chunks) > 3
    assert all(a is b for a, b in zip(got, sdk_chunks, strict=True))


def test_an_exception_inside_with_reaches_the_user(traced: Traced, server: MockLLMServer) -> None:
    client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    server.script(Reply.text(TEXT), Reply.text(TEXT))
    with pytest.raises(Boom), client.chat.completions.create(**REQUEST) as stream:
        next(iter(stream))
        raise Boom
    with (
        pytest.raises(Boom),
        client.chat.completions.stream(model=REQUEST["model"], messages=REQUEST["messages"]) as helper,
    ):
        next(iter(helper))
        raise Boom
    assert len(traced.traces()) == 2


async def test_an_exception_inside_async_with_reaches_the_user(traced: Traced, server: MockLLMServer) -> None:
    client = openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    server.script(Reply.text(TEXT), Reply.text(TEXT))
    with pytest.raises(Boom):
        async with await client.chat.completions.create(**REQUEST) as stream:
            await stream.__aiter__().__anext__()
            raise Boom
    with pytest.raises(Boom):
        async with client.chat.completions.stream(model=REQUEST["model"], messages=REQUEST["messages"]) as helper:
            await helper.__aiter__().__anext__()
            raise Boom
    assert len(traced.traces()) == 2

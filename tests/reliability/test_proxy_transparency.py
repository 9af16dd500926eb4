"""The objects spanfold hands back behave as the SDK's own under copy, deepcopy, pickle and class-level patches:
differentially, the same call with and without spanfold (a stream, an async stream, a raw response)."""

from __future__ import annotations

import asyncio
import copy
import gc
import json
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest

from .conftest import Answer, Harness, Script, openai_client

CHUNK = {
    "id": "c1",
    "object": "chat.completion.chunk",
    "created": 1,
    "model": "gpt-4o",
    "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}, "finish_reason": None}],
}
REPLY = {
    "id": "c1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
}
MESSAGES = [{"role": "user", "content": "q"}]


def _stream() -> Any:
    client = openai_client(Script(Answer.sse([(None, json.dumps(CHUNK)), (None, "[DONE]")])))
    return client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)


def _raw() -> Any:
    client = openai_client(Script(Answer.json(REPLY)))
    return client.chat.completions.with_raw_response.create(model="gpt-4o", messages=MESSAGES)


def _outcome(action: Callable[[], Any]) -> Any:
    """What an action gives: the type of its result, or the type of the exception it raised."""
    try:
        return ("ok", action().__class__.__name__)  # a proxy answers __class__ as the SDK object does
    except Exception as exc:
        return ("raised", type(exc).__name__)


OPERATIONS: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
    "copy stream": (_stream, copy.copy),
    "deepcopy stream": (_stream, copy.deepcopy),
    "pickle stream": (_stream, pickle.dumps),
    "copy raw response": (_raw, copy.copy),
    "deepcopy raw response": (_raw, copy.deepcopy),
    "pickle raw response": (_raw, pickle.dumps),
}


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_copy_deepcopy_and_pickle_behave_as_without_spanfold(name: str, harness: Harness) -> None:
    make, operation = OPERATIONS[name]
    expected = _outcome(lambda: operation(make()))
    with harness.on():
        got = _outcome(lambda: operation(make()))
    assert got == expected
    if name == "copy stream":
        gc.collect()  # the streams above were never read: their spans end when collected
        harness.take_spans()
        with harness.on():
            stream = make()
            twin = copy.copy(stream)
            assert isinstance(twin, openai.Stream)
            assert [c.choices[0].delta.content for c in twin] == ["hi"]  # the copy shares the SDK's iterator
        (span,) = harness.take_spans()  # ... and the span, which ends once
        assert "hi" in str(span.attributes["gen_ai.output.messages"])


@pytest.fixture
def counted_iter(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A class-level patch of the SDK's ``Stream.__iter__`` / ``AsyncStream.__aiter__``, as another library might
    install: it must run whether or not spanfold proxies the stream."""
    calls: list[str] = []
    sync_iter, async_iter = openai.Stream.__iter__, openai.AsyncStream.__aiter__

    def patched_iter(self: Any) -> Any:
        calls.append("sync")
        return sync_iter(self)

    def patched_aiter(self: Any) -> Any:
        calls.append("async")
        return async_iter(self)

    monkeypatch.setattr(openai.Stream, "__iter__", patched_iter)
    monkeypatch.setattr(openai.AsyncStream, "__aiter__", patched_aiter)
    yield calls


def test_class_level_patches_of_stream_iteration_still_run(harness: Harness, counted_iter: list[str]) -> None:
    async def read_async() -> list[str]:
        client = openai_client(Script(Answer.sse([(None, json.dumps(CHUNK)), (None, "[DONE]")])), is_async=True)
        stream = await client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
        return [c.choices[0].delta.content async for c in stream]

    def run() -> list[Any]:
        counted_iter.clear()
        texts = [c.choices[0].delta.content for c in _stream()]
        texts += asyncio.run(read_async())
        return [texts, sorted(counted_iter)]

    expected = run()
    assert expected == [["hi", "hi"], ["async", "sync"]]
    with harness.on():
        assert run() == expected
    assert len(harness.take_spans()) == 2

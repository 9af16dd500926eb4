"""What each of the calling thread's caches buys (issue 29 item 4): every trick timed with and without it, in one
process, on the peer table's workload (openai SDK objects; a 10-message history with 2 tools).

Each row: the piece with the cache, the same piece without it (the code path the cache skips), best of 7 repeats
(interleaved three times), and the ratio. A cache stays when it saves a measurable share of the call on this workload
(the figure is quoted in its comment); the removed ones are rebuilt here to show what they saved.

    python bench/tricks.py
"""

from __future__ import annotations

import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workload


def best_us(fn: Callable[[], Any], number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6


def rows() -> list[tuple[str, float, float]]:
    import httpx2
    from openai.types.chat import ChatCompletion
    from pydantic import BaseModel

    from spanfold.content.runtime import Runtime
    from spanfold.instrumentation.providers.openai import chat as openai_chat
    from spanfold.instrumentation.providers.openai import patches as sf_openai
    from spanfold.instrumentation.toolkit.calls import _Classifier, server_of
    from spanfold.instrumentation.toolkit.reading import fields as m
    from spanfold.instrumentation.toolkit.reading.history import History

    rt = Runtime(capture_content=True)
    response = ChatCompletion.model_validate(workload.COMPLETION)
    choice = response.choices[0]
    messages = workload.history(10)

    model_types: dict[type, bool] = {}

    def get_remembering(obj: Any, key: str) -> Any:  # messages.get answering "pydantic?" per type (removed)
        if isinstance(obj, dict):
            return obj.get(key)
        model = model_types.get(type(obj))
        if model is None:
            model = model_types[type(obj)] = isinstance(obj, BaseModel)
        if model:
            fields = obj.__dict__
            if key in fields:
                return fields[key]
            extra = obj.__pydantic_extra__
            return extra.get(key) if extra else None
        return getattr(obj, key, None)

    keys = ("content", "role", "tool_calls", "refusal", "audio", "reasoning_content")
    message = choice.message

    def fields_remembering() -> None:
        for key in keys:
            get_remembering(message, key)

    def fields_plain() -> None:
        for key in keys:
            m.get(message, key)

    classify = _Classifier(sf_openai.CHAT.classify)

    def classify_plain() -> Any:
        return sf_openai.CHAT.classify(response)

    url = httpx2.URL("https://api.openai.com/v1/")
    servers: dict[int, Any] = {}

    def server_remembering() -> Any:  # an endpoint per URL object (removed)
        endpoint = servers.get(id(url))
        if endpoint is None:
            endpoint = servers[id(url)] = server_of(url)
        return endpoint

    history = History(openai_chat.input_message)

    def history_cached() -> str:
        return history.json(messages, rt)

    def history_plain() -> str:
        return History(openai_chat.input_message).json(messages, rt)

    return [
        (
            "messages.get: 6 fields of an SDK message (pydantic answer per type: removed)",
            *_pair(fields_remembering, fields_plain),
        ),
        (
            "classify a ChatCompletion (response types per wrapper: kept)",
            *_pair(lambda: classify(response), classify_plain),
        ),
        (
            "server_of an httpx URL (endpoint per URL object: removed)",
            *_pair(server_remembering, lambda: server_of(url)),
        ),
        ("10-message history as JSON (History: fragments per message: kept)", *_pair(history_cached, history_plain)),
    ]


def _pair(cached: Callable[[], Any], plain: Callable[[], Any]) -> tuple[float, float]:
    cached()
    plain()
    a, b = [], []
    for _ in range(3):  # interleaved
        a.append(best_us(cached, 3000))
        b.append(best_us(plain, 3000))
    return min(a), min(b)


def main() -> None:
    print(f"{'piece':72} {'cached µs':>10} {'plain µs':>10} {'plain/cached':>12}")
    for label, cached, plain in rows():
        print(f"{label:72} {cached:10.2f} {plain:10.2f} {plain / cached:11.1f}x")


if __name__ == "__main__":
    main()

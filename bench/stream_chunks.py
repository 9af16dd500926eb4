"""Per-chunk cost of the stream proxy against the bare loop over the same 53 ``ChatCompletionChunk`` objects.

The chunks are the peer table's streamed reply (two parallel tool calls in fragments), made once; each variant loops
over them 300 times per round, CPU time of this thread, 7 rounds (best and median per 53-chunk stream):

* ``bare``: the loop alone;
* ``proxy, no accumulator``: through ``SyncStreamProxy`` with an accumulator that does nothing (the proxy's own cost);
* ``proxy + accumulator``: the real chat accumulator, its result attributes at the end (what a stream costs spanfold
  on the calling thread, the span aside);
* ``accumulator alone``: the same accumulation without the proxy.

    python bench/stream_chunks.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workload
from openai.types.chat import ChatCompletionChunk

from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.openai.chat import ChatStreamAccumulator
from spanfold.instrumentation.toolkit import attributes
from spanfold.instrumentation.toolkit.invocation import Response
from spanfold.instrumentation.toolkit.spans import ModelSpan
from spanfold.instrumentation.toolkit.streams import StreamState, SyncStreamProxy

RT = Runtime(capture_content=True)


class Span(ModelSpan):
    """A model span without its OpenTelemetry span: the stream state takes it for one (its result read from the
    accumulator's typed response), and ending it ends nothing."""

    def __init__(self) -> None:  # no OpenTelemetry span started
        self.ended = False
        self.measured = None
        self.turn = None  # not a zero-code conversation's call

    def finish(self, attributes: Any = None) -> bool:
        self.ended = True
        return True

    def fail(self, exc: BaseException, attributes: Any = None) -> bool:
        self.ended = True
        return True

    def result(self, response: Response) -> Any:
        return attributes.response(response, "openai", RT)


class Nothing:
    def add(self, chunk: Any) -> None:
        pass

    def attributes(self) -> dict[str, Any]:
        return {}


def main() -> None:
    body = workload.stream_body().decode()
    chunks = [
        ChatCompletionChunk.model_validate(json.loads(event[6:]))
        for event in body.split("\n\n")
        if event.startswith("data: {")
    ]

    def bare() -> None:
        for _ in iter(chunks):
            pass

    def proxy_only() -> None:
        for _ in SyncStreamProxy(iter(chunks), StreamState(Span(), Nothing(), "k")):  # type: ignore[arg-type]
            pass

    def proxy_real() -> None:
        for _ in SyncStreamProxy(iter(chunks), StreamState(Span(), ChatStreamAccumulator(), "k")):  # type: ignore[arg-type]
            pass

    def accumulator() -> None:
        acc = ChatStreamAccumulator()
        for chunk in chunks:
            acc.add(chunk)
        attributes.response(acc.result(), "openai", RT)

    variants: dict[str, Callable[[], None]] = {
        "bare": bare,
        "proxy, no accumulator": proxy_only,
        "proxy + accumulator": proxy_real,
        "accumulator alone": accumulator,
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(7):
        for name, fn in variants.items():
            start = time.thread_time()
            for _ in range(300):
                fn()
            times[name].append((time.thread_time() - start) / 300 * 1e6)
    print(f"{len(chunks)} chunks; CPU µs per stream, 7 rounds of 300\n")
    print("| variant | best µs | median µs | per chunk (median) |")
    print("|---|---|---|---|")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"| {name} | {min(values):.1f} | {med:.1f} | {med / len(chunks):.2f} |")


if __name__ == "__main__":
    main()

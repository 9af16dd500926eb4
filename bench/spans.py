"""Realistic GenAI spans for the fold and processor benchmarks, recorded by spanfold's own instrumentation.

:func:`record_agent_run` runs an agent loop of ``steps`` model calls (the openai SDK over the in-process mock transport
of ``bench/workload.py``; each call but the last asks for a tool, run as an ``@spanfold.tool``; the whole run under
``spanfold.agent``) and returns its spans as :class:`~spanfold.exporter.records.SpanRecord` s. :func:`replicate` makes
copies with new trace and span ids and a different user prompt each (so no two copies share a history).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workload import MODEL, TOOLS

#: Stands in the user prompt; each replica puts its own number here.
MARKER = "RUN-000000"

SYSTEM = "You are a helpful weather assistant. Use the tools when needed, then answer in one sentence."


def _reply(step: int, final: bool) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if final:
        message["content"] = f"Done after {step} steps: every city is mild and clear today."
    else:
        message["tool_calls"] = [
            {
                "id": f"call_{step}",
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": f"City {step}"})},
            }
        ]
    return {
        "id": f"chatcmpl-{step}",
        "object": "chat.completion",
        "created": 1,
        "model": MODEL,
        "choices": [{"index": 0, "finish_reason": "stop" if final else "tool_calls", "message": message}],
        "usage": {"prompt_tokens": 100 + 40 * step, "completion_tokens": 20, "total_tokens": 120 + 40 * step},
    }


@contextmanager
def recorded(provider: Any = None) -> Iterator[Any]:
    """spanfold's openai instrumentation (content on) on ``provider`` (a fresh ``TracerProvider`` when None) while the
    block runs; yields the in-memory exporter that catches the spans it records."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from spanfold.content.runtime import Runtime
    from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor

    provider = provider if provider is not None else TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider, runtime=Runtime(capture_content=True))
    try:
        yield memory
    finally:
        instrumentor.uninstrument()


def record_agent_run(steps: int) -> list[Any]:
    """The spans (SpanRecords, in end order) of one agent run of ``steps`` model calls and ``steps - 1`` tool runs."""
    import openai
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    import spanfold
    from spanfold.exporter.records import from_readable

    provider = trace.get_tracer_provider()  # spanfold.agent and spanfold.tool make their spans on the global one
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)

    calls = 0

    def handler(request: httpx2.Request) -> httpx2.Response:
        nonlocal calls
        calls += 1
        return httpx2.Response(200, json=_reply(calls, final=calls >= steps))

    @spanfold.tool
    def get_weather(city: str) -> str:
        return f"{city}: 21 C, clear skies, light wind from the west"

    client = openai.OpenAI(
        api_key="sk-bench",
        base_url="http://bench.test/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{MARKER}: what is the weather in each city on my list, one by one?"},
    ]
    with recorded(provider) as memory, spanfold.agent("weather-agent"):
        for _ in range(steps):
            reply = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)  # type: ignore[arg-type]
            msg = reply.choices[0].message
            if not msg.tool_calls:
                break
            messages.append(msg.model_dump(exclude_none=True))
            for call in msg.tool_calls:
                city = json.loads(call.function.arguments)["city"]
                result = get_weather(city, tool_call_id=call.id)  # type: ignore[call-arg]
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return [plain(from_readable(s)) for s in memory.get_finished_spans()]


def plain(record: Any) -> Any:
    """The record with plain dicts for its attribute mappings (the SDK's are read-only views): picklable."""
    return dataclasses.replace(record, attributes=dict(record.attributes), resource=dict(record.resource))


def attribute_bytes(records: list[Any]) -> int:
    """The size of the spans' attributes as JSON (what a producer ships and the fold parses)."""
    return sum(len(json.dumps(dict(r.attributes), separators=(",", ":"), default=str)) for r in records)


def replicate(records: list[Any], copies: int) -> Iterator[list[Any]]:
    """``copies`` copies of one trace's records, each with fresh ids and its own user prompt."""
    for n in range(1, copies + 1):
        marker = f"RUN-{n:06d}"
        yield [
            dataclasses.replace(
                r,
                trace_id=r.trace_id + n,
                span_id=r.span_id + n,
                parent_id=r.parent_id + n if r.parent_id is not None else None,
                attributes={k: v.replace(MARKER, marker) if isinstance(v, str) else v for k, v in r.attributes.items()},
            )
            for r in records
        ]

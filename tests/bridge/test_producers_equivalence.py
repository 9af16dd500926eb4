"""The same weather-agent run, instrumented by each producer of GenAI spans, folds to the same flat Invariant trace
as with spanfold's own instrumentation, event by event; and per model step the same model, provider, response id,
finish reasons and usage, up to what the producer records (each :class:`Producer` says what it does not).

Producers (versions in pyproject's ``test`` extra): spanfold; the official ``opentelemetry-instrumentation-openai-v2``
with latest attributes, and with its older per-message log events; OpenLLMetry's OpenAI instrumentation (0.62:
``gen_ai.input.messages``; and its event mode, messages as log events) and Anthropic instrumentation (0.53.4:
``gen_ai.prompt.N.*``), with traceloop-style tool spans; OpenInference's OpenAI instrumentation with its own
``OITracer.tool`` spans.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest
from anthropic.resources.messages import Messages
from openai.resources.chat.completions import Completions

from .producers import (
    Harness,
    Run,
    run_openinference,
    run_openllmetry,
    run_otel_v2_events,
    run_otel_v2_latest,
    run_spanfold,
)

SYSTEM = "You are a weather assistant. Use the tools, then answer in one sentence."
QUESTION = "What's the weather in Paris and Tokyo? And Paris's temperature in fahrenheit, please."
ANSWER = "Here is the weather: Paris: 18°C, sunny; Tokyo: 24°C, cloudy. In Fahrenheit: 18°C is 64.4°F."


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


#: The weather agent's second model call as every producer's dialect must give it: what it was sent, what it answered.
SECOND_CALL_INPUT: list[dict[str, Any]] = [
    {"role": "system", "parts": [{"type": "text", "content": SYSTEM}]},
    {"role": "user", "parts": [{"type": "text", "content": QUESTION}]},
    {
        "role": "assistant",
        "parts": [
            {"type": "tool_call", "id": "call_mock_1", "name": "get_weather", "arguments": {"city": "Paris"}},
            {"type": "tool_call", "id": "call_mock_2", "name": "get_weather", "arguments": {"city": "Tokyo"}},
        ],
    },
    {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "call_mock_1", "response": "Paris: 18°C, sunny"}],
    },
    {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "call_mock_2", "response": "Tokyo: 24°C, cloudy"}],
    },
]
SECOND_CALL_OUTPUT: list[dict[str, Any]] = [
    {
        "role": "assistant",
        "parts": [
            {
                "type": "tool_call",
                "id": "call_mock_3",
                "name": "convert_temperature",
                "arguments": {"celsius": 18, "to": "fahrenheit"},
            }
        ],
        "finish_reason": "tool_calls",
    }
]


def expected(ids: str) -> list[dict[str, Any]]:
    """The weather agent's flat trace; ``ids``: the mock server's tool-call id prefix for the API."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                call(f"{ids}1", "get_weather", {"city": "Paris"}),
                call(f"{ids}2", "get_weather", {"city": "Tokyo"}),
            ],
        },
        {"role": "tool", "content": "Paris: 18°C, sunny", "tool_call_id": f"{ids}1"},
        {"role": "tool", "content": "Tokyo: 24°C, cloudy", "tool_call_id": f"{ids}2"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call(f"{ids}3", "convert_temperature", {"celsius": 18, "to": "fahrenheit"})],
        },
        {"role": "tool", "content": "18°C is 64.4°F", "tool_call_id": f"{ids}3"},
        {"role": "assistant", "content": ANSWER},
    ]


IDS = {"openai": "call_mock_", "anthropic": "toolu_mock_"}
#: The SDK methods the producers patch, as they are before any test instruments them.
SDK_METHODS = [(Completions, "create"), (Messages, "create")]
ORIGINALS = [vars(cls)[name] for cls, name in SDK_METHODS]
#: The metadata of a model step's first output event that producers can record.
STEP_KEYS = ("model", "provider", "response_id", "finish_reasons", "usage")


@dataclass(frozen=True)
class Producer:
    run: Callable[[Harness], Run]
    api: str = "openai"
    #: step metadata the producer does not record
    unrecorded: frozenset[str] = frozenset()
    #: finish reasons as the producer writes them, from the API's
    finish_reasons: dict[str, str] = field(default_factory=dict)
    #: tool results come from the producer's own tool spans (else from the next model call's inputs)
    tool_spans: bool = False


PRODUCERS: dict[str, Producer] = {
    "spanfold": Producer(run_spanfold, tool_spans=True),
    "spanfold-anthropic": Producer(partial(run_spanfold, api="anthropic"), api="anthropic", tool_spans=True),
    "otel-v2-latest": Producer(run_otel_v2_latest),
    "otel-v2-events": Producer(run_otel_v2_events),
    # OpenLLMetry 0.62 maps finish reasons to the semconv enum
    "openllmetry": Producer(run_openllmetry, finish_reasons={"tool_calls": "tool_call"}, tool_spans=True),
    "openllmetry-anthropic-legacy": Producer(
        partial(run_openllmetry, api="anthropic"), api="anthropic", tool_spans=True
    ),
    # OpenLLMetry's event mode: the history as system / user events only, the calls in the choice events
    "openllmetry-events": Producer(
        partial(run_openllmetry, events=True), finish_reasons={"tool_calls": "tool_call"}, tool_spans=True
    ),
    # OpenInference records no response id
    "openinference": Producer(run_openinference, unrecorded=frozenset({"response_id"}), tool_spans=True),
}


@pytest.fixture
def harness(_global_provider: Any, _global_exporter: Any) -> Iterator[Harness]:
    yield Harness(_global_provider, _global_exporter)


def steps(run: Run, producer: Producer) -> list[dict[str, Any]]:
    """Per model step (its first output event), the metadata the producer records."""
    out = []
    for event in run.fold().events:
        if event.role == "assistant" and "model" in event.metadata:
            out.append({k: event.metadata.get(k) for k in STEP_KEYS if k not in producer.unrecorded})
    return out


def tool_sources(run: Run) -> list[str]:
    """For each tool-result event, the name of the span it was read from."""
    names = {format(s.context.span_id, "016x"): s.name for s in run.spans if s.context is not None}
    return [names[e.metadata["span_id"]] for e in run.fold().events if e.role == "tool"]


@pytest.mark.parametrize("name", list(PRODUCERS))
def test_same_flat_trace(harness: Harness, name: str) -> None:
    producer = PRODUCERS[name]
    ours = run_spanfold(harness, api=producer.api)
    theirs = producer.run(harness)

    assert theirs.answer == ours.answer == ANSWER
    assert theirs.invariant() == expected(IDS[producer.api])
    assert ours.invariant() == expected(IDS[producer.api])

    mine = steps(ours, producer)
    for step in mine:
        step["finish_reasons"] = [producer.finish_reasons.get(r, r) for r in step["finish_reasons"]]
    assert steps(theirs, producer) == mine
    assert len(mine) == 3
    assert theirs.fold().meta.usage == ours.fold().meta.usage
    assert theirs.fold().meta.models == ours.fold().meta.models

    # nothing stays patched for the next test (OpenLLMetry's uninstrument() leaves its wrapper: producers.LEFT_PATCHED)
    assert [vars(cls)[name] for cls, name in SDK_METHODS] == ORIGINALS

    sources = tool_sources(theirs)
    if producer.tool_spans:  # each result from the tool's own span, paired with the model's call
        assert [s for s in sources if "get_weather" in s] == sources[:2]
        assert "convert_temperature" in sources[2]
    else:  # each result from the input messages of the model call after it
        model_spans = {s.name for s in theirs.spans if s.name not in ("weather run",)}
        assert set(sources) <= model_spans
        assert len(sources) == 3


def test_rewriters_leave_spanfold_spans_alone(harness: Harness) -> None:
    """spanfold's own spans (and plain user spans) are read by the generic path: no producer's rewriter claims them."""
    from spanfold.exporter.dialects.dispatch import REWRITERS
    from spanfold.exporter.records import from_readable

    run = run_spanfold(harness)
    assert {s.name for s in run.spans} >= {"chat gpt-4o-mini", "execute_tool get_weather", "weather run"}
    for span in run.spans:
        record = from_readable(span)
        assert [rewrite(record) for rewrite in REWRITERS] == [None] * len(REWRITERS), span.name

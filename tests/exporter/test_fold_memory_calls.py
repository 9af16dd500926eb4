"""A model call made inside a memory operation is the memory's work (mem0's ``add`` extracts facts with a chat call
of its own): a model step of the run, its tokens and cost counted, never events of the agent's conversation. A model
call under a retrieval (a query engine's answer) or directly under the agent stays the conversation."""

from __future__ import annotations

import json
from typing import Any

from spanfold.exporter.fold.folding import fold
from spanfold.exporter.records import SpanRecord

QUESTION = [{"role": "user", "parts": [{"type": "text", "content": "Where do I live?"}]}]
ANSWER = [{"role": "assistant", "parts": [{"type": "text", "content": "Paris."}], "finish_reason": "stop"}]
EXTRACT = [
    {"role": "system", "parts": [{"type": "text", "content": "Extract the facts of the conversation as JSON."}]},
    {"role": "user", "parts": [{"type": "text", "content": "I live in Paris"}]},
]
FACTS = [{"role": "assistant", "parts": [{"type": "text", "content": '{"facts": ["Lives in Paris"]}'}]}]


def chat(span_id: int, parent: int, start: int, inputs: Any, outputs: Any, tokens: int) -> SpanRecord:
    return SpanRecord(
        1,
        span_id,
        parent,
        "chat gpt-4o-mini",
        start,
        start + 10,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.usage.input_tokens": tokens,
            "gen_ai.usage.output_tokens": 3,
            "gen_ai.input.messages": json.dumps(inputs),
            "gen_ai.output.messages": json.dumps(outputs),
        },
    )


def aside(span_id: int, parent: int, start: int, operation: str) -> SpanRecord:
    return SpanRecord(1, span_id, parent, operation, start, start + 30, {"gen_ai.operation.name": operation})


AGENT = SpanRecord(1, 1, None, "invoke_agent bot", 0, 200, {"gen_ai.operation.name": "invoke_agent"})


def test_a_memory_operation_s_model_call_is_counted_but_not_the_conversation() -> None:
    trace = fold(
        [
            AGENT,
            aside(2, 1, 10, "create_memory"),
            chat(3, 2, 15, EXTRACT, FACTS, 40),
            chat(4, 1, 100, QUESTION, ANSWER, 9),
        ],
        trace_id="t",
    )
    assert [e.to_invariant() for e in trace.events] == [
        {"role": "user", "content": "Where do I live?"},
        {"role": "assistant", "content": "Paris."},
    ]
    kinds = [(s.kind, s.span_id) for s in trace.meta.steps]
    assert kinds == [("memory", format(2, "016x")), ("model", format(3, "016x")), ("model", format(4, "016x"))]
    assert trace.meta.usage.input_tokens == 49  # both calls' tokens are the run's


def test_a_retrieval_s_model_call_stays_the_conversation() -> None:
    trace = fold([AGENT, aside(2, 1, 10, "retrieval"), chat(3, 2, 15, QUESTION, ANSWER, 9)], trace_id="t")
    assert [e.to_invariant() for e in trace.events] == [
        {"role": "user", "content": "Where do I live?"},
        {"role": "assistant", "content": "Paris."},
    ]


def test_an_agent_inside_a_memory_operation_is_a_conversation_again() -> None:
    inner = SpanRecord(1, 3, 2, "invoke_agent helper", 12, 60, {"gen_ai.operation.name": "invoke_agent"})
    trace = fold([AGENT, aside(2, 1, 10, "search_memory"), inner, chat(4, 3, 15, QUESTION, ANSWER, 9)], trace_id="t")
    assert [e.to_invariant() for e in trace.events][-1] == {"role": "assistant", "content": "Paris."}

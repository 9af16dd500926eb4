"""One API call recorded by two producers (OpenLLMetry's anthropic span and the anthropic SDK's own span) folds to
one model step: the same flat trace and token totals as with one producer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from spanfold import counters
from spanfold.exporter.fold.folding import fold
from spanfold.exporter.records import SpanRecord

from .producers import Harness, run_openllmetry


@pytest.fixture
def harness(_global_provider: Any, _global_exporter: Any) -> Iterator[Harness]:
    yield Harness(_global_provider, _global_exporter)


def test_sdk_native_span_beside_a_peers_span_is_one_step(harness: Harness) -> None:
    alone = run_openllmetry(harness, api="anthropic")
    both = run_openllmetry(harness, api="anthropic", native_spans=True)
    native = [s for s in both.spans if s.name == "anthropic.messages.create"]
    assert len(native) == 3  # the SDK did record each of the three calls itself
    counters.reset()
    trace = both.fold()
    assert counters.snapshot().get("fold.duplicate_model_steps") == 3
    assert trace.to_invariant() == alone.fold().to_invariant()
    assert trace.meta.usage == alone.fold().meta.usage


def _chat(span_id: int, start: int, end: int, text: str, response_id: str = "chatcmpl-same") -> SpanRecord:
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "m",
        "gen_ai.response.id": response_id,
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": text}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]),
    }
    return SpanRecord(1, span_id, 9, f"chat m {span_id}", start, end, attrs)


def test_separate_calls_answered_with_one_id_stay_apart() -> None:
    """A mock server may give every response the same id: calls one after the other are still two steps."""
    root = SpanRecord(1, 9, None, "run", 0, 100, {})
    trace = fold([root, _chat(1, 10, 20, "first"), _chat(2, 30, 40, "second")], trace_id="t")
    assert [e.content for e in trace.events] == ["first", "ok", "second", "ok"]
    nested = fold([root, _chat(1, 10, 40, "first"), _chat(2, 15, 35, "first")], trace_id="t")
    assert [e.content for e in nested.events] == ["first", "ok"]


def _record(span_id: int, start: int, end: int, attrs: dict[str, Any], name: str) -> SpanRecord:
    return SpanRecord(1, span_id, 9, name, start, end, attrs)


def test_parallel_results_keep_the_models_order_when_only_some_calls_have_tool_spans() -> None:
    """Calls c1 and c2 in one turn; only c2 ran under a tool span: c1's result comes from the next call's inputs, and
    still goes first."""
    call = {
        "role": "assistant",
        "parts": [
            {"type": "tool_call", "id": "c1", "name": "a", "arguments": {}},
            {"type": "tool_call", "id": "c2", "name": "b", "arguments": {}},
        ],
    }
    user = {"role": "user", "parts": [{"type": "text", "content": "go"}]}
    results = [
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "R1"}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c2", "response": "R2"}]},
    ]
    done = {"role": "assistant", "parts": [{"type": "text", "content": "done"}]}

    def chat(inputs: list[Any], outputs: list[Any]) -> dict[str, Any]:
        return {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(inputs),
            "gen_ai.output.messages": json.dumps(outputs),
        }

    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "b", "gen_ai.tool.call.id": "c2"}
    records = [
        SpanRecord(1, 9, None, "invoke_agent bot", 0, 100, {"gen_ai.operation.name": "invoke_agent"}),
        _record(1, 10, 20, chat([user], [call]), "chat m"),
        _record(2, 22, 25, {**tool, "gen_ai.tool.call.result": "R2"}, "execute_tool b"),
        _record(3, 30, 40, chat([user, call, *results], [done]), "chat m"),
    ]
    events = fold(records, trace_id="t").to_invariant()
    assert [(e["role"], e.get("tool_call_id"), e["content"]) for e in events] == [
        ("user", None, "go"),
        ("assistant", None, None),
        ("tool", "c1", "R1"),
        ("tool", "c2", "R2"),
        ("assistant", None, "done"),
    ]

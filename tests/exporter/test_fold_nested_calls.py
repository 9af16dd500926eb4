"""The fold's framework-vs-provider rule (``fold.drop_nested_calls``): a model step inside another model step is
one call; the trace holds one model step for it and counts its tokens once. Framework-only, provider-only, both;
the richer span kept; a plain span between them; separate calls never merged."""

from __future__ import annotations

import json
from typing import Any

from spanfold import counters
from spanfold.exporter.fold.folding import fold
from spanfold.exporter.records import SpanRecord

QUESTION = [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}]
ANSWER = [{"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}], "finish_reason": "stop"}]


def chat(span_id: int, parent: int | None, start: int, end: int, *, content: bool = True, **attrs: Any) -> SpanRecord:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 2,
    }
    if content:
        attributes["gen_ai.input.messages"] = json.dumps(QUESTION)
        attributes["gen_ai.output.messages"] = json.dumps(ANSWER)
    attributes.update(attrs)
    return SpanRecord(1, span_id, parent, "chat gpt-4o", start, end, attributes)


def agent(span_id: int = 1) -> SpanRecord:
    return SpanRecord(1, span_id, None, "invoke_agent bot", 0, 100, {"gen_ai.operation.name": "invoke_agent"})


def folded(*records: SpanRecord) -> tuple[list[dict[str, Any]], Any]:
    trace = fold(list(records), trace_id="t")
    return [e.to_invariant() for e in trace.events], trace.meta


ONE_CALL = [{"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": "Sunny."}]


def test_framework_only() -> None:
    events, meta = folded(agent(), chat(2, 1, 10, 50, **{"gen_ai.provider.name": "pydantic-ai"}))
    assert events == ONE_CALL and meta.usage.input_tokens == 10


def test_provider_only() -> None:
    events, meta = folded(agent(), chat(3, 1, 20, 40))
    assert events == ONE_CALL and meta.usage.input_tokens == 10


def test_both_keeps_the_provider_span() -> None:
    events, meta = folded(agent(), chat(2, 1, 10, 50), chat(3, 2, 20, 40, **{"gen_ai.provider.name": "openai"}))
    assert events == ONE_CALL
    assert (meta.usage.input_tokens, meta.usage.output_tokens) == (10, 2)
    trace = fold([agent(), chat(2, 1, 10, 50), chat(3, 2, 20, 40)], trace_id="t")
    assert trace.events[-1].metadata["span_id"] == format(3, "016x")
    assert counters.snapshot()["fold.duplicate_model_steps"] == 2


def test_both_keeps_the_span_with_content_and_the_other_s_usage() -> None:
    """ADK's ``call_llm`` (content, no usage) around its ``generate_content`` span (usage, no content)."""
    outer = chat(2, 1, 10, 50)
    del outer.attributes["gen_ai.usage.input_tokens"], outer.attributes["gen_ai.usage.output_tokens"]  # type: ignore[attr-defined]
    events, meta = folded(agent(), outer, chat(3, 2, 20, 40, content=False))
    assert events == ONE_CALL and (meta.usage.input_tokens, meta.usage.output_tokens) == (10, 2)


def test_a_plain_span_between_them() -> None:
    http = SpanRecord(1, 4, 2, "POST", 15, 45, {"http.request.method": "POST"})
    events, meta = folded(agent(), chat(2, 1, 10, 50), http, chat(3, 4, 20, 40))
    assert events == ONE_CALL and meta.usage.input_tokens == 10


def test_separate_calls_are_kept() -> None:
    """Two calls side by side under one agent (even overlapping, as parallel calls do) are two steps."""
    second = [{"role": "assistant", "parts": [{"type": "text", "content": "Rainy."}]}]
    other = chat(3, 1, 20, 60, **{"gen_ai.output.messages": json.dumps(second)})
    events, meta = folded(agent(), chat(2, 1, 10, 50), other)
    assert meta.usage.input_tokens == 20
    assert [e["content"] for e in events if e["role"] == "assistant"] == ["Sunny.", "Rainy."]


def test_three_levels_one_step() -> None:
    events, meta = folded(agent(), chat(2, 1, 10, 50), chat(3, 2, 15, 45), chat(4, 3, 20, 40))
    assert events == ONE_CALL and meta.usage.input_tokens == 10


def test_parent_cycle_in_bad_input_ends() -> None:
    a = chat(2, 3, 10, 50)
    b = SpanRecord(1, 3, 2, "loop", 10, 50, {})
    events, _ = folded(a, b)
    assert events == ONE_CALL


def test_same_times_child_listed_first() -> None:
    """Clocks of millisecond precision give the framework's span and the provider's the same times; span order in a
    batch is the order they ended (the child first)."""
    events, meta = folded(chat(3, 2, 10, 50), chat(2, 1, 10, 50), agent())
    assert events == ONE_CALL and meta.usage.input_tokens == 10


def test_model_steps_in_a_parent_cycle_end() -> None:
    events, _ = folded(chat(2, 3, 10, 50), chat(3, 2, 10, 50))
    assert events == ONE_CALL

"""The fold's rule for one tool run seen by two producers (exporter/fold/nested_tools.py), on span records: a tool step
nested (through any spans) in a tool step of the same name is that step; what the outer lacks comes from the inner."""

from __future__ import annotations

import json
from typing import Any

from spanfold.exporter.fold.folding import fold
from spanfold.exporter.records import SpanRecord

CALL = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {}}]}]


def record(span_id: int, parent: int | None, name: str, start: int, end: int, **attrs: Any) -> SpanRecord:
    return SpanRecord(1, span_id, parent, name, start, end, attributes=attrs)


def tool(span_id: int, parent: int | None, name: str, start: int, end: int, **attrs: Any) -> SpanRecord:
    return record(
        span_id, parent, f"execute_tool {name}", start, end,
        **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}, **attrs,
    )  # fmt: skip


def spans(*inner: SpanRecord) -> list[SpanRecord]:
    chat = record(
        2, 1, "chat m", 10, 20, **{"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(CALL)}
    )
    agent = record(1, None, "invoke_agent a", 0, 100, **{"gen_ai.operation.name": "invoke_agent"})
    return [agent, chat, *inner]


def test_a_server_span_under_the_client_span_is_one_step() -> None:
    client = tool(3, 1, "get_weather", 30, 60, **{"gen_ai.tool.call.result": "sunny"})
    send = record(4, 3, "MCP send tools/call get_weather", 31, 59)
    server = tool(5, 4, "get_weather", 32, 58, **{"gen_ai.tool.call.id": "c1"})
    events = fold(spans(client, send, server), trace_id="t").to_invariant()
    assert events[1:] == [{"role": "tool", "content": "sunny", "tool_call_id": "c1"}]


def test_a_chain_of_three_folds_upwards_and_other_names_stay() -> None:
    outer = tool(3, 1, "get_weather", 30, 70)
    middle = tool(4, 3, "get_weather", 31, 69, **{"gen_ai.tool.call.arguments": "{}"})
    inner = tool(5, 4, "get_weather", 32, 68, **{"gen_ai.tool.call.result": "sunny"})
    other = tool(6, 3, "lookup", 33, 40, **{"gen_ai.tool.call.result": "42"})
    trace = fold(spans(outer, middle, inner, other), trace_id="t")
    assert [(e.role, e.name, e.content) for e in trace.events[1:]] == [
        ("tool", "lookup", "42"),
        ("tool", "get_weather", "sunny"),
    ]

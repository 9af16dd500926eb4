"""The shipped JSON Schemas and what ``validate_value`` reports for each class of problem."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from spanfold.trace import formats
from spanfold.trace.decode import decode_trace
from spanfold.trace.validate import SCHEMAS, load_schema, validate_value

GOOD_CALL = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": {"q": "x"}}}
GOOD = [
    {"role": "user", "content": "hi", "timestamp": "2026-01-02T03:04:05Z"},
    {"role": "assistant", "content": None, "tool_calls": [GOOD_CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok"}]},
    {"role": "assistant", "content": [{"type": "image", "image_url": "data:image/png;base64,AA=="}]},
]


@pytest.mark.parametrize("name", sorted(set(SCHEMAS.values())))
def test_every_schema_is_valid_draft_2020_12_and_shipped(name: str) -> None:
    schema = load_schema(name)
    Draft202012Validator.check_schema(schema)
    assert schema["$id"].endswith(f"/{name}.schema.json")


def test_every_format_spanfold_writes_is_valid() -> None:
    trace = decode_trace(GOOD)
    assert validate_value(GOOD) == ("invariant", [])
    for fmt, shape in [("agentv", "agentv"), ("compact", "compact"), ("agentv-cli", "agentv-cli")]:
        assert validate_value(formats.to_value(trace, fmt)) == (shape, []), fmt
    assert validate_value(formats.to_value(trace, "invariant", style="object")) == ("invariant-object", [])
    assert validate_value(formats.to_value(trace, "agentv", summary_only=True)) == ("agentv-summary", [])
    assert validate_value(formats.meta_record(trace)) == ("metadata", [])


def issues(value: Any, fmt: str | None = None) -> list[str]:
    return [str(i) for i in validate_value(value, fmt)[1]]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # wrong types
        ([{"role": 5}], ["$[0].role: 5 is not of type 'string'"]),
        ([{"role": "user", "content": 5}], ["$[0].content: 5 is not of type 'string', 'array', 'null'"]),
        (
            [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": [1]}}]}],
            ["$[0].tool_calls[0].function.arguments: [1] is not of type 'object', 'string'"],
        ),
        (
            [{"role": "assistant", "tool_calls": {"id": "1"}}],
            ["$[0].tool_calls: {'id': '1'} is not of type 'array', 'null'"],
        ),
        # missing fields
        ([{"content": "x"}], ["$[0]: 'role' is a required property"]),
        (
            [{"role": "assistant", "tool_calls": [{"id": "1"}]}],
            ["$[0].tool_calls[0]: 'function' is a required property"],
        ),
        (
            [{"role": "assistant", "tool_calls": [{"function": {"arguments": {}}}]}],
            ["$[0].tool_calls[0].function: 'name' is a required property"],
        ),
        ([{"role": "user", "content": [{"type": "text"}]}], ["$[0].content[0]: 'text' is a required property"]),
        ([{"role": "user", "content": [{"type": "image"}]}], ["$[0].content[0]: 'image_url' is a required property"]),
        # bad values
        ([{"role": "user", "timestamp": "yesterday"}], ["$[0].timestamp: 'yesterday' does not match"]),
        ([{"role": ""}], ["$[0].role: '' should be non-empty"]),
        # every problem, in document order
        (
            [{"role": 1}, {"role": "user", "content": 2}, {}],
            [
                "$[0].role: 1 is not of type 'string'",
                "$[1].content: 2 is not of type 'string', 'array', 'null'",
                "$[2]: 'role' is a required property",
            ],
        ),
        # an object where a list belongs
        ({"role": "user", "content": "hi"}, ["$: a trace must be an event list (or an AgentV document with a 'trace'"]),
        # consistency beyond the schema
        (
            [{"role": "tool", "tool_call_id": "zz", "content": "?"}],
            ["$[0].tool_call_id: 'zz' answers no earlier tool call"],
        ),
    ],
)
def test_invariant_problems(value: Any, expected: list[str]) -> None:
    found = issues(value)
    assert len(found) == len(expected), found
    for got, want in zip(found, expected, strict=True):
        assert got.startswith(want), (got, want)


def test_a_forced_format_checks_the_whole_value() -> None:
    assert issues({"role": "user"}, "invariant") == ["$: {'role': 'user'} is not of type 'array'"]
    assert issues(GOOD, "agentv") == [f"$: {GOOD!r} is not of type 'object'"]


def agentv(*events: dict[str, Any], **doc: Any) -> dict[str, Any]:
    return {"trace": list(events), **doc}


TS = "2026-01-02T03:04:05.123Z"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (agentv({"type": "thought", "timestamp": TS}), "$.trace[0].type: 'thought' is not one of"),
        (agentv({"type": "message"}), "$.trace[0]: 'timestamp' is a required property"),
        (agentv({"type": "message", "timestamp": "noon"}), "$.trace[0].timestamp: 'noon' does not match"),
        (agentv({"type": "tool_call", "timestamp": TS}), "$.trace[0]: 'name' is a required property"),
        (
            agentv({"type": "message", "timestamp": TS, "metadata": []}),
            "$.trace[0].metadata: [] is not of type 'object'",
        ),
        (
            agentv(trace_summary={"eventCount": -1, "toolNames": [], "toolCallsByName": {}, "errorCount": 0}),
            "$.trace_summary.eventCount: -1 is less than the minimum of 0",
        ),
        (
            agentv(
                {"type": "tool_call", "timestamp": TS, "name": "a"},
                trace_summary={"eventCount": 1, "toolNames": ["a"], "toolCallsByName": {"a": 2}, "errorCount": 0},
            ),
            "$.trace_summary.toolCallsByName: is {'a': 2} but the events give {'a': 1}",
        ),
        (agentv(metadata={"status": "done"}), "$.metadata.status: 'done' is not one of"),
    ],
)
def test_agentv_problems(value: Any, expected: str) -> None:
    found = issues(value)
    assert len(found) == 1 and found[0].startswith(expected), found


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([{"role": "tool", "tool_calls": [{"tool": "a"}]}], "$[0].role: 'tool' is not allowed here"),
        ([{"role": "assistant", "tool_calls": [{"tool": "a", "duration_ms": "1s"}]}], "$[0].tool_calls[0].duration_ms"),
        ({"text": "x", "output": [{"role": "user"}], "token_usage": {"input": -1}}, "$.token_usage.input: -1 is less"),
        ({"metadata": {"usage": {"input_tokens": "many"}}}, "$.metadata.usage.input_tokens: 'many' is not of type"),
    ],
)
def test_compact_cli_and_metadata_problems(value: Any, expected: str) -> None:
    found = issues(value)
    assert len(found) == 1 and found[0].startswith(expected), found

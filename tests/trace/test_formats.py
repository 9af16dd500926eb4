"""Round trips between the formats: Invariant <-> AgentV <-> compact <-> AgentV CLI JSON, and the shapes each reads."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from spanfold.trace import formats
from spanfold.trace.compact import compact_messages
from spanfold.trace.decode import decode, decode_trace, shape_of
from spanfold.trace.errors import TraceError
from spanfold.trace.model import Message, ToolCall, Trace, TraceMeta, TraceSummary, Usage

T0, T1, T2, T3, T4 = (f"2026-01-02T03:04:0{s}.000Z" for s in range(5))

#: An Invariant trace using every feature: system + multimodal user message, parallel calls (one with
#: arguments that are not JSON), a failed tool, an assistant answer, a failed model call; timestamps on all.
INVARIANT: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief.", "timestamp": T0},
    {
        "role": "user",
        "content": [{"type": "text", "text": "What is this? "}, {"type": "image", "image_url": "https://x/cat.png"}],
        "timestamp": T0,
    },
    {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "search", "arguments": {"q": "cat", "n": 2}}},
            {"id": "c2", "type": "function", "function": {"name": "fetch", "arguments": "not json {"}},
        ],
        "timestamp": T1,
    },
    {"role": "tool", "content": "a cat", "tool_call_id": "c1", "timestamp": T2},
    {
        "role": "tool",
        "content": "timed out",
        "tool_call_id": "c2",
        "error": {"type": "TimeoutError", "message": "timed out"},
        "timestamp": T3,
    },
    {"role": "assistant", "content": "A cat.", "timestamp": T4},
    {
        "role": "error",
        "content": "openai.RateLimitError: slow down",
        "error": {"type": "openai.RateLimitError", "message": "slow down"},
        "timestamp": T4,
    },
]


def trace_of(events: list[dict[str, Any]], **meta: Any) -> Trace:
    trace = decode_trace(events)
    trace.meta = TraceMeta(trace_id=meta.pop("trace_id", "t1"), **meta)
    return trace


def test_invariant_agentv_invariant_is_lossless() -> None:
    trace = trace_of(INVARIANT, start=T0, end=T4, usage=Usage(10, 5), models=["m"])
    doc = formats.to_value(trace, "agentv")
    assert [e["type"] for e in doc["trace"]] == [
        "message",
        "message",
        "model_step",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "model_step",
        "error",
    ]
    assert doc["trace"][1]["text"] == "What is this? "  # AgentV text; the chunks ride in metadata
    assert doc["trace"][1]["metadata"]["content"] == INVARIANT[1]["content"]
    assert doc["trace"][4]["input"] == "not json {"  # unparseable arguments kept as the string
    assert doc["trace"][6]["name"] == "fetch"  # the tool name, found through the call id
    assert doc["trace_summary"] == {
        "eventCount": 9,
        "toolNames": ["fetch", "search"],
        "toolCallsByName": {"fetch": 1, "search": 1},
        "errorCount": 2,
        # AgentV 4.42's names beside the seed design's: the failed model call counts as an LLM call
        "toolCalls": {"search": 1, "fetch": 1},
        "llmCallCount": 3,
        "toolDurations": {"search": [1000.0], "fetch": [2000.0]},
    }
    back = decode(json.loads(json.dumps(doc)))
    assert back.shape == "agentv"
    assert back.trace is not None
    assert back.trace.to_invariant(timestamps=True) == INVARIANT
    assert back.trace.meta.to_dict() == trace.meta.to_dict()
    assert back.trace.summary() == trace.summary()


def test_invariant_compact_invariant_keeps_calls_outputs_and_times() -> None:
    trace = trace_of(INVARIANT[:4] + INVARIANT[5:6])  # compact has no place for failed calls' errors
    compact = formats.to_value(trace, "compact")
    assert compact[2] == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "tool": "search",
                "input": {"q": "cat", "n": 2},
                "output": "a cat",
                "id": "c1",
                "start_time": T1,
                "end_time": T2,
                "duration_ms": 1000.0,
            },
            {"tool": "fetch", "input": "not json {", "id": "c2", "start_time": T1},
        ],
    }
    assert compact[1]["content"] == "What is this? "  # compact content is text
    back = decode(compact)
    assert back.shape == "compact" and back.trace is not None
    events = back.trace.to_invariant(timestamps=True)
    assert [e["role"] for e in events] == ["system", "user", "assistant", "tool", "assistant"]
    assert events[2]["tool_calls"] == INVARIANT[2]["tool_calls"]
    assert events[3] == {"role": "tool", "content": "a cat", "tool_call_id": "c1", "timestamp": T2}
    assert compact_messages(back.trace) == compact  # compact -> trace -> compact is exact


def test_the_agentv_design_example_reads_as_compact() -> None:
    spec = yaml.safe_load(
        """
- role: assistant
  tool_calls:
    - tool: getWeather
      input: { city: "NYC" }
      output: "72°F"
    - tool: getTime
      input:
        timezone: "EST"
        format: "24h"
      output: "14:30"
"""
    )
    trace = decode_trace(spec)
    assert [(e.role, [c.name for c in e.tool_calls]) for e in trace.events] == [
        ("assistant", ["getWeather", "getTime"]),
        ("tool", []),
        ("tool", []),
    ]
    assert [e.content for e in trace.events[1:]] == ["72°F", "14:30"]
    assert compact_messages(trace) == spec


def test_agentv_cli_document_round_trip() -> None:
    trace = trace_of(INVARIANT[:4] + INVARIANT[5:6], usage=Usage(120, 30), duration_ms=4000.0)
    doc = formats.to_value(trace, "agentv-cli")
    assert doc["text"] == "A cat."
    assert doc["token_usage"] == {"input": 120, "output": 30}
    assert doc["duration_ms"] == 4000.0
    assert doc["output"] == formats.to_value(trace, "compact")
    back = decode(json.loads(json.dumps(doc)))
    assert back.shape == "agentv-cli" and back.trace is not None
    assert formats.to_value(back.trace, "agentv-cli") == doc


def test_invariant_object_line_and_dataset_metadata() -> None:
    trace = trace_of(INVARIANT, name="bot")
    obj = formats.to_value(trace, "invariant", style="object")
    assert set(obj) == {"messages", "metadata"} and obj["metadata"]["name"] == "bot"
    back = decode(obj)
    assert back.shape == "invariant-object" and back.trace is not None
    assert back.trace.to_invariant(timestamps=True) == INVARIANT
    assert back.trace.meta.name == "bot"
    dataset = decode({"metadata": {"accuracy": 0.5}})
    assert (dataset.shape, dataset.trace, dataset.raw_metadata) == ("metadata", None, {"accuracy": 0.5})


def test_per_trace_json_document_is_invariant() -> None:
    doc = {"trace": INVARIANT, "metadata": {"trace_id": "abc"}, "summary": {}}
    decoded = decode(doc)
    assert decoded.shape == "invariant-document" and decoded.trace is not None
    assert decoded.trace.meta.trace_id == "abc"


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [({"a": 1}, {"a": 1}), ('{"a": 1}', {"a": 1}), ("not json", "not json"), ("[1, 2]", "[1, 2]"), (None, {})],
)
def test_arguments_accepted_as_dict_or_json_string_written_as_dict(raw: Any, parsed: Any) -> None:
    call: dict[str, Any] = {"id": "1", "type": "function", "function": {"name": "f"}}
    if raw is not None:
        call["function"]["arguments"] = raw
    trace = decode_trace([{"role": "assistant", "content": None, "tool_calls": [call]}])
    assert trace.to_invariant()[0]["tool_calls"][0]["function"]["arguments"] == parsed


def test_a_tool_call_without_id_or_type_as_the_traces_document_shows_it() -> None:
    trace = decode_trace(
        [
            {
                "role": "assistant",
                "content": "Sending.",
                "tool_calls": [
                    {"type": "function", "function": {"name": "send_email", "arguments": {"to": "mom@mail.com"}}}
                ],
            },
            {"role": "tool", "content": "Email sent successfully."},
        ]
    )
    assert trace.tool_calls() == [ToolCall(None, "send_email", {"to": "mom@mail.com"})]
    assert compact_messages(trace)[0]["tool_calls"] == [
        {"tool": "send_email", "input": {"to": "mom@mail.com"}, "output": "Email sent successfully."}
    ]


def test_undated_events_get_a_time_for_agentv_that_does_not_come_back() -> None:
    trace = trace_of([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    doc = formats.to_value(trace, "agentv")
    assert [e["timestamp"] for e in doc["trace"]] == [formats.UNKNOWN_TIME] * 2
    assert all(e["metadata"]["timestamp_inferred"] is True for e in doc["trace"])
    back = decode_trace(doc)
    assert [e.timestamp for e in back.events] == [None, None]
    assert back.to_invariant() == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]


def test_summary_is_the_same_from_every_format() -> None:
    trace = trace_of(INVARIANT)
    expected = trace.summary()
    for fmt in ("invariant", "agentv"):
        back = decode_trace(json.loads(json.dumps(formats.to_value(trace, fmt))))
        assert back.summary() == expected, fmt
    # compact keeps a failed tool's output but not that it failed: one error fewer
    compact = decode_trace(formats.to_value(trace, "agentv-cli"))
    assert compact.summary().tool_calls_by_name == expected.tool_calls_by_name
    assert compact.summary().error_count == expected.error_count - 1
    assert TraceSummary.from_dict(expected.to_dict()) == expected


def test_summary_only_output_has_no_events() -> None:
    trace = trace_of(INVARIANT, trace_id="abc")
    doc = formats.to_value(trace, "agentv", summary_only=True)
    assert set(doc) == {"trace_summary", "metadata"}
    decoded = decode(doc)
    assert (decoded.shape, decoded.trace, decoded.summary) == ("agentv-summary", None, trace.summary())
    with pytest.raises(ValueError, match="summary-only"):
        formats.to_value(trace, "compact", summary_only=True)


def test_the_exporter_lines_are_unchanged() -> None:
    """The writers' invariant line stays the bare Invariant list without timestamps."""
    trace = Trace([Message("user", "hi", timestamp=T0)], TraceMeta("t"))
    assert formats.invariant_line(trace) == '[{"role":"user","content":"hi"}]'
    assert formats.encode_line(trace, "agentv") == formats.agentv_line(trace)
    assert json.loads(formats.meta_line(trace))["metadata"]["trace_id"] == "t"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"role": "user"}, "a trace must be an event list (or an AgentV document with a 'trace' list)"),
        ("text", "a trace must be an event list (or an AgentV document with a 'trace' list)"),
        ([1], "event 1 is not an object"),
        ([{"content": "x"}], "event 1 has no role"),
        ([{"role": "user", "content": 5}], "event 1: content must be a string, a list of chunks or null"),
        ([{"role": "user", "content": ["x"]}], "event 1: content chunk 0 must be an object with a type"),
        ([{"role": "assistant", "tool_calls": {"a": 1}}], "event 1: tool_calls must be a list"),
        ([{"role": "assistant", "tool_calls": [{"function": {}}]}], "event 1: a tool call needs function.name"),
        ([{"role": "tool", "error": "boom"}], "event 1: error must be an object"),
        ({"messages": {}}, "messages must be a list"),
        ({"trace": "x"}, "trace must be a list of events"),
        ({"trace": [{"type": "thought", "timestamp": T0}]}, "event 1: type must be one of"),
        ([{"role": "assistant", "tool_calls": [{"input": {}}]}], "event 1: a tool call needs function.name"),
        ({"trace": [{"type": "tool_call", "timestamp": T0}]}, "event 1: a tool_call needs a name"),
    ],
)
def test_decode_errors_name_the_event(value: Any, message: str) -> None:
    with pytest.raises(TraceError) as info:
        decode_trace(value)
    assert str(info.value).startswith(message)


def test_shapes() -> None:
    assert shape_of([]) == "invariant"
    assert shape_of([{"role": "assistant", "tool_calls": [{"tool": "x"}]}]) == "compact"
    assert shape_of({"text": "", "output": []}) == "agentv-cli"
    assert shape_of({"trace": []}) == "agentv"
    assert shape_of({"trace_summary": {}}) == "agentv-summary"


def test_a_tool_output_of_image_chunks_survives_agentv() -> None:
    events = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "1", "type": "function", "function": {"name": "screenshot", "arguments": {}}}],
        },
        {
            "role": "tool",
            "content": [{"type": "image", "image_url": "data:image/png;base64,AA=="}],
            "tool_call_id": "1",
        },
        {"role": "tool", "content": '{"n": [1, 2]}', "tool_call_id": "2"},
    ]
    doc = formats.to_value(decode_trace(events), "agentv")
    assert decode_trace(doc).to_invariant() == events
    doc["trace"][2]["output"] = {"n": [1, 2]}  # AgentV output may be any JSON: read as its JSON text
    assert decode_trace(doc).to_invariant()[2]["content"] == '{"n": [1, 2]}'

"""One way through the fold (issue 29, item 3): span records -> steps (dialects) -> runs (grouping, stitching) -> fold
-> metadata -> writers. Each span is read by its dialect once, whichever way it goes (a trace of its own, a stitched
conversation, a span joining an open conversation); the fold folds the steps a run brings and reads no attribute; what
the runs stage needs of the assembler's buffers (a span still running) is handed to it, and it decides by that."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from typing import Any

import pytest

from spanfold import config
from spanfold.config import ASKING_IDLE_FACTOR
from spanfold.exporter.dialects import dispatch
from spanfold.exporter.files.writers import MemoryWriter
from spanfold.exporter.fold.folding import fold, fold_run
from spanfold.exporter.pipeline.assembler import Assembler, Policy
from spanfold.exporter.records import SpanRecord
from spanfold.exporter.runs.run import Run

RESOURCE = {"service.name": "agent"}
IDLE = 30.0
ASKS = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {}}]}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "18°C"}]}


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _chat(trace_id: int, span_id: int, inputs: list[Any], outputs: list[Any], t: int) -> SpanRecord:
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "m",
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
    }
    return SpanRecord(trace_id, span_id, None, "chat m", t, t + 1, attrs, kind="CLIENT", resource=RESOURCE)


def _tool(trace_id: int, span_id: int, t: int) -> SpanRecord:
    attrs = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.call.result": "18°C",
    }
    return SpanRecord(trace_id, span_id, None, "execute_tool get_weather", t, t + 1, attrs, resource=RESOURCE)


def _agent(trace_id: int, span_id: int, t: int) -> SpanRecord:
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}
    return SpanRecord(trace_id, span_id, None, "invoke_agent weather", 0, t, attrs, resource=RESOURCE)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[int]:
    """How many times each span (by span id) was read through its dialect."""
    counted: Counter[int] = Counter()
    to_step = dispatch.to_step

    def counting(record: SpanRecord) -> Any:
        counted[record.span_id] += 1
        return to_step(record)

    monkeypatch.setattr(dispatch, "to_step", counting)
    return counted


def test_each_span_is_read_once_whichever_way_it_goes(reads: Counter[int]) -> None:
    written = MemoryWriter()
    a = Assembler([written], config.load({"stitch_idle": IDLE}, environ={}), Policy())
    hi = [_text("user", "Weather in Paris?")]
    # a trace of its own: an agent run
    a.add(dataclasses.replace(_chat(1, 11, hi, [_text("assistant", "Sunny.")], 1), parent_id=10), 1.0)
    a.add(_agent(1, 10, 2), 1.0)
    # a zero-code run: a call asking for a tool, the tool run, the answer, each a trace of its own
    a.add(_chat(2, 21, hi, [ASKS], 3), 2.0)
    a.add(_tool(3, 31, 4), 2.0)
    a.add(_chat(4, 41, [*hi, ASKS, RESULT], [_text("assistant", "18°C.")], 5), 2.0)
    # a span of trace 4 ending after its trace was grouped: it joins the conversation holding trace 4
    late = dataclasses.replace(_tool(4, 42, 6), parent_id=41, attributes={"http.method": "GET"}, name="GET")
    a.add(late, 2.5)
    a.flush(3.0, final=False)
    assert [t.meta.extra.get("otel_trace_ids") for t in written.traces] == [
        None,
        [format(t, "032x") for t in (2, 3, 4)],
    ]
    assert [e.role for e in written.traces[1].events] == ["user", "assistant", "tool", "assistant"]
    assert dict(reads) == {11: 1, 10: 1, 21: 1, 31: 1, 41: 1, 42: 1}


def test_a_span_still_running_keeps_its_conversation_open() -> None:
    """spanfold's own zero-code run: the tool run carries the run's trace id and starts after its call's trace was
    grouped. While it runs (longer than both idle windows), the conversation holding that trace stays open; once it
    ends, it joins, and the run is written whole."""
    written = MemoryWriter()
    limits = {"stitch_idle": IDLE, "trace_timeout": 3600}  # a tool run may take an hour before it is cut
    a = Assembler([written], config.load(limits, environ={}), Policy())
    stitched = {"spanfold.stitched": True}
    hi = [_text("user", "Weather in Paris?")]
    asks = _chat(7, 1, hi, [ASKS], 1)
    asks = dataclasses.replace(asks, attributes={**asks.attributes, **stitched})
    tool = _tool(7, 2, 2)
    tool = dataclasses.replace(tool, parent_id=1, parent_is_remote=True, attributes={**tool.attributes, **stitched})
    a.started(7, 1, 0.0)
    a.add(asks, 1.0)  # trace 7 done: its conversation opens, waiting on the tool
    a.started(7, 2, 2.0)
    long_after = 2.0 + IDLE * ASKING_IDLE_FACTOR * 3
    a.expire(long_after)
    assert written.traces == [] and a.stats()["conversations_open"] == 1  # the tool is still running
    a.add(tool, long_after + 1)
    a.expire(long_after + 1 + IDLE * ASKING_IDLE_FACTOR + 1)
    (trace,) = written.traces
    assert [e.role for e in trace.events] == ["user", "assistant", "tool"]
    assert trace.events[2].content == "18°C"


def test_the_fold_folds_the_steps_a_run_brings_and_reads_no_attribute() -> None:
    hi = [_text("user", "Weather in Paris?")]
    records = [
        dataclasses.replace(_chat(1, 11, hi, [ASKS], 1), parent_id=10),
        dataclasses.replace(_tool(1, 12, 2), parent_id=10),
        dataclasses.replace(_chat(1, 13, [*hi, ASKS, RESULT], [_text("assistant", "18°C.")], 3), parent_id=10),
        _agent(1, 10, 4),
    ]
    steps = dispatch.steps_of(records)
    blank = [dataclasses.replace(r, attributes={}) for r in records]  # what a span says is in its step now
    trace = fold_run(Run([1], blank, steps, "incomplete"))
    whole = fold(records, trace_id=format(1, "032x"))
    assert [e.to_invariant() for e in trace.events] == [e.to_invariant() for e in whole.events]
    assert [e.role for e in trace.events] == ["user", "assistant", "tool", "assistant"]
    assert trace.meta.status == "incomplete" and whole.meta.status == "complete"
    assert trace.meta.name == "weather" and "otel_trace_ids" not in trace.meta.extra

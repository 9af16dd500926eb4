"""exporter/fold/meta.py's steps and status on their own (issue 36, items 6 and 7): each model call and tool run as the
metadata lists it, how a run ended, and each step linked to its first event as the writers write it. Pure units over
real step objects; the end to end tests (the real SDK, spanfold.init()) are tests/e2e/test_run_status.py."""

from __future__ import annotations

from spanfold.exporter.fold.meta import Tally, ending_error, step_time, trace_meta, worst
from spanfold.exporter.steps import AgentSpan, ModelStep, ToolStep
from spanfold.trace.formats import meta_dict
from spanfold.trace.model import Message, ToolCall, Trace, TraceMeta, Usage
from spanfold.trace.timing import steps_by_event

MS = 1_000_000
BASE = 1_767_225_600_000 * MS  # 2026-01-01T00:00:00Z


def model(span: int, start: int, end: int, *, error: dict[str, str] | None = None) -> ModelStep:
    return ModelStep(span, None, BASE + start * MS, BASE + end * MS, request_model="m", usage=Usage(10, 2), error=error)


def tool(
    span: int, start: int, end: int, *, call_id: str | None = "c1", error: dict[str, str] | None = None
) -> ToolStep:
    return ToolStep(span, None, BASE + start * MS, BASE + end * MS, "lookup", call_id=call_id, error=error)


def test_steps_in_the_order_they_started_with_their_times_models_tokens_and_errors() -> None:
    tally = Tally()
    for step in (model(1, 0, 40), tool(2, 41, 45, error={"type": "LookupError", "message": "no"}), model(3, 46, 60)):
        tally.add(step)
    meta = trace_meta("t", [], [], tally)
    assert [s.to_dict() for s in meta.steps] == [
        {
            "kind": "model",
            "start": "2026-01-01T00:00:00.000000Z",
            "duration_ms": 40.0,
            "model": "m",
            "usage": {"input_tokens": 10, "output_tokens": 2},
            "span_id": "0000000000000001",
        },
        {
            "kind": "tool",
            "start": "2026-01-01T00:00:00.041000Z",
            "duration_ms": 4.0,
            "name": "lookup",
            "call_id": "c1",
            "error": {"type": "LookupError", "message": "no"},
            "span_id": "0000000000000002",
        },
        {
            "kind": "model",
            "start": "2026-01-01T00:00:00.046000Z",
            "duration_ms": 14.0,
            "model": "m",
            "usage": {"input_tokens": 10, "output_tokens": 2},
            "span_id": "0000000000000003",
        },
    ]
    assert meta.status == "complete" and meta.error is None  # the failed tool was not the last step
    assert meta.usage == Usage(20, 4) and meta.models == ["m"]  # tools add no tokens


def test_a_run_ends_with_the_error_of_its_last_step_or_a_failed_root_agent() -> None:
    interrupted = tool(2, 10, 20, error={"type": "KeyboardInterrupt", "message": ""})
    assert ending_error([], [model(1, 0, 9), interrupted]) == {"type": "KeyboardInterrupt"}
    assert ending_error([], [model(1, 0, 30, error={"type": "E"}), tool(2, 10, 20)]) == {"type": "E"}  # ended last
    assert ending_error([], [model(1, 0, 9, error={"type": "E"}), model(3, 10, 20)]) is None  # retried and answered
    agent = AgentSpan(9, None, BASE, BASE + 50 * MS, "bot", error={"type": "ValueError", "message": "bad"})
    assert ending_error([agent], [model(1, 0, 9)]) == {"type": "ValueError", "message": "bad"}
    assert ending_error([], []) is None


def test_a_status_says_the_least_complete_of_how_it_ended_and_how_it_was_written() -> None:
    assert worst("error", "complete") == "error" and worst("complete", "error") == "error"
    assert worst("error", "incomplete") == "error" and worst("error", "truncated") == "truncated"


def test_each_step_is_linked_to_its_first_event() -> None:
    """As the writers link them (trace/timing.py): by span, else a tool run by its call id."""
    steps = [step_time(s) for s in (model(1, 0, 40), tool(2, 41, 45, call_id=None), tool(3, 41, 46, call_id="c2"))]
    calls = [ToolCall("c1", "lookup"), ToolCall("c2", "lookup")]
    events = [
        Message("user", "hi", metadata={"span_id": "0000000000000001"}),  # an input of step 1: not its first event
        Message("assistant", None, tool_calls=calls, metadata={"span_id": "0000000000000001"}),
        Message("tool", "a", tool_call_id="c1", metadata={"span_id": "0000000000000002"}),
        Message("tool", "b", tool_call_id="c2"),  # its output came with the next call's inputs: found by call id
    ]
    linked = steps_by_event(steps, events)
    assert {n: step.span_id for n, step in linked.items()} == {
        1: "0000000000000001",
        2: "0000000000000002",
        3: "0000000000000003",
    }
    written = meta_dict(Trace(events, TraceMeta("t", steps=steps)))
    assert [s["event"] for s in written["steps"]] == [1, 2, 3]


def test_a_step_without_an_event_stays_unlinked() -> None:
    step = step_time(model(1, 0, 5))
    assert steps_by_event([step], [Message("user", "hi")]) == {}
    assert "event" not in meta_dict(Trace([Message("user", "hi")], TraceMeta("t", steps=[step])))["steps"][0]

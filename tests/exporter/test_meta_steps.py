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


def test_a_model_steps_request_parameters_and_the_runs_providers() -> None:
    """Issue 51: a model call's ``params`` as its span states them (``gen_ai.request.*`` but the model; another
    span's are not its), read back by the trace model; the run's ``providers``: its model and embeddings calls'."""
    from spanfold.exporter.records import SpanRecord
    from spanfold.exporter.steps import AsideStep

    params = {
        "gen_ai.request.model": "m",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 64,
        "gen_ai.request.stop_sequences": ("END", "STOP"),
        "gen_ai.request.seed": 7,
    }
    records = [
        SpanRecord(1, 1, None, "chat m", BASE, BASE + 40 * MS, attributes=params),
        SpanRecord(1, 2, None, "execute_tool lookup", BASE, BASE + 45 * MS, {"gen_ai.request.temperature": 1.0}),
        SpanRecord(1, 3, None, "chat m", BASE + 46 * MS, BASE + 60 * MS),
    ]
    tally = Tally()
    first, second = model(1, 0, 40), model(3, 46, 60)
    first.provider, second.provider = "openai", "anthropic"
    embed = AsideStep(4, None, BASE, BASE + MS, "embeddings", provider="cohere")
    search = AsideStep(5, None, BASE, BASE + MS, "retrieval", provider="chroma")  # a store, not a model provider
    for step in (first, tool(2, 41, 45), second, embed, search):
        tally.add(step)
    written = trace_meta("t", records, [], tally).to_dict()
    steps = {s["span_id"][-1]: s for s in written["steps"]}
    assert steps["1"]["params"] == {"temperature": 0.2, "max_tokens": 64, "stop_sequences": ["END", "STOP"], "seed": 7}
    assert "params" not in steps["2"] and "params" not in steps["3"]  # a tool run's; a span that states none
    assert written["providers"] == ["anthropic", "cohere", "openai"]
    read = TraceMeta.from_dict(written)
    assert read.providers == ["anthropic", "cohere", "openai"]
    again = next(s for s in read.steps if s.span_id == steps["1"]["span_id"])
    assert again.params == steps["1"]["params"] and again.to_dict() == steps["1"]
    assert TraceMeta.from_dict({"providers": "openai"}).providers == []  # not a list: none


def test_the_agents_below_the_runs_root_and_each_steps_parent() -> None:
    """Issue 51: an agent below the run's root agent is listed in ``agents`` (a sub-agent with its ``parent``), each
    step names the agent it ran under (none under the root itself); a run with only its root agent is left as it
    was; a parent cycle in bad input ends the walk. The steps stay the model calls and tool runs."""
    from spanfold.exporter.records import SpanRecord

    def agent(span: int, parent: int | None, name: str, start: int, end: int) -> SpanRecord:
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
        return SpanRecord(1, span, parent, f"invoke_agent {name}", BASE + start * MS, BASE + end * MS, attrs)

    root = AgentSpan(10, None, BASE, BASE + 100 * MS, "boss")
    records = [agent(10, None, "boss", 0, 100), agent(11, 10, "helper", 5, 60), agent(12, 11, "deep", 10, 30)]
    records += [SpanRecord(1, 1, 10, "chat m", BASE, BASE + 4 * MS), SpanRecord(1, 2, 12, "chat m", BASE, BASE)]
    tally = Tally()
    for step in (model(1, 1, 4), model(2, 11, 20)):
        tally.add(step)
    written = trace_meta("t", records, [root], tally).to_dict()
    helper, deep = written["agents"]
    assert (helper["name"], helper["span_id"], "parent" in helper) == ("helper", "000000000000000b", False)
    assert (deep["name"], deep["parent"], deep["duration_ms"]) == ("deep", "000000000000000b", 20.0)
    assert [s.get("parent") for s in written["steps"]] == [None, "000000000000000c"]
    assert TraceMeta.from_dict(written).agents == [helper, deep] and TraceMeta.from_dict(written).steps_taken == 2
    # only the root agent: nothing added
    alone = Tally()
    alone.add(model(1, 1, 4))
    plain = trace_meta("t", records[:1] + records[3:4], [root], alone).to_dict()
    assert "agents" not in plain and "parent" not in plain["steps"][0]
    # a cycle of parents (bad input): the walk ends
    looped = [agent(11, 12, "a", 0, 5), agent(12, 11, "b", 0, 5), SpanRecord(1, 1, 11, "chat m", BASE, BASE)]
    looped += [SpanRecord(1, 5, 6, "x", BASE, BASE), SpanRecord(1, 6, 5, "y", BASE, BASE)]  # no agent on the loop
    looped += [SpanRecord(1, 3, 5, "chat m", BASE, BASE)]
    cyc = Tally()
    cyc.add(model(1, 0, 1))
    cyc.add(model(3, 0, 1))
    written = trace_meta("t", looped, [], cyc).to_dict()
    assert [a["name"] for a in written["agents"]] == ["a", "b"]
    assert [s.get("parent") for s in written["steps"]] == ["000000000000000b", None]

"""The fold's fast path for history it has already shown (messages shared by identity between steps, parsed once by
``json_prefix``) gives exactly the events of converting every step's history from scratch."""

from __future__ import annotations

import copy
import json
from typing import Any

from spanfold.exporter.dialects import dispatch as dialects
from spanfold.exporter.fold.folding import fold
from spanfold.exporter.records import SpanRecord
from spanfold.exporter.steps import ModelStep

from .conftest import MS, T0, assistant, call, dumps, system, tool_msg, user

Message = dict[str, Any]


class Run:
    """SpanRecords of one trace, with the attributes an instrumentation writes (compact JSON, growing histories)."""

    def __init__(self) -> None:
        self.records: list[SpanRecord] = []
        self.now = T0
        self.next_id = 2

    def span(self, name: str, attrs: dict[str, Any], parent: int | None = 1) -> None:
        self.now += 10 * MS
        self.next_id += 1
        self.records.append(
            SpanRecord(
                trace_id=7,
                span_id=self.next_id,
                parent_id=parent,
                name=name,
                start_ns=self.now,
                end_ns=self.now + 5 * MS,
                attributes=attrs,
            )
        )

    def chat(self, inputs: list[Message], output: Message, parent: int | None = 1) -> None:
        self.span(
            "chat m",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": dumps(inputs),
                "gen_ai.output.messages": dumps([output]),
            },
            parent,
        )

    def tool(self, call_id: str, result: str, parent: int | None = 1) -> None:
        self.span(
            "execute_tool lookup",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup",
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.call.result": result,
            },
            parent,
        )

    def agent(self, span_id: int, name: str) -> None:
        self.records.append(
            SpanRecord(
                trace_id=7,
                span_id=span_id,
                parent_id=None if span_id == 1 else 1,
                name=f"invoke_agent {name}",
                start_ns=T0,
                end_ns=self.now + 100 * MS,
                attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name},
            )
        )


def events(records: list[SpanRecord], *, shared: bool) -> str:
    """The folded trace as JSON; ``shared``: as the processor folds it, else every step's messages copied apart."""
    dialects.HISTORIES.clear()
    steps = {r.span_id: dialects.safe_step(r) for r in records}
    if not shared:
        for step in steps.values():
            if isinstance(step, ModelStep):
                step.inputs = copy.deepcopy(step.inputs)
    trace = fold(records, trace_id="t", steps=steps)
    return json.dumps([(e.to_invariant(timestamps=True), e.metadata, e.name) for e in trace.events])


def agent_loop(run: Run, steps: int, *, parent: int = 1, tag: str = "", truncate_at: int | None = None) -> None:
    history: list[Message] = [system("Be brief."), user(f"Look things up{tag}.")]
    for i in range(steps):
        cid = f"c{tag}{i}"
        sent = history if truncate_at is None or i < truncate_at else [history[0], *history[-3:]]
        reply = assistant(None, call(cid, "lookup", {"q": i}), finish="tool_calls")
        run.chat(sent, reply, parent)
        run.tool(cid, f"result {i}", parent)
        history = [*history, reply, tool_msg(cid, f"result {i}"), user("continue")]


def test_growing_history_folds_as_from_scratch_and_shares_messages() -> None:
    run = Run()
    agent_loop(run, 6)
    run.agent(1, "bot")
    dialects.HISTORIES.clear()
    first, last = (dialects.safe_step(r) for r in (run.records[0], run.records[-3]))
    assert isinstance(first, ModelStep) and isinstance(last, ModelStep)
    assert last.inputs[0] is first.inputs[0]  # the fast path is taken
    assert events(run.records, shared=True) == events(run.records, shared=False)


def test_truncated_history_and_repeated_continue_fold_as_from_scratch() -> None:
    run = Run()
    agent_loop(run, 7, truncate_at=4)
    run.agent(1, "bot")
    assert events(run.records, shared=True) == events(run.records, shared=False)


def test_two_agent_threads_interleaved_fold_as_from_scratch() -> None:
    run = Run()
    agent_loop(run, 3, parent=2, tag="a")
    agent_loop(run, 3, parent=3, tag="b")
    run.records.sort(key=lambda r: (r.start_ns % (40 * MS), r.start_ns))  # interleave the two threads' steps
    run.agent(1, "lead")
    run.agent(2, "a")
    run.agent(3, "b")
    assert events(run.records, shared=True) == events(run.records, shared=False)


def test_summarised_history_folds_as_from_scratch() -> None:
    """A step that replaces the start of its history (same length, other messages) is not taken for the last one."""
    run = Run()
    history: list[Message] = [system("Be brief."), user("Look things up."), user("First, q0.")]
    for i in range(4):
        cid = f"c{i}"
        reply = assistant(None, call(cid, "lookup", {"q": i}), finish="tool_calls")
        run.chat(history, reply)
        run.tool(cid, f"result {i}")
        history = [*history, reply, tool_msg(cid, f"result {i}")]
        if i == 1:
            history = [history[0], user("Summary: q0 and q1 done."), *history[2:]]
    run.agent(1, "bot")
    folded = events(run.records, shared=True)
    assert "Summary: q0 and q1 done." in folded
    assert folded == events(run.records, shared=False)

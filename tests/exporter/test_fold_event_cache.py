"""Input messages that the calls of several traces send (one message object, parsed once by ``json_prefix``) are
converted once and copied per fold (:class:`~spanfold.exporter.fold.events.EventCache`): every fold gives exactly the
events of converting from scratch, a tool output still named by the fold it is in."""

from __future__ import annotations

import copy
import json

from spanfold.exporter.dialects import dispatch as dialects
from spanfold.exporter.fold.events import INPUTS, EventCache, fingerprint, message_events
from spanfold.exporter.fold.folding import fold
from spanfold.exporter.steps import ModelStep

from .conftest import A, S, Spans, T, U, assistant, call, dumps, text, tool_msg, user
from .test_fold_shared_history import Run, agent_loop


def test_a_tool_output_sent_by_several_traces_is_named_by_each_fold(spans: Spans) -> None:
    """The same output message (no tool name of its own) answers a call named differently in each trace, one another
    agent's thread made: the cached message never freezes the name a fold gave it."""
    INPUTS.clear()
    dialects.HISTORIES.clear()
    sent = [user("Find it."), tool_msg("c1", "found")]
    names = ["lookup", "search", "lookup", "fetch"]
    for name in names:  # each trace a run of its own
        with spans.agent("lead"):
            with spans.agent("finder"):
                spans.chat(sent[:1], [assistant(None, call("c1", name, {"q": 1}), finish="tool_calls")])
            with spans.agent("writer"):  # a thread of its own: its first step sends the output
                spans.chat(sent, [assistant("Here it is.", finish="stop")])
    traces = spans.flush()
    assert [t.to_invariant() for t in traces] == [
        [U("Find it."), A(None, ("c1", name, {"q": 1})), U("Find it."), T("c1", "found"), A("Here it is.")]
        for name in names
    ]
    assert [(t.events[3].name, t.events[3].metadata["agent"]) for t in traces] == [(n, "writer") for n in names]
    output = dialects.HISTORIES.loads(dumps(sent))[1]  # the message object every trace's writer sent
    assert output in INPUTS  # converted once, copied for the later folds


def test_a_call_without_an_id_sent_by_several_traces_gets_each_fold_s_made_id(spans: Spans) -> None:
    """A history call without an id (Gemini, Ollama) is given an id made of the step's span id in each fold, and
    every event names its fold's span: the cached message's call and metadata are never the ones a fold filled."""
    INPUTS.clear()
    dialects.HISTORIES.clear()
    developer = text("developer", "Be brief.")  # an event with metadata of its own (its original role)
    sent = [developer, user("Find it."), assistant(None, call(None, "lookup", {"q": 1})), tool_msg(None, "found")]
    for _ in range(3):
        spans.chat(sent, [assistant("Here it is.", finish="stop")], root=True)
    traces = spans.flush()
    assert len(traces) == 3
    for trace in traces:
        span = trace.events[-1].metadata["span_id"]
        made = f"call_{span}_in0"
        assert trace.to_invariant() == [
            S("Be brief."),
            U("Find it."),
            A(None, (made, "lookup", {"q": 1})),
            T(made, "found"),
            A("Here it is."),
        ]
        assert [e.metadata["span_id"] for e in trace.events] == [span] * 5
        assert trace.events[0].metadata["original_role"] == "developer"
    assert len({t.events[0].metadata["span_id"] for t in traces}) == 3
    assert all(m in INPUTS for m in dialects.HISTORIES.loads(dumps(sent)))


def test_traces_that_resend_one_history_fold_as_from_scratch() -> None:
    """Each trace folded alone (a run of its own), its messages shared with the traces before: the same events,
    metadata and tool names as folding copies of them."""
    run = Run()
    agent_loop(run, 4)
    run.agent(1, "bot")

    def folded(*, shared: bool) -> list[str]:
        INPUTS.clear()
        dialects.HISTORIES.clear()
        out = []
        for _ in range(4):  # the same spans again: the same message objects, another fold each time
            steps = {r.span_id: dialects.safe_step(r) for r in run.records}
            for step in steps.values():
                if not shared and isinstance(step, ModelStep):
                    step.inputs = copy.deepcopy(step.inputs)
            trace = fold(run.records, trace_id="t", steps=steps)
            out.append(json.dumps([(e.to_invariant(timestamps=True), e.metadata, e.name) for e in trace.events]))
        return out

    shared = folded(shared=True)
    assert len(set(shared)) == 1
    assert shared == folded(shared=False)


def _msg(i: int) -> dict[str, object]:
    return {"role": "user", "parts": [{"type": "text", "content": f"message {i}"}]}


def test_a_message_is_kept_when_converted_a_second_time_with_its_events_and_fingerprints() -> None:
    cache = EventCache()
    raw = {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
    }
    assert cache.get(raw) is None and raw not in cache  # the first conversion: only its id noted
    entry = cache.get(raw)
    assert entry is not None and raw in cache
    assert entry[1] == tuple(message_events(raw, {}))
    assert entry[2] == tuple(fingerprint(e) for e in message_events(raw, {}))
    assert entry[3] == (("call_1", "get_weather"),)
    assert cache.get(raw) is entry  # not converted again
    twin = dict(raw)
    assert twin not in cache and cache.get(twin) is None  # an equal message that is another object


def test_the_cache_is_bounded_by_entries_and_by_characters() -> None:
    cache = EventCache(max_entries=3, max_chars=1_000)

    def keep(raw: dict[str, object]) -> None:
        cache.get(raw)
        cache.get(raw)

    kept = [_msg(i) for i in range(3)]
    for raw in kept:
        keep(raw)
    assert all(raw in cache for raw in kept)
    keep(_msg(3))  # a fourth entry: emptied first
    assert not any(raw in cache for raw in kept)
    big = {"role": "user", "parts": [{"type": "text", "content": "x" * 2_000}]}
    small = _msg(4)
    keep(small)
    keep(big)  # past the character bound: emptied
    assert small not in cache and big in cache

"""The units the fold and the stitcher share (pairing, history), through the fold; and what the fold leaves behind."""

from __future__ import annotations

import gc
import types

from spanfold.exporter.fold.folding import fold
from spanfold.exporter.records import SpanRecord
from spanfold.stitching.pairing import Pairing

from .conftest import A, Spans, T, U, assistant, call, dumps, tool_msg, user


def test_tool_spans_without_ids_pair_by_arguments_in_every_round(spans: Spans) -> None:
    """The (name, arguments) index of a name is built when a tool span without an id first asks for it; calls made
    after that are indexed as they come: a later round's results still pair by arguments, not by order."""
    round1 = assistant(None, call("c1", "get_weather", {"city": "Paris"}), finish="tool_call")
    round2 = assistant(
        None,
        call("c2", "get_weather", {"city": "Rome"}),
        call("c3", "get_weather", {"city": "Oslo"}),
        finish="tool_call",
    )
    with spans.agent("bot"):
        spans.chat([user("Paris?")], [round1])
        spans.tool("get_weather", {"city": "Paris"}, "sunny")
        spans.chat([user("Paris?"), round1, tool_msg("c1", "sunny"), user("Rome and Oslo?")], [round2])
        spans.tool("get_weather", {"city": "Oslo"}, "snow")  # ends first, answers the second call
        spans.tool("get_weather", {"city": "Rome"}, "rain")
    events = spans.one().to_invariant()
    assert events[2] == T("c1", "sunny")
    assert events[3] == U("Rome and Oslo?")
    assert events[5:] == [T("c2", "rain"), T("c3", "snow")]


def test_pairing_answers_by_id_then_arguments_then_name_each_call_once() -> None:
    pairing: Pairing[str] = Pairing()
    a = pairing.expect("t", "a", "f", {"x": 1})
    b = pairing.expect("t", None, "f", {"x": 2})
    c = pairing.expect("t", "c", "f", {"x": 1})
    assert pairing.answer("c") is c
    assert pairing.answer("c") is None  # once
    assert pairing.answer(None, "f", {"x": 2}) is b
    assert pairing.answer(None, "f", {"x": 3}) is a  # no such arguments: the oldest call of that name
    assert pairing.answer(None, "f", {"x": 1}) is None  # every call answered
    assert pairing.answer("a") is None
    d = pairing.expect("u", "d", "g", None)
    pairing.drop(d)
    assert pairing.answer(None, "g") is None


def test_a_fold_leaves_no_reference_cycles(spans: Spans) -> None:
    """Everything a fold builds is freed by reference counting when it returns (a cycle would keep each trace's
    events alive until the garbage collector runs, and slow the worker)."""
    out = assistant(None, call("c1", "f", {"x": 1}), finish="tool_call")
    records = [
        SpanRecord(1, 1, None, "invoke_agent a", 0, 100, {"gen_ai.operation.name": "invoke_agent"}),
        SpanRecord(
            1,
            2,
            1,
            "chat m",
            1,
            2,
            {"gen_ai.input.messages": dumps([user("q")]), "gen_ai.output.messages": dumps([out])},
        ),
        SpanRecord(1, 3, 1, "execute_tool f", 3, 4, {"gen_ai.tool.name": "f", "gen_ai.tool.call.result": "1"}),
        SpanRecord(
            1,
            4,
            1,
            "chat m",
            5,
            6,
            {
                "gen_ai.input.messages": dumps([user("q"), out, tool_msg("c1", "1")]),
                "gen_ai.output.messages": dumps([assistant("done")]),
            },
        ),
    ]
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds is kept in gc.garbage, to be looked at
    try:
        trace = fold(records, trace_id="t")
        assert trace.to_invariant()[-1] == A("done")
        del trace
        gc.collect()
        # Other threads of the test process (a worker left from an earlier test) may make garbage meanwhile: only
        # the fold's own objects count.
        ours = [o for o in gc.garbage if _made_by_spanfold(o)]
        assert ours == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _made_by_spanfold(obj: object) -> bool:
    if isinstance(obj, types.FunctionType):
        return obj.__module__.startswith("spanfold")
    if isinstance(obj, types.FrameType):
        return obj.f_code.co_filename.replace("\\", "/").count("/spanfold/") > 0
    return type(obj).__module__.startswith("spanfold")

"""Every tool call has an id and one output (DESIGN folding rule 6), through the fold on span records: the ids the
fold makes where a producer gives none, and the merge of what a tool span and the next call's inputs each know."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanfold.exporter.fold.folding import fold
from spanfold.exporter.records import from_readable
from spanfold.trace.compact import compact_messages
from spanfold.trace.formats import agentv_events

from ..bridge.frameworks import folded, invariant, recording
from .conftest import A, Spans, T, U, assistant, call, tool_msg, user

MADE = re.compile(r"call_([0-9a-f]{16})_(in)?([0-9]+)")
PARIS = {"city": "Paris"}
TOKYO = {"city": "Tokyo"}


def calls_of(events: list[dict[str, Any]]) -> list[str]:
    return [c["id"] for e in events for c in e.get("tool_calls") or ()]


def outputs_of(events: list[dict[str, Any]]) -> list[tuple[str | None, Any]]:
    return [(e.get("tool_call_id"), e["content"]) for e in events if e["role"] == "tool"]


# --- ids the fold makes ----------------------------------------------------------------------------------------


def gemini_like_run(spans: Spans, *, tool_spans: bool) -> None:
    """Two rounds of id-less calls (Gemini, Ollama): outputs from tool spans without ids, or only from the inputs."""
    round1 = assistant(None, call(None, "get_weather", PARIS), call(None, "get_weather", TOKYO))
    round2 = assistant(None, call(None, "convert_temperature", {"celsius": 18}))
    history = [user("Weather?"), round1, tool_msg(None, "sunny"), tool_msg(None, "cloudy")]
    with spans.agent("bot"):
        spans.chat([user("Weather?")], [round1])
        if tool_spans:
            spans.tool("get_weather", PARIS, "sunny")
            spans.tool("get_weather", TOKYO, "cloudy")
        spans.chat(history, [round2])
        if tool_spans:
            spans.tool("convert_temperature", {"celsius": 18}, "64.4°F")
        spans.chat([*history, round2, tool_msg(None, "64.4°F")], [assistant("Done.")])


def test_calls_without_ids_get_made_ids_and_their_outputs_pair(spans: Spans) -> None:
    for tool_spans in (True, False):
        gemini_like_run(spans, tool_spans=tool_spans)
    for trace in spans.flush():
        events = trace.to_invariant()
        ids = calls_of(events)
        assert all(MADE.fullmatch(i) for i in ids) and len(set(ids)) == 3
        assert outputs_of(events) == [(ids[0], "sunny"), (ids[1], "cloudy"), (ids[2], "64.4°F")]  # once each
        first, second = (trace.events[1].metadata["span_id"], trace.events[4].metadata["span_id"])
        assert ids == [f"call_{first}_0", f"call_{first}_1", f"call_{second}_0"]  # the model step's span, the index
        names = {e["id"]: e["name"] for e in agentv_events(trace) if e["type"] == "tool_result"}
        assert names == {ids[0]: "get_weather", ids[1]: "get_weather", ids[2]: "convert_temperature"}
        compact = [c for m in compact_messages(trace) for c in m.get("tool_calls") or ()]
        assert [(c["id"], c["output"]) for c in compact] == outputs_of(events)


def test_made_ids_are_the_same_in_every_fold_of_the_same_spans(spans: Spans) -> None:
    exporter = InMemorySpanExporter()
    spans.provider.add_span_processor(SimpleSpanProcessor(exporter))
    gemini_like_run(spans, tool_spans=True)
    (trace,) = spans.flush()
    records = [from_readable(s) for s in exporter.get_finished_spans()]
    folds = [fold(list(records), trace_id="t").to_invariant() for _ in range(2)]
    assert folds[0] == folds[1] == trace.to_invariant()


def test_a_history_the_trace_has_not_shown_gets_ids_and_pairs_in_order(spans: Spans) -> None:
    """A first call that sends an earlier run's id-less calls and outputs (a trace joined mid-conversation)."""
    earlier = assistant(None, call(None, "get_weather", PARIS), call(None, "get_weather", TOKYO))
    inputs = [user("Weather?"), earlier, tool_msg(None, "sunny"), tool_msg(None, "cloudy"), user("And now?")]
    spans.chat(inputs, [assistant("Still sunny.")])
    events = spans.one().to_invariant()
    ids = calls_of(events)
    assert [MADE.fullmatch(i).group(2) for i in ids] == ["in", "in"]  # type: ignore[union-attr]
    assert outputs_of(events) == [(ids[0], "sunny"), (ids[1], "cloudy")]


def test_ollama_outputs_pair_by_the_tool_they_name(spans: Spans) -> None:
    """Ollama's tool messages name their tool (``tool_name``) and carry no id: a result sent out of the model's
    order still answers the call of its name."""
    out = assistant(None, call(None, "get_weather", PARIS), call(None, "convert_temperature", {"celsius": 18}))
    named = [
        {**tool_msg(None, "64.4°F"), "name": "convert_temperature"},
        {**tool_msg(None, "sunny"), "name": "get_weather"},
    ]
    with spans.agent("bot"):  # (calls without ids, un-parented, are one run only by where they were made)
        spans.chat([user("Q")], [out])
        spans.chat([user("Q"), out, *named], [assistant("Done.")])
    events = spans.one().to_invariant()
    weather, convert = calls_of(events)
    assert outputs_of(events) == [(convert, "64.4°F"), (weather, "sunny")]


# --- one output per call: what the tool span and the next call's inputs each know ------------------------------


def test_a_tool_span_without_a_result_takes_the_output_the_next_call_sends(spans: Spans) -> None:
    """AutoGen's tool spans and ADK's (without the capture variable), spanfold's ``@tool`` with capture off: the
    span gives the time, the call id and the error; the next call's ``tool`` message the output."""
    out = assistant(None, call("c1", "get_weather", PARIS), call("c2", "get_weather", TOKYO))
    with spans.agent("bot"):
        spans.chat([user("Q")], [out])
        spans.tool("get_weather", PARIS, call_id="c1", capture=False)
        spans.tool("get_weather", TOKYO, call_id="c2", capture=False)
        spans.chat([user("Q"), out, tool_msg("c1", "sunny"), tool_msg("c2", "cloudy")], [assistant("Done.")])
    trace = spans.one()
    assert trace.to_invariant() == [
        U("Q"),
        A(None, ("c1", "get_weather", PARIS), ("c2", "get_weather", TOKYO)),
        T("c1", "sunny"),
        T("c2", "cloudy"),
        A("Done."),
    ]
    tool_ends = [e.timestamp for e in trace.events if e.role == "tool"]
    assert tool_ends[0] is not None and tool_ends[0] < trace.events[-1].timestamp  # the span's end, not the call's


def test_held_results_without_content_are_merged_in_the_models_order(spans: Spans) -> None:
    """One call of a batch answered by a content-less span, the other by no span: both outputs come from the next
    call's inputs, shown in the model's order."""
    out = assistant(None, call("c1", "get_weather", PARIS), call("c2", "get_weather", TOKYO))
    with spans.agent("bot"):
        spans.chat([user("Q")], [out])
        spans.tool("get_weather", TOKYO, call_id="c2", capture=False)
        spans.chat([user("Q"), out, tool_msg("c1", "sunny"), tool_msg("c2", "cloudy")], [assistant("Done.")])
    assert outputs_of(spans.one().to_invariant()) == [("c1", "sunny"), ("c2", "cloudy")]


def test_the_model_received_output_wins_an_empty_one_never_does(spans: Spans) -> None:
    out = assistant(None, call("c1", "f", {"x": 1}), call("c2", "f", {"x": 2}), call("c3", "f", {"x": 3}))
    with spans.agent("bot"):
        spans.chat([user("Q")], [out])
        spans.tool("f", {"x": 1}, {"raw": 1}, call_id="c1")  # the agent sent the model its own text of it
        spans.tool("f", {"x": 2}, "two", call_id="c2")  # the agent sent nothing for it
        spans.tool("f", {"x": 3}, call_id="c3", error=KeyError("three"))  # failed: its error is its text
        sent = [tool_msg("c1", "one"), tool_msg("c2", ""), tool_msg("c3", "error: no three")]
        spans.chat([user("Q"), out, *sent], [assistant("Go on.")])
        later = [tool_msg("c1", "[summarised]"), tool_msg("c2", "[summarised]"), tool_msg("c3", "[summarised]")]
        spans.chat([user("Q"), out, *later, assistant("Go on."), user("More?")], [assistant("No.")])
    events = spans.one().to_invariant()
    assert outputs_of(events) == [("c1", "one"), ("c2", "two"), ("c3", "'three'")]
    assert events[4]["error"] == {"type": "KeyError", "message": "'three'"}


def test_adk_without_the_capture_variable_beside_spanfolds_gemini_patch() -> None:
    """ADK's own spans carry no content unless ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is set: its tool
    spans (ADK's call ids, no arguments, no result) pair with the model's id-less calls by name and order, and the
    outputs come from the next request spanfold's google-genai patch recorded."""
    content = {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.definitions",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }
    records = [
        dataclasses.replace(r, attributes={k: v for k, v in r.attributes.items() if k not in content})
        if r.scope_name == "gcp.vertex.agent"
        else r
        for r in recording("adk_schema2_with_spanfold_gemini.otlp.json")
    ]
    tools = [r for r in records if r.name.startswith("execute_tool get_weather")]
    assert len(tools) == 2 and not any("gen_ai.tool.call.result" in r.attributes for r in tools)
    trace = folded(records)
    events = invariant(trace)
    ids = calls_of(events)
    assert all(MADE.fullmatch(i) for i in ids)
    assert outputs_of(events) == [
        (ids[0], "Paris: 18°C, sunny"),
        (ids[1], "Tokyo: 24°C, cloudy"),
        (ids[2], "18°C is 64.4°F"),
    ]
    runs = [r for r in records if r.name in ("execute_tool get_weather", "execute_tool convert_temperature")]
    assert [e.metadata["span_id"] for e in trace.events if e.role == "tool"] == [
        format(r.span_id, "016x") for r in sorted(runs, key=lambda r: r.end_ns)
    ]  # each output where its tool span put it

"""The fold, through the real SDK and the processor: spans made as an instrumentation makes them, the flat trace
asserted event by event."""

from __future__ import annotations

from typing import Any

from spanfold import counters

from .conftest import T0, A, S, Spans, T, U, assistant, call, system, text, tool_msg, user

SYS = "You are a weather assistant."
Q = "Weather in Paris and Tokyo?"
CALLS = (call("c1", "get_weather", {"city": "Paris"}), call("c2", "get_weather", {"city": "Tokyo"}))
STEP1_OUT = assistant(None, *CALLS, finish="tool_call")
STEP2_OUT = assistant(None, call("c3", "convert", {"celsius": 18, "to": "F"}), finish="tool_call")
FINAL = assistant("Paris is sunny (64 F), Tokyo is cloudy.", finish="stop")

EXPECTED_LOOP = [
    S(SYS),
    U(Q),
    A(None, ("c1", "get_weather", {"city": "Paris"}), ("c2", "get_weather", {"city": "Tokyo"})),
    T("c1", "Paris: 18 C, sunny"),
    T("c2", "Tokyo: 12 C, cloudy"),
    A(None, ("c3", "convert", {"celsius": 18, "to": "F"})),
    T("c3", "64 F"),
    A("Paris is sunny (64 F), Tokyo is cloudy."),
]


def history(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [system(SYS), user(Q), *extra]


def test_single_call(spans: Spans) -> None:
    with spans.agent("bot"):
        spans.chat([user("Hi!")], [assistant("Hello there.", finish="stop")], usage=(7, 3))
    trace = spans.one()
    assert trace.to_invariant() == [U("Hi!"), A("Hello there.")]
    meta = trace.meta
    assert meta.name == "bot"
    assert meta.models == ["gpt-test"]
    assert (meta.usage.input_tokens, meta.usage.output_tokens) == (7, 3)
    assert meta.status == "complete"
    assert meta.span_count == 2
    assert len(meta.trace_id) == 32 and int(meta.trace_id, 16)
    assert meta.start == "2023-11-14T22:13:20.010Z" and meta.end == "2023-11-14T22:13:20.040Z"
    assert meta.duration_ms == 30.0
    user_event, reply = trace.events
    assert user_event.timestamp == "2023-11-14T22:13:20.020Z"  # the step's start
    assert reply.timestamp == "2023-11-14T22:13:20.030Z"  # the step's end
    assert reply.metadata["model"] == "gpt-test"
    assert reply.metadata["usage"] == {"input_tokens": 7, "output_tokens": 3}
    assert reply.metadata["agent"] == "bot"


def loop(spans: Spans, *, tool_spans: bool, tool_ids: bool = True, reverse_ends: bool = False) -> None:
    """The weather loop: parallel calls, a second round, a final answer; history re-sent on every call."""
    with spans.agent("weather-bot"):
        spans.chat(history(), [STEP1_OUT])
        if tool_spans:
            start = spans.tick()
            ends = [spans.tick(), spans.tick()]
            if reverse_ends:  # the second call finishes first: the trace still keeps the model's order
                ends.reverse()
            for (cid, city, result), end in zip(
                [("c1", "Paris", "Paris: 18 C, sunny"), ("c2", "Tokyo", "Tokyo: 12 C, cloudy")], ends, strict=True
            ):
                spans.tool(
                    "get_weather", {"city": city}, result, call_id=cid if tool_ids else None, start=start, end=end
                )
        results = [tool_msg("c1", "Paris: 18 C, sunny"), tool_msg("c2", "Tokyo: 12 C, cloudy")]
        spans.chat(history(STEP1_OUT, *results), [STEP2_OUT])
        if tool_spans:
            spans.tool("convert", {"celsius": 18, "to": "F"}, "64 F", call_id="c3" if tool_ids else None)
        spans.chat(history(STEP1_OUT, *results, STEP2_OUT, tool_msg("c3", "64 F")), [FINAL])


def test_loop_with_tool_spans_and_inputs_shows_each_result_once(spans: Spans) -> None:
    loop(spans, tool_spans=True, reverse_ends=True)
    trace = spans.one()
    assert trace.to_invariant() == EXPECTED_LOOP
    paris, tokyo = trace.events[3], trace.events[4]
    assert paris.name == tokyo.name == "get_weather"
    # results from tool spans carry the tool span's end time
    assert paris.timestamp is not None and tokyo.timestamp is not None and paris.timestamp > tokyo.timestamp
    assert trace.summary().tool_calls_by_name == {"convert": 1, "get_weather": 2}
    assert trace.meta.usage.input_tokens == 30


def test_loop_without_tool_spans_takes_results_from_inputs(spans: Spans) -> None:
    loop(spans, tool_spans=False)
    trace = spans.one()
    assert trace.to_invariant() == EXPECTED_LOOP
    paris, tokyo, step2 = trace.events[3], trace.events[4], trace.events[5]
    assert paris.name == "get_weather"  # looked up from the call
    assert paris.metadata["span_id"] == tokyo.metadata["span_id"] == step2.metadata["span_id"]  # the next step's inputs
    assert paris.timestamp is not None and step2.timestamp is not None and paris.timestamp < step2.timestamp


def test_tool_span_without_call_id_adopts_the_pending_call(spans: Spans) -> None:
    loop(spans, tool_spans=True, tool_ids=False)
    trace = spans.one()
    assert trace.to_invariant() == EXPECTED_LOOP
    # the results came from the tool spans (ids adopted from the calls), so the next inputs did not repeat them
    assert trace.events[3].metadata["span_id"] != trace.events[5].metadata["span_id"]


def test_tool_span_without_id_matches_by_arguments_not_order(spans: Spans) -> None:
    with spans.agent("bot"):
        spans.chat([user(Q)], [STEP1_OUT])
        spans.tool("get_weather", {"city": "Tokyo"}, "Tokyo: 12 C, cloudy")
        spans.tool("get_weather", {"city": "Paris"}, "Paris: 18 C, sunny")
    events = spans.one().to_invariant()
    assert events[2:] == [T("c1", "Paris: 18 C, sunny"), T("c2", "Tokyo: 12 C, cloudy")]


def test_agent_that_truncates_history(spans: Spans) -> None:
    a1, a2 = assistant("One.", finish="stop"), assistant("Two.", finish="stop")
    with spans.agent("forgetful"):
        spans.chat([system(SYS), user("first")], [a1])
        spans.chat([system(SYS), user("first"), a1, user("second")], [a2])
        # the agent keeps only the system prompt and the last exchange, and adds a summary
        spans.chat([system(SYS), user("Summary: asked twice."), a2, user("third")], [assistant("Three.")])
    assert spans.one().to_invariant() == [
        S(SYS),
        U("first"),
        A("One."),
        U("second"),
        A("Two."),
        U("Summary: asked twice."),
        U("third"),
        A("Three."),
    ]


def test_repeated_continue_message_is_kept(spans: Spans) -> None:
    ok = assistant("ok", finish="stop")
    with spans.agent("bot"):
        spans.chat([user("continue")], [ok])
        spans.chat([user("continue"), ok, user("continue")], [ok])
        spans.chat([user("continue"), ok, user("continue"), ok, user("continue")], [assistant("done")])
    assert spans.one().to_invariant() == [
        U("continue"),
        A("ok"),
        U("continue"),
        A("ok"),
        U("continue"),
        A("done"),
    ]


def test_model_error_event(spans: Spans) -> None:
    with spans.agent("bot"):
        spans.chat([user("Hi")], [assistant("Hello.")])
        spans.chat(
            [user("Hi"), assistant("Hello."), user("More?")],
            error=RuntimeError("Error code: 500 - server had an error"),
            error_type="openai.InternalServerError",
        )
    trace = spans.one()
    error = {"type": "openai.InternalServerError", "message": "Error code: 500 - server had an error"}
    assert trace.to_invariant() == [
        U("Hi"),
        A("Hello."),
        U("More?"),
        {
            "role": "error",
            "content": "openai.InternalServerError: Error code: 500 - server had an error",
            "error": error,
        },
    ]
    assert trace.summary().error_count == 1


def test_error_message_falls_back_to_status_description(spans: Spans) -> None:
    from opentelemetry.trace import Status, StatusCode

    with spans.agent("bot"), spans.span("chat m", {"gen_ai.operation.name": "chat"}) as span:
        span.set_attribute("gen_ai.input.messages", '[{"role":"user","parts":[{"type":"text","content":"x"}]}]')
        span.set_status(Status(StatusCode.ERROR, "timed out"))
    assert spans.one().to_invariant()[-1] == {
        "role": "error",
        "content": "error: timed out",
        "error": {"type": "error", "message": "timed out"},
    }


def test_tool_error(spans: Spans) -> None:
    with spans.agent("bot"):
        spans.chat([user(Q)], [assistant(None, call("c1", "get_weather", {"city": "Atlantis"}))])
        spans.tool("get_weather", {"city": "Atlantis"}, call_id="c1", error=KeyError("Atlantis"))
        spans.chat(
            [user(Q), assistant(None, call("c1", "get_weather", {"city": "Atlantis"})), tool_msg("c1", "error")],
            [assistant("No such city.")],
        )
    error = {"type": "KeyError", "message": "'Atlantis'"}
    assert spans.one().to_invariant() == [
        U(Q),
        A(None, ("c1", "get_weather", {"city": "Atlantis"})),
        T("c1", "'Atlantis'", error=error),
        A("No such city."),
    ]


def test_content_capture_off_keeps_the_structure(spans: Spans) -> None:
    calls_off = (call("c1", "get_weather"), call("c2", "get_weather"))
    out1 = {"role": "assistant", "parts": list(calls_off), "finish_reason": "tool_call"}
    hist = [text("system", None), user(None)]
    results = [tool_msg("c1", capture=False), tool_msg("c2", capture=False)]
    with spans.agent("private"):
        spans.chat(hist, [out1])
        spans.tool("get_weather", call_id="c1", capture=False)
        spans.tool("get_weather", call_id="c2", capture=False)
        spans.chat([*hist, out1, *results], [text("assistant", None)])
    events = spans.one().to_invariant()
    assert events == [
        S(None),
        U(None),
        A(None, ("c1", "get_weather", {}), ("c2", "get_weather", {})),
        T("c1", None),
        T("c2", None),
        A(None),
    ]


def test_content_capture_off_repeated_user_turns_fold_by_position(spans: Spans) -> None:
    with spans.agent("private"):
        spans.chat([user(None)], [text("assistant", None)])
        spans.chat([user(None), text("assistant", None), user(None)], [text("assistant", None)])
    assert spans.one().to_invariant() == [U(None), A(None), U(None), A(None)]


def test_two_agent_threads_in_one_trace(spans: Spans) -> None:
    with spans.agent("planner"):
        spans.chat([user("Plan a trip.")], [assistant("Asking the researcher.")])
        with spans.agent("researcher"):
            spans.chat([system("Research."), user("Find flights.")], [assistant("Flight AF1.")])
            spans.chat(
                [system("Research."), user("Find flights."), assistant("Flight AF1."), user("Cheaper?")],
                [assistant("Flight AF2.")],
            )
        spans.chat(
            [user("Plan a trip."), assistant("Asking the researcher."), user("Result: AF2")], [assistant("Booked.")]
        )
    trace = spans.one()
    assert trace.to_invariant() == [
        U("Plan a trip."),
        A("Asking the researcher."),
        S("Research."),
        U("Find flights."),
        A("Flight AF1."),
        U("Cheaper?"),
        A("Flight AF2."),
        U("Result: AF2"),
        A("Booked."),
    ]
    assert [e.metadata["agent"] for e in trace.events] == ["planner"] * 2 + ["researcher"] * 5 + ["planner"] * 2
    assert trace.meta.name == "planner"


def test_system_instructions_once_per_thread(spans: Spans) -> None:
    sys_parts = [{"type": "text", "content": SYS}]
    with spans.agent("bot"):
        spans.chat([user("a")], [assistant("b")], system=sys_parts)
        spans.chat([user("a"), assistant("b"), user("c")], [assistant("d")], system=sys_parts)
    assert spans.one().to_invariant() == [S(SYS), U("a"), A("b"), U("c"), A("d")]


def test_images_reasoning_and_choices(spans: Spans) -> None:
    msg = {
        "role": "user",
        "parts": [
            {"type": "text", "content": "What is this?"},
            {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBORw0KGgo="},
            {"type": "uri", "modality": "image", "uri": "https://example.com/cat.png"},
        ],
    }
    first = {
        "role": "assistant",
        "parts": [{"type": "reasoning", "content": "Looks feline."}, {"type": "text", "content": "A cat."}],
        "finish_reason": "stop",
    }
    with spans.agent("bot"):
        spans.chat([msg], [first, assistant("A kitten.", finish="stop")])
    trace = spans.one()
    assert trace.to_invariant() == [
        U(
            [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                {"type": "image", "image_url": "https://example.com/cat.png"},
            ]
        ),
        A("A cat."),
    ]
    reply = trace.events[1]
    assert reply.metadata["reasoning"] == "Looks feline."
    assert reply.metadata["choices"] == [A("A kitten.")]


def test_tool_results_in_a_user_message_are_split(spans: Spans) -> None:
    """A producer that leaves tool results inside the user message (not split into tool messages)."""
    mixed = {
        "role": "user",
        "parts": [
            {"type": "tool_call_response", "id": "c1", "response": {"temp": 18}},
            {"type": "text", "content": "F?"},
        ],
    }
    with spans.agent("bot"):
        spans.chat([user(Q), assistant(None, call("c1", "get_weather", '{"city": "Paris"}')), mixed], [assistant("64")])
    assert spans.one().to_invariant() == [
        U(Q),
        A(None, ("c1", "get_weather", {"city": "Paris"})),
        T("c1", '{"temp":18}'),
        U("F?"),
        A("64"),
    ]


def test_bad_attributes_are_counted_and_the_span_still_folds(spans: Spans) -> None:
    with spans.agent("bot"):
        spans.chat(
            [user("Hi")],
            [assistant("Hello")],
            attributes={"gen_ai.system_instructions": "{not json", "gen_ai.usage.input_tokens": "many"},
        )
        with spans.span("chat broken", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": '{"role": 1}'}):
            pass
        with spans.span("chat broken2", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[1, {}]"}):
            pass
    trace = spans.one()
    assert trace.to_invariant()[:2] == [U("Hi"), A("Hello")]
    stats = counters.snapshot()
    assert stats["fault.fold.json"] == 1
    assert stats["fault.fold.type"] >= 2


def test_non_genai_traces_are_not_written(spans: Spans) -> None:
    with spans.span("GET /health", {"http.method": "GET"}):
        pass
    assert spans.flush() == []
    assert counters.snapshot()["traces_skipped"] == 1


def test_long_trace_folds(spans: Spans) -> None:
    """200 steps, each re-sending the whole history: every message appears once, in order."""
    hist: list[dict[str, Any]] = [system(SYS), user("Go.")]
    expected: list[dict[str, Any]] = [S(SYS), U("Go.")]
    with spans.agent("long"):
        for i in range(200):
            cid = f"call_{i}"
            out = assistant(f"step {i}", call(cid, "work", {"i": i}))
            spans.chat(hist, [out], usage=(len(hist), 1))
            hist = [*hist, out, tool_msg(cid, f"done {i}")]
            expected += [A(f"step {i}", (cid, "work", {"i": i})), T(cid, f"done {i}")]
        spans.chat(hist, [assistant("Finished.")])
    trace = spans.one()
    assert trace.to_invariant() == [*expected, A("Finished.")]
    assert trace.meta.span_count == 202


def test_fold_timestamps_are_iso_utc_millis(spans: Spans) -> None:
    with spans.agent("bot"):
        spans.chat([user("Hi")], [assistant("Yo")])
    trace = spans.one()
    assert trace.to_invariant(timestamps=True)[0]["timestamp"] == "2023-11-14T22:13:20.020Z"
    assert T0 > 0

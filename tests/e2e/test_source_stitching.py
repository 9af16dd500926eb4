"""One trace id per zero-code run, decided on the calling thread: what every OTel backend sees.

The weather agent of every installed provider runs without ``spanfold.agent`` and with plain (undecorated or
``@spanfold.tool``) tools; the spans exported to an in-memory exporter beside spanfold's own processor carry one trace
id per run, and the flat traces written are the same as before (one per run, the weather trajectory).
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from typing import Any

import pytest

import spanfold
from spanfold.testing import WEATHER, MockLLMServer, Reply
from spanfold.testing.agents import PROVIDERS

from .test_provider_matrix import INSTALLED, WEATHER_SHAPE, question, shape, user_text

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
EXTERNAL_TRACE = int("0af7651916cd43dd8448eb211c80319c", 16)
EXTERNAL_SPAN = int("b7ad6b7169203331", 16)


def _untraced(fn: Any) -> Any:
    return lambda tool_call_id=None, **arguments: fn(**arguments)


#: The demo's tools as plain functions (no span of their own).
PLAIN_TOOLS = {tool.name: _untraced(tool.function) for tool in WEATHER.tools}


def _run(provider: str, server: MockLLMServer, n: int, tools: dict[str, Any] | None = None) -> None:
    chosen = PROVIDERS[provider]
    chosen.run(chosen.client(server), question(n), tools=tools)


def _by_trace(spans: Any) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = defaultdict(list)
    for span in spans.get_finished_spans():
        out[span.context.trace_id].append(span)
    return out


def _model_spans(spans: list[Any]) -> list[Any]:
    return [s for s in spans if (s.attributes or {}).get("gen_ai.operation.name") in ("chat", "generate_content")]


@pytest.mark.parametrize("provider", INSTALLED)
def test_each_zero_code_run_is_one_trace_id(
    traced: Any, global_spans: Any, server: MockLLMServer, provider: str
) -> None:
    """Two runs, one after the other, ``@spanfold.tool`` tools and no agent span: every model call and tool run of a
    run shares its trace id; the runs have two; the later calls are children of the run's first call."""
    for n in range(2):
        _run(provider, server, n)
    traces = traced.traces()
    groups = _by_trace(global_spans)
    assert len(groups) == 2, {t: [s.name for s in v] for t, v in groups.items()}
    for spans in groups.values():
        models = sorted(_model_spans(spans), key=lambda s: s.start_time)
        tools = [s for s in spans if s.name.startswith("execute_tool")]
        assert len(models) == 3 and len(tools) == 3
        first = models[0]
        assert first.parent is None
        for later in [*models[1:], *tools]:
            assert later.parent is not None and later.parent.span_id == first.context.span_id
            assert later.parent.is_remote
    assert [user_text(events) for events in traces] == [question(0), question(1)]
    for events in traces:
        assert shape(events) == WEATHER_SHAPE
    metas = [m["metadata"] for m in traced.metas()]
    assert [m.get("otel_trace_ids") for m in metas] == [[m["trace_id"]] for m in metas]
    assert {int(m["trace_id"], 16) for m in metas} == set(groups)


@pytest.mark.parametrize("provider", INSTALLED)
def test_plain_tools_and_capture_off_still_one_trace_per_run(
    tmp_path: Any, _global_provider: Any, global_spans: Any, server: MockLLMServer, provider: str
) -> None:
    """Content capture off: the fingerprints are hashes computed in the process; the runs still come out one trace
    id each, and never share one."""
    spanfold.init(output=str(tmp_path / "traces"), capture_content=False)
    try:
        for n in range(2):
            _run(provider, server, n, PLAIN_TOOLS)
        assert spanfold.flush(timeout=30)
    finally:
        spanfold.shutdown()
    groups = _by_trace(global_spans)
    assert sorted(len(_model_spans(spans)) for spans in groups.values()) == [3, 3]
    for spans in groups.values():
        recorded = " ".join(str(v) for s in spans for v in (s.attributes or {}).values())
        assert "Paris" not in recorded and question(0) not in recorded
    lines = (tmp_path / "traces" / "traces.jsonl").read_text().splitlines()
    assert len(lines) == 2


def test_concurrent_identical_runs_never_cross(traced: Any, global_spans: Any, server: MockLLMServer) -> None:
    """Four threads ask the very same question at once: four trace ids, three model calls each."""
    barrier = threading.Barrier(4)

    def one() -> None:
        barrier.wait()
        _run("openai", server, 7)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    groups = _by_trace(global_spans)
    assert sorted(len(_model_spans(spans)) for spans in groups.values()) == [3, 3, 3, 3]
    traces = traced.traces()
    assert len(traces) == 4 and all(shape(events) == WEATHER_SHAPE for events in traces)


def test_two_runs_sharing_only_a_system_prompt_stay_apart(
    traced: Any, global_spans: Any, server: MockLLMServer
) -> None:
    client = PROVIDERS["openai"].client(server)
    for text in ("Hello there", "Something else entirely"):
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "system", "content": WEATHER.system}, {"role": "user", "content": text}],
        )
    assert len(_by_trace(global_spans)) == 2


def test_stitch_off_gives_one_trace_id_per_call(
    tmp_path: Any, _global_provider: Any, global_spans: Any, server: MockLLMServer
) -> None:
    spanfold.init(output=str(tmp_path / "traces"), stitch=False)
    try:
        _run("openai", server, 0)
        assert spanfold.flush(timeout=30)
    finally:
        spanfold.shutdown()
    assert len(_by_trace(global_spans)) == 6  # three calls, three tool runs
    lines = (tmp_path / "traces" / "traces.jsonl").read_text().splitlines()
    assert len(lines) == 6  # the files too: each call and each tool run its own trace


def test_traceparent_environment_parents_the_run(
    tmp_path: Any, _global_provider: Any, global_spans: Any, server: MockLLMServer, monkeypatch: Any
) -> None:
    """``TRACEPARENT`` (W3C trace context) in the environment: the run is a child of the caller's span, in its
    trace; the trace file names the run in that trace (``<trace id>-<run id>``: every run of the process shares the
    caller's trace id) and lists the trace id it is in."""
    monkeypatch.setenv("TRACEPARENT", TRACEPARENT)
    directory = tmp_path / "traces"
    spanfold.init(output=str(directory))
    try:
        _run("openai", server, 0)
        assert spanfold.flush(timeout=30)
    finally:
        spanfold.shutdown()
    groups = _by_trace(global_spans)
    assert list(groups) == [EXTERNAL_TRACE]
    models = sorted(_model_spans(groups[EXTERNAL_TRACE]), key=lambda s: s.start_time)
    assert models[0].parent.span_id == EXTERNAL_SPAN and models[0].parent.is_remote
    import json

    metas = [json.loads(line) for line in (directory / "traces.meta.jsonl").read_text().splitlines()]
    run_id = f"{models[0].context.span_id:016x}"  # the run's first span names it
    assert [m["metadata"]["trace_id"] for m in metas] == [f"{EXTERNAL_TRACE:032x}-{run_id}"]
    assert [m["metadata"]["otel_trace_ids"] for m in metas] == [[f"{EXTERNAL_TRACE:032x}"]]
    events = json.loads((directory / "traces.jsonl").read_text().splitlines()[0])
    assert shape(events) == WEATHER_SHAPE


def test_agent_traceparent_argument(traced: Any, global_spans: Any, server: MockLLMServer) -> None:
    chosen = PROVIDERS["openai"]
    with spanfold.agent("weather", traceparent=TRACEPARENT):
        chosen.run(chosen.client(server), question(0))
    groups = _by_trace(global_spans)
    assert list(groups) == [EXTERNAL_TRACE]
    agent_span = next(s for s in groups[EXTERNAL_TRACE] if s.name == "invoke_agent weather")
    assert agent_span.parent.span_id == EXTERNAL_SPAN
    assert shape(traced.one()) == WEATHER_SHAPE


def _slow_tools(seconds: float, *, traced: bool = True) -> dict[str, Any]:
    """The demo's tools as functions that take ``seconds`` each: ``@spanfold.tool`` ones, or plain ones (no span)."""

    def slow(name: str, fn: Any) -> Any:
        def run(**arguments: Any) -> Any:
            time.sleep(seconds)
            return fn(**arguments)

        if traced:
            return spanfold.tool(name=name)(run)
        return lambda tool_call_id=None, **arguments: run(**arguments)

    return {tool.name: slow(tool.name, tool.function) for tool in WEATHER.tools}


def _one_run_one_trace(tmp_path: Any, global_spans: Any, server: MockLLMServer, tools: dict[str, Any]) -> None:
    _run("openai", server, 0, tools)
    assert spanfold.flush(timeout=30)
    groups = _by_trace(global_spans)
    assert len(groups) == 1, {t: [s.name for s in v] for t, v in groups.items()}
    lines = (tmp_path / "traces" / "traces.jsonl").read_text().splitlines()
    assert len(lines) == 1 and shape(json.loads(lines[0])) == WEATHER_SHAPE


def test_a_tool_run_longer_than_stitch_idle_does_not_split_the_run(
    tmp_path: Any, _global_provider: Any, global_spans: Any, server: MockLLMServer
) -> None:
    """``@spanfold.tool`` tools of 0.8 s each and ``stitch_idle=0.5`` (init's option reaches the calling thread's
    conversations too): a conversation is not idle while one of its tool runs has not ended, on the calling thread
    nor in the fold. One trace id, one trace written, the whole trajectory."""
    spanfold.init(output=str(tmp_path / "traces"), stitch_idle=0.5)
    try:
        from spanfold.stitching import conversations

        assert conversations.active() is not None and conversations.active().idle == 0.5  # type: ignore[union-attr]
        _one_run_one_trace(tmp_path, global_spans, server, _slow_tools(0.8))
    finally:
        spanfold.shutdown()


def test_a_run_waiting_on_plain_tools_stays_open_longer(
    tmp_path: Any, _global_provider: Any, global_spans: Any, server: MockLLMServer
) -> None:
    """Plain tool functions (no span) of 0.8 s each and ``stitch_idle=0.2``: a conversation whose latest call asked
    for tools waits on them ten times the window, at the source and in the fold; one whose latest call gave a final
    answer closes after the window (a user's follow-up 1 s later is another run)."""
    spanfold.init(output=str(tmp_path / "traces"), stitch_idle=0.2)
    try:
        _one_run_one_trace(tmp_path, global_spans, server, _slow_tools(0.8, traced=False))
        global_spans.clear()
        server.script(Reply.text("Hello!"), Reply.text("Hello again!"))
        client = PROVIDERS["openai"].client(server)
        messages: list[Any] = [
            {"role": "system", "content": WEATHER.system},
            {"role": "user", "content": "Hello there"},
        ]
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        time.sleep(1.0)  # the user reads the answer: nothing runs
        messages += [reply.choices[0].message, {"role": "user", "content": "And again?"}]
        client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        assert len(_by_trace(global_spans)) == 2
    finally:
        spanfold.shutdown()


def test_the_source_marks_the_calls_whose_run_it_decided(traced: Any, global_spans: Any, server: MockLLMServer) -> None:
    """Un-parented calls and tool runs carry ``spanfold.stitched`` (the fold follows their trace id and decides nothing
    more); a call inside an agent span was placed by the application and carries nothing."""
    _run("openai", server, 0)
    unparented = list(global_spans.get_finished_spans())
    assert unparented and all((s.attributes or {}).get("spanfold.stitched") is True for s in unparented)
    global_spans.clear()
    with spanfold.agent("weather-bot"):
        _run("openai", server, 1)
    inside = [s for s in global_spans.get_finished_spans() if not s.name.startswith("invoke_agent")]
    assert inside and all("spanfold.stitched" not in (s.attributes or {}) for s in inside)

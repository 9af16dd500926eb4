"""A stopped process keeps its run: SIGTERM (``docker stop``, a Kubernetes rollout, systemd), SIGHUP, SIGINT, an
application's own SIGTERM handler, and ``spanfold run``'s child, each sent mid-run to a real agent
(:mod:`signal_child`: three model calls, three tool runs, stopped in the third tool). The run is written, whole as far
as it went, ``incomplete`` and saying what stopped it, in the trace files and in the spans exported; and the process
ends as the signal asks, with the exit status it has without spanfold."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

CHILD = Path(__file__).with_name("signal_child.py")
ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPANFOLD_", "OTEL_", "TRACEPARENT"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return {**env, **extra}


def _stopped(
    out: Path,
    sig: signal.Signals,
    *args: str,
    command: list[str] | None = None,
    took: list[float] | None = None,
    **env: str,
) -> int:
    """Run the child until it is mid-run, send ``sig``, and return its exit status (negative: killed by a signal);
    ``took``: gets the seconds from the signal to the exit."""
    out.mkdir(parents=True, exist_ok=True)
    argv = command or [sys.executable, str(CHILD)]
    child = subprocess.Popen(
        [*argv, str(out), *args], env=_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip() == "ready", (line, child.stderr.read() if child.stderr else "")
        sent = time.monotonic()
        child.send_signal(sig)
        child.wait(timeout=30)
        if took is not None:
            took.append(time.monotonic() - sent)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return child.returncode


def _written(out: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    (events,) = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    (meta,) = [json.loads(line)["metadata"] for line in (out / "traces.meta.jsonl").read_text().splitlines()]
    return events, meta


def _assert_the_run_so_far(events: list[dict[str, Any]], meta: dict[str, Any], ended_by: str) -> None:
    """Two model calls answered and their tools run (two weather reports), the third tool stopped: the run as far
    as it went, incomplete, and what stopped it (the stopped tool run's event says so)."""
    roles = [e["role"] for e in events]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "tool"], events
    assert [c["function"]["name"] for c in events[2]["tool_calls"]] == ["get_weather", "get_weather"]
    assert [c["function"]["arguments"] for c in events[2]["tool_calls"]] == [{"city": "Paris"}, {"city": "Tokyo"}]
    assert [(e["tool_call_id"], e["content"]) for e in events[3:5]] == [
        (events[2]["tool_calls"][0]["id"], "Paris: 18°C, sunny"),  # the two tools that ran, with their results
        (events[2]["tool_calls"][1]["id"], "Tokyo: 24°C, cloudy"),
    ]
    (call,) = events[5]["tool_calls"]
    assert call["function"]["name"] == "convert_temperature"
    assert events[6] == {
        "role": "tool",
        "content": f"process stopped ({ended_by})",
        "tool_call_id": call["id"],
        "error": {"type": ended_by, "message": f"process stopped ({ended_by})"},
    }
    assert meta["status"] == "incomplete" and meta["ended_by"] == ended_by, meta
    assert meta["error"]["type"] == ended_by
    assert meta["name"] == "weather"
    kinds = [s["kind"] for s in meta["steps"]]
    assert kinds == ["model", "tool", "tool", "model", "tool"], kinds  # the stopped tool run is a step too
    assert [s.get("error", {}).get("type") for s in meta["steps"]] == [None, None, None, None, ended_by]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stopping_signal_writes_the_run_and_ends_as_the_signal_asks(tmp_path: Path, sig: signal.Signals) -> None:
    plain = _stopped(tmp_path / "plain", sig, SPANFOLD_DISABLED="1")
    assert plain == -sig  # without spanfold: killed by the signal
    assert _stopped(tmp_path / "traced", sig) == plain
    _assert_the_run_so_far(*_written(tmp_path / "traced"), ended_by=sig.name)


def test_the_spans_exported_hold_the_stopped_run(tmp_path: Path) -> None:
    """With the otlp-json format (each run's spans, as the Collector's file exporter writes them): the agent span
    and the tool span that were running are there, ended, saying SIGTERM."""
    assert _stopped(tmp_path, signal.SIGTERM, SPANFOLD_FORMAT="otlp-json") == -signal.SIGTERM
    (path,) = list(tmp_path.glob("*.jsonl"))
    spans = [
        span
        for line in path.read_text().splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]
    ended = {s["name"] for s in spans for a in s.get("attributes", ()) if a["key"] == "spanfold.ended_by"}
    assert ended == {"invoke_agent weather", "execute_tool convert_temperature"}, ended
    assert len([s for s in spans if s["name"].startswith("chat")]) == 2


def test_the_applications_handler_still_decides(tmp_path: Path) -> None:
    """An application that handles SIGTERM itself (here: exits with status 3): its handler runs, its exit status is
    kept, and the run it unwound out of is written (the agent span ends as the exception leaves it)."""
    plain = _stopped(tmp_path / "plain", signal.SIGTERM, "app-handler", SPANFOLD_DISABLED="1")
    assert plain == 3
    assert _stopped(tmp_path / "traced", signal.SIGTERM, "app-handler") == 3
    assert (tmp_path / "traced" / "app-handler-ran").read_text() == str(int(signal.SIGTERM))
    events, meta = _written(tmp_path / "traced")
    assert [e["role"] for e in events] == ["system", "user", "assistant", "tool", "tool", "assistant", "tool"]
    assert meta["status"] == "error"  # SystemExit left the agent span and the tool run: recorded as their error
    assert meta["error"]["type"] == "SystemExit"


def test_ctrl_c_unwinds_and_the_run_is_written(tmp_path: Path) -> None:
    plain = _stopped(tmp_path / "plain", signal.SIGINT, SPANFOLD_DISABLED="1")
    assert _stopped(tmp_path / "traced", signal.SIGINT) == plain == -signal.SIGINT  # CPython ends by SIGINT again
    events, meta = _written(tmp_path / "traced")
    assert [e["role"] for e in events][:6] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert meta["status"] == "error" and meta["error"]["type"] == "KeyboardInterrupt"


@pytest.mark.skipif(shutil.which("spanfold") is None, reason="the spanfold command is not installed")
def test_spanfold_run_child_keeps_its_run(tmp_path: Path) -> None:
    """``spanfold run -- python app.py``: the command replaces ``spanfold run`` (same pid), so SIGTERM reaches it and
    its run is written as above; the exit status is the signal's."""
    spanfold = shutil.which("spanfold")
    assert spanfold is not None
    out = tmp_path / "traces"
    command = [spanfold, "run", "-o", str(out), "--", sys.executable, str(CHILD)]
    assert _stopped(out, signal.SIGTERM, command=command) == -signal.SIGTERM
    _assert_the_run_so_far(*_written(out), ended_by="SIGTERM")


def test_sigint_set_to_its_default_action_writes_the_run(tmp_path: Path) -> None:
    """An application that set SIGINT to the default action (no KeyboardInterrupt, no atexit): as SIGTERM."""
    plain = _stopped(tmp_path / "plain", signal.SIGINT, "sigint-default", SPANFOLD_DISABLED="1")
    assert plain == -signal.SIGINT
    assert _stopped(tmp_path / "traced", signal.SIGINT, "sigint-default") == plain
    _assert_the_run_so_far(*_written(tmp_path / "traced"), ended_by="SIGINT")


def test_spans_ctrl_c_leaves_open_are_written_at_exit(tmp_path: Path) -> None:
    """Ctrl-C unwinds the main thread; the agent runs in a daemon thread, its spans still open at exit: they are
    ended there, and the run is written incomplete, ``ended_by: exit``. KeyboardInterrupt's exit status is kept."""
    plain = _stopped(tmp_path / "plain", signal.SIGINT, "daemon", SPANFOLD_DISABLED="1")
    assert _stopped(tmp_path / "traced", signal.SIGINT, "daemon") == plain == -signal.SIGINT
    _assert_the_run_so_far(*_written(tmp_path / "traced"), ended_by="exit")


def test_every_format_configured_holds_the_stopped_run(tmp_path: Path) -> None:
    """AgentV's format, and one JSON file per trace beside it: each holds the run as far as it went, incomplete."""
    env = {"SPANFOLD_FORMAT": "agentv", "SPANFOLD_FILE_PER_TRACE": "1"}
    assert _stopped(tmp_path, signal.SIGTERM, **env) == -signal.SIGTERM
    (line,) = (tmp_path / "traces.agentv.jsonl").read_text().splitlines()
    (per_trace,) = tmp_path.glob("*.json")
    for document in (json.loads(line), json.loads(per_trace.read_text())):
        shown = [(e["type"], e.get("name"), e.get("input") or e.get("output")) for e in document["trace"]]
        assert shown[2:] == [
            ("tool_call", "get_weather", {"city": "Paris"}),
            ("tool_call", "get_weather", {"city": "Tokyo"}),
            ("tool_result", "get_weather", "Paris: 18°C, sunny"),
            ("tool_result", "get_weather", "Tokyo: 24°C, cloudy"),
            ("tool_call", "convert_temperature", {"celsius": 18, "to": "fahrenheit"}),
            ("tool_result", "convert_temperature", "process stopped (SIGTERM)"),
        ], shown
        assert document["trace_summary"]["llmCallCount"] == 2
        meta = document["metadata"]
        assert meta["status"] == "incomplete" and meta["ended_by"] == "SIGTERM"
        assert per_trace.stem == meta["trace_id"]


def test_the_otlp_export_holds_the_stopped_run(tmp_path: Path) -> None:
    """The raw spans exported over OTLP/HTTP (here to spanfold's own receiver, in this process) are sent before the
    process ends: the agent span and the running tool among them, ended, so the receiver folds the same run."""
    pytest.importorskip("aiohttp")
    from spanfold.exporter.files.writers import MemoryWriter
    from spanfold.exporter.pipeline.receiver import ReceiverThread, ServeOptions

    writer = MemoryWriter()
    receiver = ReceiverThread(ServeOptions(port=0, wait=600, final_wait=0), writers=[writer])
    url = receiver.__enter__().url
    try:
        assert _stopped(tmp_path, signal.SIGTERM, SPANFOLD_OTLP=url) == -signal.SIGTERM
    finally:
        assert receiver.stop()
    (trace,) = writer.traces
    events = [json.loads(json.dumps(e)) for e in trace.to_invariant()]
    (line,) = (tmp_path / "traces.jsonl").read_text().splitlines()
    assert events == json.loads(line)  # what an OTel backend got folds into what the files hold
    assert trace.meta.name == "weather"  # the agent span came
    assert trace.meta.status == "incomplete" and trace.meta.extra["ended_by"] == "SIGTERM"


def test_an_otlp_endpoint_that_never_answers_does_not_hold_the_process(tmp_path: Path) -> None:
    """Writing on a signal is bounded (``SIGTERM_FLUSH_S``), the OTLP export too: an endpoint that takes the
    connection and never answers (the exporter would wait 10 s) does not keep a stopped process alive; the files are
    written first."""
    from spanfold.setup import SIGTERM_FLUSH_S

    with socket.socket() as silent:  # listens, never accepts: connections complete, requests are never answered
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        took: list[float] = []
        assert _stopped(tmp_path, signal.SIGTERM, took=took, SPANFOLD_OTLP=endpoint) == -signal.SIGTERM
    assert took[0] < SIGTERM_FLUSH_S + 2.0, took
    _assert_the_run_so_far(*_written(tmp_path), ended_by="SIGTERM")


# --- spanfold serve: what it holds when it is stopped ---------------------------------------------------------

_USER = {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}
_ASKS = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
    "finish_reason": "tool_call",
}


def _held_spans() -> list[Any]:
    """Spans an agent sent before it went quiet: a zero-code call (no parent) that asked for a tool, its run waiting
    on the answer (an open stitched conversation); and an agent's call and tool run whose agent span never came (a
    trace whose root has not arrived)."""
    from opentelemetry import context, trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "held"}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    tracer = provider.get_tracer("held")

    def chat(parent: Any, user: dict[str, Any]) -> None:
        with tracer.start_as_current_span("chat gpt-4o-mini", context=parent, kind=SpanKind.CLIENT) as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.input.messages": json.dumps([user]),
                    "gen_ai.output.messages": json.dumps([_ASKS]),
                }
            )

    chat(context.Context(), _USER)  # zero-code: its own trace, stitched into a conversation that waits on a tool
    agent = tracer.start_span("invoke_agent weather", context=context.Context())
    inside = trace.set_span_in_context(agent)
    chat(inside, {"role": "user", "parts": [{"type": "text", "content": "And in Tokyo?"}]})
    with tracer.start_as_current_span("execute_tool get_weather", context=inside) as tool:
        tool.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"})
    return list(spans.get_finished_spans())  # the agent span is still running: never sent


def _serve_stopped(out: Path, sig: signal.Signals) -> int:
    """``spanfold serve`` given :func:`_held_spans` over OTLP/HTTP (nothing written yet: ``--wait`` and the idle
    window are long), then ``sig``: its exit status."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    command = [sys.executable, "-m", "spanfold", "serve", "--port", "0", "-o", str(out), "--wait", "600"]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=_env(SPANFOLD_STITCH_IDLE="600"))
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        assert "listening on http://" in line, line
        url = line.split("listening on ", 1)[1].split(",", 1)[0]
        assert OTLPSpanExporter(endpoint=url, timeout=10).export(_held_spans()) is SpanExportResult.SUCCESS
        time.sleep(0.5)
        assert not (out / "traces.jsonl").exists()  # held
        server.send_signal(sig)
        server.wait(timeout=30)
        assert "Traceback" not in server.stderr.read()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    return server.returncode


def _serve_written(out: Path) -> dict[str, tuple[list[dict[str, Any]], dict[str, Any]]]:
    """What serve wrote, by the run's first user message."""
    events = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    metas = [json.loads(line)["metadata"] for line in (out / "traces.meta.jsonl").read_text().splitlines()]
    return {e[0]["content"]: (e, m) for e, m in zip(events, metas, strict=True)}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_serve_writes_what_it_holds_when_stopped(tmp_path: Path, sig: signal.Signals) -> None:
    pytest.importorskip("aiohttp")
    assert _serve_stopped(tmp_path, sig) == 0
    written = _serve_written(tmp_path)
    assert set(written) == {"Weather in Paris?", "And in Tokyo?"}
    rootless, meta = written["And in Tokyo?"]
    assert [e["role"] for e in rootless] == ["user", "assistant", "tool"]
    assert meta["status"] == "incomplete"  # its root (the agent span) never came
    conversation, meta = written["Weather in Paris?"]
    assert [e["role"] for e in conversation] == ["user", "assistant"]  # the open conversation, as far as it went
    assert conversation[1]["tool_calls"][0]["function"]["name"] == "get_weather"


def test_serve_writes_an_open_conversation_waiting_on_tools_incomplete(tmp_path: Path) -> None:
    pytest.importorskip("aiohttp")
    assert _serve_stopped(tmp_path, signal.SIGTERM) == 0
    _, meta = _serve_written(tmp_path)["Weather in Paris?"]
    assert meta["status"] == "incomplete"

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
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CHILD = Path(__file__).with_name("signal_child.py")
ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPANFOLD_", "OTEL_", "TRACEPARENT"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return {**env, **extra}


def _stopped(out: Path, sig: signal.Signals, *args: str, command: list[str] | None = None, **env: str) -> int:
    """Run the child until it is mid-run, send ``sig``, and return its exit status (negative: killed by a signal)."""
    out.mkdir(parents=True, exist_ok=True)
    argv = command or [sys.executable, str(CHILD)]
    child = subprocess.Popen(
        [*argv, str(out), *args], env=_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip() == "ready", (line, child.stderr.read() if child.stderr else "")
        child.send_signal(sig)
        child.wait(timeout=30)
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

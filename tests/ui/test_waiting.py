"""``spanfold ui`` before any trace exists (issue 52): it starts and waits (it refused to start), the page says there
are no traces yet and how traces are made, and lists the runs as soon as they are written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")

from tests.ui.traces import trace, write

from spanfold.config import HOW_TRACES_ARE_MADE


def _wait_runs(server: Any, runs: int, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state: dict[str, Any] = server.json("/api/state")
        if state["runs"] >= runs:
            return state
        time.sleep(0.1)
    raise AssertionError(f"the page never listed {runs} runs: {server.json('/api/state')}")


def test_the_server_waits_for_a_directory_that_is_not_there_yet(tmp_path: Path, ui_server: Any) -> None:
    traces = tmp_path / "traces"
    server = ui_server([traces])
    assert server.proc.poll() is None  # started: it did not refuse
    state = server.json("/api/state")
    assert state["runs"] == 0 and state["problems"] == 0
    assert state["waiting"] == {"paths": [str(traces)], "missing": [str(traces)], "hint": HOW_TRACES_ARE_MADE}
    runs = server.json("/api/runs")
    assert runs["runs"] == [] and runs["waiting"] == state["waiting"]
    assert "spanfold.init()" in runs["waiting"]["hint"] and "spanfold demo" in runs["waiting"]["hint"]

    traces.mkdir()  # there, but still nothing in it
    time.sleep(1.5)
    assert server.json("/api/state")["waiting"] == {"paths": [str(traces)], "missing": [], "hint": HOW_TRACES_ARE_MADE}

    write(traces, [trace(1), trace(2)])  # a program writes its first runs
    state = _wait_runs(server, 2)
    assert state["waiting"] is None
    listed = server.json("/api/runs")
    assert listed["waiting"] is None
    assert sorted(r["name"] for r in listed["runs"]) == ["agent-1", "agent-2"]


def test_spanfold_ui_with_no_traces_directory_starts_and_says_it_waits(tmp_path: Path) -> None:
    """The command as a newcomer types it, in a directory with no ./traces: the URL, then what it waits for."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "spanfold", "ui", "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("SPANFOLD_")},
    )
    try:
        assert proc.stderr is not None
        first, second = proc.stderr.readline(), proc.stderr.readline()
        assert first.startswith("spanfold ui: http://127.0.0.1:"), first + second
        assert second.strip() == f"spanfold ui: traces: no traces yet; waiting for them. {HOW_TRACES_ARE_MADE}"
        assert proc.poll() is None  # still serving
        assert not (tmp_path / "traces").exists()  # waits: creates nothing
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()
    assert proc.returncode in (0, -15)


def test_the_page_says_no_traces_yet_then_lists_them(tmp_path: Path, ui_server: Any, page: Any) -> None:
    expect = pytest.importorskip("playwright.sync_api").expect
    traces = tmp_path / "traces"
    server = ui_server([traces])
    page.goto(server.url)
    note = page.locator("#waiting")
    expect(note).to_contain_text("No traces yet")
    expect(note).to_contain_text(f"{traces} (not there yet)")
    expect(note).to_contain_text("spanfold.init()")
    write(traces, [trace(1)])
    expect(page.locator("#runs tr.run")).to_have_count(1, timeout=20_000)  # no reload: the poll picks it up
    assert page.locator("#waiting").count() == 0

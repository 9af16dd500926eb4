"""``spanfold ui`` keeps listing every run it can read whatever else the trace directory holds (issue 28, items 2-4):
a lone surrogate in a trace, a bad line appended to a watched file, a fault while reading one file, an entry it
cannot read (a directory named like a trace file, another user's 0600 file). Real files, the real command over
real HTTP on loopback."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.ui.traces import trace, write

from spanfold.ui import index as index_module
from spanfold.ui.index import Index

#: Half an emoji, as spanfold writes a provider stream cut inside one (its JSON escape: UTF-8 cannot hold it).
CUT_EMOJI = "\ud83d"


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


def test_a_lone_surrogate_lists_and_opens(tmp_path: Path, ui_server: Any) -> None:
    events, meta = trace(1, text=f"weather in Paris {CUT_EMOJI}")
    events[-1]["content"] = f"sunny {CUT_EMOJI}"
    meta["metadata"]["name"] = f"bot {CUT_EMOJI}"
    write(tmp_path, [(events, meta), trace(2)])
    assert "\\ud83d" in (tmp_path / "traces.jsonl").read_text()
    server = ui_server([tmp_path])
    server.wait_total(2)
    runs = server.json("/api/runs")["runs"]  # the whole list, not "cannot load runs"
    first = next(r for r in runs if r["line"] == 1)
    assert first["preview"] == f"weather in Paris {CUT_EMOJI}" and first["name"] == f"bot {CUT_EMOJI}"
    run = server.json(f"/api/run/{first['id']}")
    assert run["events"][-1]["content"] == f"sunny {CUT_EMOJI}"
    assert server.json("/api/runs?q=paris")["total"] == 1
    assert server.json(f"/api/compare?a={first['id']}&b={first['id']}")["divergence"] is None


def test_a_bad_line_appended_to_a_watched_file_is_counted_and_runs_after_it_are_listed(
    tmp_path: Path, ui_server: Any
) -> None:
    path = write(tmp_path, [trace(1)])
    server = ui_server([tmp_path])
    server.wait_total(1)
    for bad in ('{"messages": null}', '{"output": null, "text": "x"}', "[1, 2]", "{oops"):
        _append(path, bad + "\n")
        _append(tmp_path / "traces.meta.jsonl", json.dumps({"metadata": {}}) + "\n")
    write(tmp_path, [trace(2)])
    write(tmp_path / "more", [trace(3)], name="other")  # not watched: a subdirectory
    write(tmp_path, [trace(4)], name="later")  # a file of its own, after the bad lines
    server.wait_total(3)
    assert server.json("/api/state")["problems"] == 4
    names = sorted(r["name"] for r in server.json("/api/runs")["runs"])
    assert names == ["agent-1", "agent-2", "agent-4"]  # each with its own metadata record, in step


def test_a_fault_decoding_one_line_is_that_lines_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever goes wrong decoding one line (here: the decoder raising what it never should) is that line's
    problem: the lines after it, and the other files, are read."""
    real = index_module.decode

    def broken(value: Any) -> Any:
        if isinstance(value, dict) and "trace" in value:
            raise RuntimeError("a bug in a decoder")
        return real(value)

    monkeypatch.setattr(index_module, "decode", broken)
    path = write(tmp_path, [trace(1)], name="a")
    _append(path, json.dumps({"trace": trace(5)[0], "metadata": trace(5)[1]["metadata"]}) + "\n")
    _append(tmp_path / "a.meta.jsonl", json.dumps({"metadata": {}}) + "\n")
    write(tmp_path, [trace(2)], name="a")
    write(tmp_path, [trace(3)], name="b")
    index = Index([tmp_path])
    index.refresh()
    assert sorted(r.meta.name for r in index.snapshot()[1]) == ["agent-1", "agent-2", "agent-3"]
    assert index.problems() == 1


def test_the_refresh_task_outlives_any_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's background refresh survives a fault of any kind in a whole refresh, and goes on."""
    import asyncio

    from spanfold.ui.server import Ui, UiOptions

    write(tmp_path, [trace(1)])
    index = Index([tmp_path])
    calls: list[int] = []
    real = index.refresh

    def flaky() -> bool:
        calls.append(1)
        if len(calls) == 1:
            raise TypeError("a bug")
        return real()

    monkeypatch.setattr(index, "refresh", flaky)

    died: list[bool] = []

    async def watch() -> None:
        ui = Ui(index, UiOptions(refresh=0.01))
        task = asyncio.get_running_loop().create_task(ui._watch())
        for _ in range(500):
            await asyncio.sleep(0.01)
            if len(calls) >= 3:
                break
        died.append(task.done())
        task.cancel()

    runner = threading.Thread(target=asyncio.run, args=(watch(),))  # a loop of its own (Playwright may run one here)
    runner.start()
    runner.join(30)
    assert died == [False]
    assert len(calls) >= 3 and len(index.snapshot()[1]) == 1


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory another user can read (pytest's own temporary directories are 0700)."""
    path = Path(tempfile.mkdtemp(prefix="spanfold-ui-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_unreadable_entries_are_skipped_and_counted(shared_dir: Path, ui_server: Any) -> None:
    (shared_dir / "a.jsonl").mkdir()  # a directory named like a trace file, first in the listing
    secret = write(shared_dir, [trace(2)], name="b-private")
    for path in (secret, shared_dir / "b-private.meta.jsonl"):
        path.chmod(0o600)
    write(shared_dir, [trace(3)], name="c")
    for path in shared_dir.glob("c.*"):
        path.chmod(0o644)
    if os.geteuid() == 0:  # root reads any file: the page runs as another user, as when it is another user's file
        server = ui_server([shared_dir], user=65534)
    else:
        secret.chmod(0)
        server = ui_server([shared_dir])
    server.wait_total(1)
    state = server.json("/api/state")
    assert state["total"] == 1 and state["problems"] == 2, state
    assert [r["name"] for r in server.json("/api/runs")["runs"]] == ["agent-3"]
    write(shared_dir, [trace(4)], name="c")  # still watched
    server.wait_total(2)


def test_a_directory_that_becomes_unreadable_is_counted(shared_dir: Path, ui_server: Any) -> None:
    first, second = shared_dir / "first", shared_dir / "second"
    write(first, [trace(1)])
    write(second, [trace(2)])
    for path in [first, second, *first.iterdir(), *second.iterdir()]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    server = ui_server([first, second], **({"user": 65534} if os.geteuid() == 0 else {}))
    server.wait_total(2)
    first.chmod(0o700 if os.geteuid() == 0 else 0)  # its owner takes it back
    try:
        for path in second.iterdir():
            path.chmod(0o666)
        write(second, [trace(3)])
        deadline = time.monotonic() + 30
        while "agent-3" not in (names := [r["name"] for r in server.json("/api/runs")["runs"]]):
            assert time.monotonic() < deadline, names  # the directory after it is still read
            time.sleep(0.1)
        assert server.json("/api/state")["problems"] == 1
    finally:
        first.chmod(0o755)

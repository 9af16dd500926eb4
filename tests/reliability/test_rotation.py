"""Rotated trace files (``rotate_bytes``, ``rotate_when``, ``keep_files``, ``keep_days``): several processes append
to one directory while new files are started and old ones deleted; every line stays whole, every trace's events line
and metadata line are in one numbered pair of files, no trace is lost or written twice, and the readers (``spanfold
ui``'s index, which ``spanfold serve --ui`` shares, and the commands given the directory) follow the numbered files
as they come and go."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from spanfold import config, counters
from spanfold.commands.inputs import trace_files
from spanfold.exporter.files.rotation import Rotation
from spanfold.exporter.files.writers import JsonlWriter, writers_for
from spanfold.trace.model import Message, Trace, TraceMeta
from spanfold.ui.index import Index

CHILD = Path(__file__).with_name("crash_child.py")
NAME = re.compile(r"traces\.(\d{4}-\d{2}-\d{2})\.(\d{6})\.jsonl")
WRITERS = 6
TRACES_EACH = 40
#: Payloads up to 600 kB (far above PIPE_BUF: one process's append takes long enough for another's to come between
#: its events line and its metadata line, were they not under one lock), files of 4 MiB.
PAYLOAD = -600_000
LIMIT = 4 * 1024 * 1024
DAY = 86400.0


def spawn(out: Path, n: int, size: int, **env: str) -> subprocess.Popen[str]:
    """``crash_child.py count``: ``n`` traces through ``spanfold.init()`` (its options from ``env``), then exit."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SPANFOLD_")}
    return subprocess.Popen(
        [sys.executable, str(CHILD), "count", str(out), str(n), str(size)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**clean, "PYTHONPATH": os.pathsep.join(sys.path), **env},
    )


def finish(children: list[subprocess.Popen[str]], index: Index | None = None) -> None:
    """Wait for every child (refreshing ``index`` meanwhile, as ``spanfold ui`` does while the files rotate)."""
    deadline = time.monotonic() + 240
    while any(c.poll() is None for c in children) and time.monotonic() < deadline:
        if index is not None:
            index.refresh()
        time.sleep(0.05)
    for child in children:
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0 and out.strip() == "done", err


def numbered(out: Path) -> list[Path]:
    """The numbered trace files, oldest first; nothing else but their metadata files and the lock file."""
    names = sorted(os.listdir(out))
    events = [n for n in names if NAME.fullmatch(n)]
    others = set(names) - set(events) - {n[: -len(".jsonl")] + ".meta.jsonl" for n in events}
    assert others == {".traces.jsonl.lock"}, others
    return [out / n for n in events]


def lines(path: Path) -> list[bytes]:
    data = path.read_bytes() if path.exists() else b""
    assert data == b"" or data.endswith(b"\n"), path  # whole lines only
    return data.splitlines()


def check_pair(events: Path) -> list[str]:
    """The N-th metadata line of the pair describes the N-th trace, every line whole; the ``<pid>:<k>`` of each."""
    meta = events.with_name(events.name[: -len(".jsonl")] + ".meta.jsonl")
    whos = []
    for line, meta_line in zip(lines(events), lines(meta), strict=True):
        trace, data = json.loads(line), json.loads(meta_line)["metadata"]
        assert not data.get("meta_lost"), events
        who, payload = trace[0]["content"].split("|", 1)
        assert payload == "x" * len(payload)
        assert data["name"] == f"crash-child {who}"
        whos.append(who)
    return whos


def pair_bytes(events: Path) -> int:
    return events.stat().st_size + events.with_name(events.name[: -len(".jsonl")] + ".meta.jsonl").stat().st_size


def test_processes_rotating_one_directory_keep_every_trace_whole_and_paired(tmp_path: Path) -> None:
    """Six processes append 40 traces each with rotate_bytes 4 MiB: a dozen files, each started by whichever process
    found the newest full; meanwhile ``spanfold ui``'s index follows them."""
    out = tmp_path / "traces"
    index = Index([out])
    children = [spawn(out, TRACES_EACH, PAYLOAD, SPANFOLD_ROTATE_BYTES="4MiB") for _ in range(WRITERS)]
    finish(children, index)
    files = numbered(out)
    assert len(files) >= 5
    assert [int(NAME.fullmatch(f.name)[2]) for f in files] == list(range(1, len(files) + 1))  # type: ignore[index]
    whos = []
    for events in files:
        mine = check_pair(events)
        assert len(mine) == 1 or pair_bytes(events) <= LIMIT, (events, pair_bytes(events))
        whos += mine
    assert sorted(whos) == sorted(f"{c.pid}:{k}" for c in children for k in range(TRACES_EACH))
    for child in children:  # each process's traces in its own order, across the files
        assert [w for w in whos if w.startswith(f"{child.pid}:")] == [f"{child.pid}:{k}" for k in range(TRACES_EACH)]
    index.refresh()
    _, rows = index.snapshot()
    assert len(rows) == len(whos)
    assert sorted(r.meta.name or "" for r in rows) == sorted(f"crash-child {w}" for w in whos)
    assert index.problems() == 0
    found = trace_files([out], lambda path, problem: pytest.fail(f"{path}: {problem}"))
    assert found == files  # the commands read the directory's numbered files, oldest first


def test_keep_files_bounds_the_directory_while_processes_write(tmp_path: Path) -> None:
    out = tmp_path / "traces"
    index = Index([out])
    children = [
        spawn(out, TRACES_EACH, PAYLOAD, SPANFOLD_ROTATE_BYTES="2MiB", SPANFOLD_KEEP_FILES="3") for _ in range(WRITERS)
    ]
    finish(children, index)
    files = numbered(out)
    assert 1 <= len(files) <= 3
    numbers = [int(NAME.fullmatch(f.name)[2]) for f in files]  # type: ignore[index]
    assert numbers == list(range(numbers[0], numbers[0] + len(files))) and numbers[0] > 3  # the newest were kept
    kept = [who for events in files for who in check_pair(events)]
    index.refresh()  # the runs of deleted files are gone from the list, the others are listed once
    _, rows = index.snapshot()
    assert sorted(r.meta.name or "" for r in rows) == sorted(f"crash-child {w}" for w in kept)


def _trace(k: int, size: int = 200) -> Trace:
    return Trace(
        events=[Message(role="tool", content=f"t:{k}|" + "x" * size)],
        meta=TraceMeta(trace_id=f"{k:032x}", name=f"crash-child t:{k}"),
    )


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_midnight_starts_a_new_file_at_the_first_write_of_a_day(tmp_path: Path) -> None:
    clock = Clock(time.mktime((2025, 6, 1, 23, 59, 0, 0, 0, -1)))
    writer = JsonlWriter(tmp_path, rotation=Rotation(when="midnight"), clock=clock)
    for k in range(3):
        writer.write(_trace(k))
        writer.flush()
    clock.now += 120  # 00:01 the next day
    writer.write(_trace(3))
    writer.flush()
    clock.now += 3600
    writer.write(_trace(4))
    writer.flush()
    files = numbered(tmp_path)
    assert [f.name for f in files] == ["traces.2025-06-01.000001.jsonl", "traces.2025-06-02.000002.jsonl"]
    assert [check_pair(f) for f in files] == [["t:0", "t:1", "t:2"], ["t:3", "t:4"]]
    assert writer.events_path == files[-1]


def test_a_batch_is_spread_over_files_at_trace_boundaries_and_a_long_trace_gets_its_own(tmp_path: Path) -> None:
    writer = JsonlWriter(tmp_path, rotation=Rotation(max_bytes=4000))
    for k in range(30):
        writer.write(_trace(k, 9000 if k == 7 else 200))
    writer.flush()  # one batch of 30
    files = numbered(tmp_path)
    whos = [check_pair(f) for f in files]
    assert [w for ws in whos for w in ws] == [f"t:{k}" for k in range(30)]
    assert ["t:7"] in whos  # longer than rotate_bytes: alone in its pair, whole
    assert all(pair_bytes(f) <= 4000 for f, ws in zip(files, whos, strict=True) if ws != ["t:7"])


def test_a_file_is_repaired_before_it_is_left_for_a_new_one(tmp_path: Path) -> None:
    """A writer killed mid-append left a torn line, and an events line without its metadata, in the newest file, now
    full: the next writer repairs it (as any file it appends to) before it starts the next one."""
    writer = JsonlWriter(tmp_path, rotation=Rotation(max_bytes=600))
    writer.write(_trace(0))
    writer.flush()
    (first,) = numbered(tmp_path)
    with first.open("ab") as handle:
        handle.write(json.dumps([{"role": "tool", "content": "t:1|x"}]).encode() + b"\n" + b'[{"role": "to')
    before = counters.snapshot()
    later = JsonlWriter(tmp_path, rotation=Rotation(max_bytes=600))
    for k in range(2, 6):
        later.write(_trace(k))
    later.flush()
    stats = counters.snapshot()
    assert stats["writer.torn_lines_cut"] - before.get("writer.torn_lines_cut", 0) == 1
    assert stats["writer.meta_lines_restored"] - before.get("writer.meta_lines_restored", 0) == 1
    files = numbered(tmp_path)
    assert files[0] == first and len(files) == 5  # each later trace in a file of its own
    events, metas = lines(first), lines(first.with_name(first.name.replace(".jsonl", ".meta.jsonl")))
    assert len(events) == len(metas) == 2  # the torn line cut, the lost metadata line restored as a placeholder
    assert b"t:1|x" in events[1] and json.loads(metas[1])["metadata"]["meta_lost"] is True
    assert [check_pair(f) for f in files[1:]] == [[f"t:{k}"] for k in range(2, 6)]


def test_keep_days_deletes_files_last_written_long_ago_but_never_the_newest(tmp_path: Path) -> None:
    clock = Clock(time.time())
    writer = JsonlWriter(tmp_path, rotation=Rotation(max_bytes=1500, keep_days=2), clock=clock)
    for k in range(8):
        writer.write(_trace(k))
        writer.flush()
    files = numbered(tmp_path)
    assert len(files) >= 3
    old = files[:2]
    for f in old:  # last written three days ago
        for path in (f, f.with_name(f.name.replace(".jsonl", ".meta.jsonl"))):
            os.utime(path, (clock.now - 3 * DAY, clock.now - 3 * DAY))
    writer.write(_trace(100, 2000))  # starts a file: the old ones go
    writer.flush()
    remaining = numbered(tmp_path)
    assert not set(old) & set(remaining)
    assert set(files[2:]) <= set(remaining)


def test_options_and_environment(tmp_path: Path) -> None:
    env = {"SPANFOLD_ROTATE_BYTES": "100MiB", "SPANFOLD_ROTATE_WHEN": "Midnight", "SPANFOLD_KEEP_FILES": "30"}
    loaded = config.load({"output": str(tmp_path)}, environ=env)
    assert (loaded.rotate_bytes, loaded.rotate_when, loaded.keep_files, loaded.keep_days) == (
        100 << 20,
        "midnight",
        30,
        None,
    )
    (writer,) = writers_for(loaded)
    assert isinstance(writer, JsonlWriter) and writer.rotation == Rotation(100 << 20, "midnight", 30, None)
    assert config.load({"rotate_bytes": 4096, "keep_days": 7}, environ={}).keep_days == 7
    (plain,) = writers_for(config.load({"output": str(tmp_path)}, environ={}))
    assert isinstance(plain, JsonlWriter) and plain.rotation is None
    bad: list[dict[str, Any]] = [
        {"SPANFOLD_ROTATE_BYTES": "lots"},
        {"SPANFOLD_ROTATE_BYTES": "0"},
        {"SPANFOLD_ROTATE_WHEN": "hourly"},
        {"SPANFOLD_KEEP_FILES": "3"},  # without rotation: nothing to keep
        {"SPANFOLD_ROTATE_WHEN": "midnight", "SPANFOLD_KEEP_DAYS": "-1"},
    ]
    for environ in bad:
        with pytest.raises(config.ConfigError):
            config.load({}, environ=environ)
    with pytest.raises(config.ConfigError):
        config.load({"rotate_bytes": 0}, environ={})


SENDER = Path(__file__).parents[1] / "bridge" / "instance_sender.py"


def test_serve_rotates_from_the_environment_and_its_page_follows_the_files(tmp_path: Path) -> None:
    """``spanfold serve --ui`` with ``SPANFOLD_ROTATE_BYTES``: the receiver's traces go to numbered files, and the
    page it serves lists the runs of every one of them as they appear."""
    out = tmp_path / "traces"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SPANFOLD_")}
    env = {**clean, "PYTHONPATH": os.pathsep.join(sys.path), "SPANFOLD_ROTATE_BYTES": "1KiB"}
    args = ["serve", "--port", "0", "--ui", "--ui-port", "0", "-o", str(out), "--wait", "0.2", "--final-wait", "0.3"]
    serve = subprocess.Popen([sys.executable, "-m", "spanfold", *args], stderr=subprocess.PIPE, text=True, env=env)
    sender = None
    try:
        assert serve.stderr is not None
        said = [serve.stderr.readline(), serve.stderr.readline()]
        ui = next(line.split("ui on ", 1)[1].strip() for line in said if "ui on " in line)
        otlp = next(line.split("listening on ", 1)[1].split(",")[0] for line in said if "listening on " in line)
        sender = subprocess.Popen(
            [sys.executable, str(SENDER), otlp, "instance"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert sender.stdin is not None and sender.stdout is not None
        for k in range(5):  # five runs, each answered at once: each its own trace, each past 1 KiB with its metadata
            user = {"role": "user", "parts": [{"type": "text", "content": f"question {k}: " + "y" * 400}]}
            answer = {"role": "assistant", "parts": [{"type": "text", "content": f"answer {k}"}]}
            sender.stdin.write(json.dumps({"inputs": [user], "outputs": [answer]}) + "\n")
            sender.stdin.flush()
            assert sender.stdout.readline().strip() == "sent"
        deadline, runs = time.monotonic() + 30, []
        while time.monotonic() < deadline and len(runs) < 5:
            with urllib.request.urlopen(ui + "api/runs", timeout=30) as response:
                runs = json.loads(response.read())["runs"]
            time.sleep(0.2)
        assert sorted(r["preview"][:10] for r in runs) == [f"question {k}" for k in range(5)]
        files = numbered(out)
        assert len(files) == 5 and sorted(r["file"] for r in runs) == sorted(map(str, files))
        sender.stdin.write("exit\n")
        sender.stdin.flush()
        assert sender.wait(timeout=30) == 0
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=60) == 0
    finally:
        for proc in (sender, serve):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        for stream in (serve.stderr, *((sender.stdin, sender.stdout) if sender is not None else ())):
            if stream is not None:
                stream.close()

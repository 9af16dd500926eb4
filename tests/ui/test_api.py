"""``spanfold ui``'s server and index over real files and real HTTP on loopback (no browser)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("aiohttp")

from tests.ui.traces import trace, write

from spanfold.ui.index import Index


def test_index_reads_only_complete_appended_lines(tmp_path: Path) -> None:
    path = write(tmp_path, [trace(1), trace(2)])
    index = Index([tmp_path])
    assert index.refresh()
    assert sorted(r.meta.name or "" for r in index.snapshot()[1]) == ["agent-1", "agent-2"]
    line = json.dumps(trace(3)[0]) + "\n"
    with path.open("a") as handle:  # a writer half-way through a line
        handle.write(line[:40])
    with (tmp_path / "traces.meta.jsonl").open("a") as handle:
        handle.write(json.dumps(trace(3)[1]) + "\n")
    index.refresh()
    assert len(index.snapshot()[1]) == 2
    done = index.files[str(path.resolve())].lines
    assert done is not None and done.done == path.stat().st_size - 40
    with path.open("a") as handle:
        handle.write(line[40:])
    assert index.refresh()
    rows = {r.line: r for r in index.snapshot()[1]}
    assert rows[3].meta.name == "agent-3" and rows[3].meta.usage.input_tokens == 103
    assert index.trace(rows[3])[1] is not None
    assert not index.refresh()  # nothing new: nothing read, nothing changed


def test_index_rebuilds_a_replaced_file(tmp_path: Path) -> None:
    path = write(tmp_path, [trace(1), trace(2), trace(3)])
    index = Index([tmp_path])
    index.refresh()
    path.unlink()
    (tmp_path / "traces.meta.jsonl").unlink()
    write(tmp_path, [trace(9)])
    assert index.refresh()
    assert [r.meta.name for r in index.snapshot()[1]] == ["agent-2"]


def test_bad_lines_are_counted_and_keep_metadata_in_step(tmp_path: Path) -> None:
    path = write(tmp_path, [trace(1)])
    with path.open("a") as handle:
        handle.write("{not json\n")
    with (tmp_path / "traces.meta.jsonl").open("a") as handle:
        handle.write(json.dumps(trace(2)[1]) + "\n")
    write(tmp_path, [trace(3)])
    index = Index([tmp_path])
    index.refresh()
    assert index.problems() == 1
    assert sorted(r.meta.name or "" for r in index.snapshot()[1]) == ["agent-1", "agent-3"]


def test_api_lists_filters_sorts_and_pages(tmp_path: Path, ui_server) -> None:
    write(tmp_path, [trace(n, tool="fetch" if n % 2 else "search", error=n == 4) for n in range(1, 21)])
    server = ui_server([tmp_path])
    server.wait_total(20)
    data = server.json("/api/runs?limit=5")
    assert data["total"] == 20 and len(data["runs"]) == 5
    assert [r["line"] for r in data["runs"]] == [20, 19, 18, 17, 16]  # newest first
    assert server.json("/api/runs?tool=fetch")["total"] == 10
    assert server.json("/api/runs?errors=yes")["runs"][0]["line"] == 4
    assert server.json("/api/runs?status=incomplete")["total"] == 2
    assert server.json("/api/runs?q=question+number+13")["runs"][0]["line"] == 13
    by_tokens = server.json("/api/runs?sort=tokens_in&order=asc&limit=3")["runs"]
    assert [r["tokens_in"] for r in by_tokens] == [101, 102, 103]
    assert server.json("/api/runs?offset=18&limit=5")["runs"][-1]["line"] == 1
    assert data["facets"]["tools"] == ["fetch", "search"]


def test_run_and_spec_and_compare(tmp_path: Path, ui_server) -> None:
    write(tmp_path, [trace(1, tool="search"), trace(2, tool="fetch")])
    server = ui_server([tmp_path])
    server.wait_total(2)
    ids = {r["line"]: r["id"] for r in server.json("/api/runs")["runs"]}
    run = server.json(f"/api/run/{ids[1]}")
    assert [e["role"] for e in run["events"]] == ["user", "assistant", "tool", "assistant"]
    assert run["meta"]["name"] == "agent-1"
    spec = yaml.safe_load(server.json(f"/api/run/{ids[1]}/spec")["spec"])  # what `spanfold check` reads
    assert spec[1]["tool_calls"][0] == {"tool": "search", "input": {"q": 1}, "output": "result 1", "id": "c1"}
    same = server.json(f"/api/compare?a={ids[1]}&b={ids[1]}")
    assert same["divergence"] is None
    other = server.json(f"/api/compare?a={ids[1]}&b={ids[2]}")
    assert other["divergence"] == 0
    assert server.get("/api/run/99-99")[0] == 404


def test_a_non_finite_number_reaches_the_page_as_null(tmp_path: Path, ui_server) -> None:
    events, meta = trace(1)
    events[1]["tool_calls"][0]["function"]["arguments"] = {"q": float("nan"), "limit": float("inf")}
    write(tmp_path, [(events, meta)])  # Python's json writes the tokens NaN and Infinity
    server = ui_server([tmp_path])
    server.wait_total(1)
    (row,) = server.json("/api/runs")["runs"]
    status, _, body = server.get(f"/api/run/{row['id']}")

    def refuse(token: str) -> None:  # what the page's JSON.parse does with them
        raise ValueError(token)

    run = json.loads(body, parse_constant=refuse)
    assert status == 200
    assert run["events"][1]["tool_calls"][0]["function"]["arguments"] == {"q": None, "limit": None}


def test_every_format_opens(tmp_path: Path, demo_dir: Path, ui_server) -> None:
    source = demo_dir / "traces.jsonl"
    run = [sys.executable, "-m", "spanfold", "convert", str(source)]
    subprocess.run([*run, "--to", "agentv", "-o", str(tmp_path / "agentv.jsonl")], check=True)
    subprocess.run([*run, "--to", "compact", "-o", str(tmp_path / "compact.yaml")], check=True)
    subprocess.run([*run, "--to", "invariant", "-o", str(tmp_path / "invariant.jsonl")], check=True)
    server = ui_server([tmp_path])
    server.wait_total(3)
    listed = server.json("/api/runs")  # one run in three formats: listed once, from the Invariant file
    assert [Path(r["file"]).name for r in listed["runs"]] == ["invariant.jsonl"] and listed["copies"] == 2
    runs = server.json("/api/runs?copies=show")["runs"]
    assert sorted(Path(r["file"]).name for r in runs) == ["agentv.jsonl", "compact.yaml", "invariant.jsonl"]
    for r in runs:
        detail = server.json(f"/api/run/{r['id']}")
        calls = [c["function"]["name"] for e in detail["events"] for c in e.get("tool_calls", [])]
        assert calls == ["get_weather", "get_weather", "convert_temperature"], r["file"]


def test_headers_and_token(tmp_path: Path, ui_server) -> None:
    write(tmp_path, [trace(1)])
    server = ui_server([tmp_path], env={"SPANFOLD_UI_TOKEN": "s3cret"})
    assert server.get("/")[0] == 401
    assert server.get("/api/runs")[0] == 401
    assert server.get("/api/runs", {"Authorization": "Bearer wrong"})[0] == 401
    status, headers, _ = server.get("/api/runs", {"Authorization": "Bearer s3cret"})
    assert status == 200
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    assert "unsafe-inline" not in headers["Content-Security-Policy"]
    status, headers, body = server.get("/?token=s3cret")
    assert status == 200 and "HttpOnly" in headers["Set-Cookie"] and b"/static/app.js" in body
    assert server.get("/static/../index.py", {"Authorization": "Bearer s3cret"})[0] == 404


def test_page_references_only_its_own_assets() -> None:
    from importlib import resources

    static = resources.files("spanfold.ui").joinpath("static")
    for name in ("index.html", "app.js", "style.css"):
        text = static.joinpath(name).read_text()
        assert "http://" not in text and "https://" not in text, name
    assert "innerHTML" not in static.joinpath("app.js").read_text()
    assert "<script>" not in static.joinpath("index.html").read_text()  # no inline script

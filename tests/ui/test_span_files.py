"""``spanfold ui`` opens an OTLP JSON span file as every command does: folded on read (a real run written with
``SPANFOLD_FORMAT=otlp-json``), in the API and in a real headless browser."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from spanfold.ui.index import Index


def renamed(line: bytes, n: int) -> bytes:
    """A span file's line of one trace, as the line of another trace (its trace id replaced by ``n``'s)."""
    trace_id = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    return line.replace(trace_id.encode(), f"{n:032x}".encode())


def test_index_folds_a_span_file(otlp_dir: Path) -> None:
    index = Index([otlp_dir])
    assert index.refresh()
    _, rows = index.snapshot()
    (row,) = rows
    assert row.shape == "otlp-json" and row.meta.name == "otlp-bot" and row.step_count == 6  # 3 model calls, 3 tools
    assert row.summary.tool_calls_by_name == {"get_weather": 2, "convert_temperature": 1}
    raw, trace = index.trace(row)
    assert trace is not None and [e["role"] for e in raw][:2] == ["system", "user"]
    assert not index.refresh()  # unchanged: not folded again


def test_a_span_file_being_appended_waits_for_its_last_line(tmp_path: Path, otlp_dir: Path) -> None:
    line = (otlp_dir / "traces.otlp.jsonl").read_bytes()
    second = renamed(line, 2)
    path = tmp_path / "traces.otlp.jsonl"
    path.write_bytes(line + second[: len(second) // 2])  # a writer half way through a second trace
    index = Index([tmp_path])
    index.refresh()
    assert len(index.snapshot()[1]) == 1 and index.problems() == 0  # the first: its line is whole
    with path.open("ab") as handle:
        handle.write(second[len(second) // 2 :])
    index.refresh()
    assert len(index.snapshot()[1]) == 2 and index.problems() == 0


def test_api_lists_and_opens_a_span_file(otlp_dir: Path, ui_server: Any) -> None:
    server = ui_server([otlp_dir])
    server.wait_total(1)
    (run,) = server.json("/api/runs")["runs"]
    assert run["name"] == "otlp-bot" and run["shape"] == "otlp-json" and run["tools"]["get_weather"] == 2
    opened = server.json(f"/api/run/{run['id']}")
    assert opened["events"][0]["role"] == "system" and opened["count"] == len(opened["events"])
    raw = server.json(f"/api/run/{run['id']}/raw")
    assert json.loads(raw["text"])[0]["role"] == "system" and raw["total"] == len(raw["text"])


def test_browser_opens_a_span_file(otlp_dir: Path, ui_server: Any, page: Any) -> None:
    pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")
    server = ui_server([otlp_dir])
    server.wait_total(1)
    page.goto(server.url)
    row = page.locator("#runs tr.run").first
    row.wait_for()
    text = row.inner_text()
    assert "otlp-bot" in text and "get_weather \u00d72" in text and "complete" in text
    row.click()
    page.wait_for_selector(".card")
    assert re.search(r"#/run/[0-9a-f]{32}$", page.url)
    assert page.locator(".card").count() == 3
    assert "Paris: 18°C, sunny" in page.locator(".card").first.inner_text()

"""``spanfold ui`` on 100,000 traces in one file: indexed once, listed a page at a time, filtered, a run opened,
and an appended trace shown live, in a real browser, well under a minute."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from tests.ui.traces import trace, write

expect = pytest.importorskip(
    "playwright.sync_api", reason="Playwright for Python is not installed (pip install playwright; CI installs it)"
).expect

RUNS = 100_000
TOOLS = ("search", "fetch", "write_file", "run_tests")


def _generate(directory: Path) -> Path:
    """100,000 Invariant lines (about 36 MB), written from a template (fast) with a metadata sibling."""
    directory.mkdir()
    line = (
        '[{"role":"user","content":"task %d"},{"role":"assistant","content":null,"tool_calls":[{"id":"c%d",'
        '"type":"function","function":{"name":"%s","arguments":{"n":%d}}}]},{"role":"tool","content":"out %d",'
        '"tool_call_id":"c%d"%s},{"role":"assistant","content":"done %d"}]\n'
    )
    meta = (
        '{"metadata":{"trace_id":"%032x","name":"agent-%d","models":["model-%d"],'
        '"usage":{"input_tokens":%d,"output_tokens":%d},"start":"2026-01-%02dT%02d:%02d:%02d.000Z",'
        '"duration_ms":%d,"status":"%s"}}\n'
    )
    error = ',"error":{"type":"ToolError","message":"boom"}'
    with (directory / "big.jsonl").open("w") as events, (directory / "big.meta.jsonl").open("w") as metas:
        for n in range(RUNS):
            tool = TOOLS[n % 4]
            events.write(line % (n, n, tool, n, n, n, error if n % 97 == 0 else "", n))
            day, rest = divmod(n, 86_400)
            metas.write(
                meta
                % (
                    n,
                    n % 13,
                    n % 3,
                    n,
                    n % 500,
                    day + 1,
                    rest // 3600,
                    rest // 60 % 60,
                    rest % 60,
                    n % 9000,
                    "complete" if n % 50 else "truncated",
                )
            )
    return directory / "big.jsonl"


def test_hundred_thousand_traces(tmp_path: Path, ui_server, page: Any) -> None:
    began = time.monotonic()
    path = _generate(tmp_path / "big")
    server = ui_server([path.parent])
    server.wait_total(RUNS, timeout=45)
    indexed = time.monotonic() - began
    page.goto(server.url)
    expect(page.locator("#runs tr.run")).to_have_count(100)  # one page, not the whole list
    expect(page.locator("#count")).to_contain_text("of 100,000 runs")
    first = page.locator("#runs tr.run").first
    assert first.get_attribute("data-id") == f"{RUNS - 1:032x}"  # newest first, by its trace id
    page.select_option("#f-tool", "run_tests")
    expect(page.locator("#count")).to_contain_text("of 25,000 runs")
    page.select_option("#f-errors", "yes")
    expect(page.locator("#count")).to_contain_text(f"of {len(range(0, RUNS, 97)) // 4:,} runs")
    page.select_option("#f-errors", "")
    page.select_option("#f-tool", "")
    page.fill("#f-q", "agent-12")
    expect(page.locator("#count")).to_contain_text("of 7,692 runs")
    page.fill("#f-q", "")
    page.locator("#f-q").press_sequentially("out 4242", delay=40)  # full text: tool outputs, counted as you type
    expect(page.locator("#count")).to_contain_text("of 11 runs")  # out 4242 and out 42420 ... 42429
    page.fill("#f-q", "")
    write(path.parent, [trace(RUNS + 7, tool="appended_tool")], name="big")
    server.wait_total(RUNS + 1, timeout=10)
    expect(page.locator("#count")).to_contain_text("of 100,001 runs", timeout=10_000)
    page.goto(f"{server.url}#/run/{50_000 - 1:032x}")  # line 50,000
    expect(page.locator(".card .tool-name")).to_have_text("run_tests")
    total = time.monotonic() - began
    assert total < 60, f"indexed in {indexed:.1f} s, all in {total:.1f} s"
    print(f"100,000 traces: generated and indexed in {indexed:.1f} s; whole test {total:.1f} s")

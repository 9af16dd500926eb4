"""Take the README's screenshots of ``spanfold ui`` (docs/img/ui-*.png) with the tests' setup: the demo's traces
plus a few more runs, the real command, Debian's chromium through Playwright. Not run in CI:

    PYTHONPATH=src:. python tests/ui/screenshots.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from playwright.sync_api import expect, sync_playwright
from tests.ui.conftest import CHROMIUM, UiServer
from tests.ui.traces import trace, write

OUT = Path(__file__).resolve().parents[2] / "docs" / "img"


def _agent(tools: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A coding agent's run calling ``tools`` in order, one model step each, with step times (event timestamps,
    when each step ended, and durations)."""
    events, meta = trace(100, tool=tools[0])
    events = events[:1]
    clock = 0.0

    def at(ms: float) -> str:
        return f"2026-01-01T00:01:{40 + int(ms // 1000):02d}.{int(ms % 1000):03d}Z"

    for k, tool in enumerate(tools):
        clock += 700 + 150 * k
        call = {"id": f"c{k}", "type": "function", "function": {"name": tool, "arguments": {"path": f"src/m{k}.py"}}}
        step = {"model": "gpt-test", "duration_ms": 700 + 150 * k}
        events.append({"role": "assistant", "content": None, "tool_calls": [call], "timestamp": at(clock), **step})
        clock += 300 + 400 * (tool == "run_tests")
        took = {"duration_ms": 300 + 400 * (tool == "run_tests")}
        events.append(
            {"role": "tool", "content": f"{tool} ok", "tool_call_id": f"c{k}", "timestamp": at(clock), **took}
        )
    clock += 900
    events.append(
        {"role": "assistant", "content": "done", "timestamp": at(clock), "model": "gpt-test", "duration_ms": 900}
    )
    meta["metadata"].update(name="coder", start=at(0), duration_ms=clock)
    return events, meta


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        traces = Path(tmp) / "traces"
        subprocess.run([sys.executable, "-m", "spanfold", "demo", "-o", str(traces)], check=True, capture_output=True)
        runs = [trace(n, tool=("search", "fetch", "write_file")[n % 3], error=n % 5 == 0) for n in range(1, 9)]
        write(traces, runs, name="more")
        write(
            traces,
            [
                _agent(["list_files", "read_file", "run_tests", "edit_file"]),
                _agent(["list_files", "read_file", "edit_file", "run_tests"]),
            ],
            name="pair",
        )
        server = UiServer([traces])
        try:
            server.wait_total(11)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1280, "height": 720})
                page.goto(server.url)
                expect(page.locator("#runs tr.run")).to_have_count(11)
                page.screenshot(path=str(OUT / "ui-runs.png"))
                demo = page.locator("#runs tr.run", has_text="weather-bot").get_attribute("data-id")
                page.goto(f"{server.url}#/run/{demo}")
                page.wait_for_selector(".card")
                page.screenshot(path=str(OUT / "ui-run.png"), full_page=True)
                page.goto(f"{server.url}#/run/1-1/timeline")
                page.wait_for_selector(".bar-row")
                page.screenshot(path=str(OUT / "ui-timeline.png"))
                page.goto(f"{server.url}#/compare/1-1/1-2")  # pair.jsonl: files are numbered in name order
                page.wait_for_selector("#divergence")
                page.screenshot(path=str(OUT / "ui-compare.png"))
                browser.close()
        finally:
            server.stop()
    print(f"screenshots in {OUT}")


if __name__ == "__main__":
    main()

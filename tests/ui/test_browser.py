"""The page in a real headless browser (Debian's chromium through Playwright): the run list, filtering, a run,
compare, live updates, and trace content that tries to run script (it must be shown as text, never run)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.ui.traces import XSS_IMG, XSS_SCRIPT, trace, trace_id, write

expect = pytest.importorskip(
    "playwright.sync_api", reason="Playwright for Python is not installed (pip install playwright; CI installs it)"
).expect


def _open(page: Any, url: str) -> list[str]:
    """Open the page; the console errors and failed requests seen (the page must make none)."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    page.goto(url)
    return errors


def test_demo_run_list_and_run_view(demo_dir: Path, ui_server, page: Any) -> None:
    server = ui_server([demo_dir])
    server.wait_total(1)
    errors = _open(page, server.url)
    row = page.locator("#runs tr.run").first
    row.wait_for()
    text = row.inner_text()
    assert "weather-bot" in text and "gpt-4o-mini" in text and "get_weather \u00d72" in text and "complete" in text
    row.click()
    page.wait_for_selector(".card")
    (demo,) = server.json("/api/runs")["runs"]
    assert demo["id"] == demo["trace_id"] and re.fullmatch("[0-9a-f]{32}", demo["id"])  # a permalink by trace id
    assert page.url.endswith(f"#/run/{demo['id']}")
    cards = page.locator(".card")
    assert cards.count() == 3
    assert "Paris: 18°C, sunny" in cards.first.inner_text()  # the output is paired with its call
    assert page.locator(".msg.system").count() == 1 and page.locator(".msg.user").count() == 1
    page.click("#copy-spec")
    expect(page.locator("#spec")).to_contain_text("get_weather")
    page.click("button[data-tab=raw]")
    expect(page.locator("#raw")).to_contain_text('"role": "system"')
    page.click("button[data-tab=metadata]")
    assert "weather-bot" in page.locator("#metadata").inner_text()
    page.goto(f"{server.url}#/run/{demo['id']}/timeline")  # a permalink opens the same view
    page.wait_for_selector("button[data-tab=timeline].active")
    assert errors == [], errors


def test_filter_sort_compare_and_live_update(tmp_path: Path, ui_server, page: Any) -> None:
    path = write(tmp_path, [trace(n, tool="fetch" if n % 2 else "search", error=n == 4) for n in range(1, 11)])
    server = ui_server([tmp_path])
    server.wait_total(10)
    _open(page, server.url)
    page.wait_for_selector("#runs tr.run")
    assert page.locator("#count").inner_text() == "1\u201310 of 10 runs"
    page.select_option("#f-tool", "fetch")
    expect(page.locator("#count")).to_have_text("1\u20135 of 5 runs (10 in all)")
    page.select_option("#f-tool", "")
    page.select_option("#f-errors", "yes")
    expect(page.locator("#runs tr.run")).to_have_count(1)
    assert page.locator("#runs tr.run").get_attribute("data-id") == trace_id(4)
    page.select_option("#f-errors", "")
    page.fill("#f-q", "question number 7")
    expect(page.locator("#runs tr.run")).to_have_count(1)
    page.fill("#f-q", "")
    expect(page.locator("#runs tr.run")).to_have_count(10)
    page.click("th[data-sort=tokens_in]")  # descending first, then ascending
    page.click("th[data-sort=tokens_in]")
    expect(page.locator("#runs tr.run").first).to_have_attribute("data-id", trace_id(1))
    # live: a trace appended to the file shows up without a reload
    write(tmp_path, [trace(11, tool="brand_new_tool")])
    expect(page.locator("#runs .tools span", has_text="brand_new_tool")).to_have_count(1, timeout=10_000)
    assert path.stat().st_size > 0
    # compare two runs
    page.locator(f"#runs tr[data-id='{trace_id(1)}'] input.pick").click()
    page.locator(f"#runs tr[data-id='{trace_id(2)}'] input.pick").click()
    page.click("#compare")
    page.wait_for_selector("#divergence")
    assert "part at call 1" in page.locator("#divergence").inner_text()
    assert page.locator("li.diverge").count() == 2


def test_trace_content_is_text_never_markup(tmp_path: Path, ui_server, page: Any) -> None:
    events, meta = trace(1, text=XSS_SCRIPT, tool="<b>tool</b>")
    events[2]["content"] = XSS_IMG
    events[3]["content"] = [
        {"type": "text", "text": "<iframe src=javascript:window.__xss=3></iframe>"},
        {"type": "image", "image_url": "javascript:window.__xss=4"},
        {"type": "image", "image_url": "https://example.invalid/tracker.png"},
    ]
    meta["metadata"]["name"] = '<img src=x onerror="window.__xss=5">'
    meta["metadata"]["models"] = ["<svg onload=window.__xss=6>"]
    write(tmp_path, [(events, meta)])
    server = ui_server([tmp_path])
    server.wait_total(1)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    _open(page, server.url)
    page.wait_for_selector("#runs tr.run")
    assert '<img src=x onerror="window.__xss=5">' in page.locator("#runs").inner_text()
    assert page.evaluate("document.querySelectorAll('#runs img, #runs svg').length") == 0
    page.goto(server.url + "#/run/" + trace_id(1))
    page.wait_for_selector(".card")
    body = page.locator("#run-body").inner_text()
    assert XSS_SCRIPT in body and XSS_IMG in body and "<b>tool</b>" in body
    assert "<iframe src=javascript:window.__xss=3></iframe>" in body
    assert page.evaluate("window.__xss") is None
    # nothing from the trace became an element: no script, img, iframe or svg made of it
    made = "script:not([src]), iframe, svg, img, #run-body b, h1 b"
    assert page.evaluate(f"document.querySelectorAll('{made}').length") == 0
    assert all(r.startswith(server.url) for r in requests), requests  # no request outside the server
    page.click("button[data-tab=raw]")
    expect(page.locator("#raw")).to_contain_text(json.dumps(XSS_SCRIPT)[1:-1])
    assert page.evaluate("window.__xss") is None


def test_data_image_is_shown_and_reasoning_folded(tmp_path: Path, ui_server, page: Any) -> None:
    pixel = (
        "data:image/png;base64,"
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    events, meta = trace(1)
    events[0]["content"] = [{"type": "text", "text": "what is this?"}, {"type": "image", "image_url": {"url": pixel}}]
    events[3]["reasoning"] = "the user wants the pixel described"  # event metadata, as the fold writes it
    write(tmp_path, [(events, meta)])
    server = ui_server([tmp_path])
    server.wait_total(1)
    _open(page, server.url + "#/run/" + trace_id(1))
    page.wait_for_selector("img.trace-image")
    assert page.evaluate("document.querySelector('img.trace-image').naturalWidth") == 1
    reasoning = page.locator("details.reasoning")
    assert reasoning.count() == 1 and reasoning.get_attribute("open") is None  # collapsed
    reasoning.locator("summary").click()
    expect(reasoning).to_contain_text("the user wants the pixel described")


def test_timeline_shows_step_durations(tmp_path: Path, ui_server, page: Any) -> None:
    events, meta = trace(1, tool="search")
    events[1].update(timestamp="2026-01-01T00:00:01.000Z", duration_ms=1000, model="gpt-test")
    events[2].update(timestamp="2026-01-01T00:00:01.250Z", duration_ms=250)
    events[3].update(timestamp="2026-01-01T00:00:02.000Z", duration_ms=750, model="gpt-test")
    meta["metadata"].update(start="2026-01-01T00:00:00.000Z", duration_ms=2000)
    write(tmp_path, [(events, meta)])
    server = ui_server([tmp_path])
    server.wait_total(1)
    _open(page, f"{server.url}#/run/{trace_id(1)}/timeline")
    rows = page.locator(".timeline .bar-row")
    expect(rows).to_have_count(3)
    assert page.locator(".bar-row .wf-label").all_inner_texts() == ["model gpt-test", "└ tool search", "model gpt-test"]
    assert "250 ms" in rows.nth(1).inner_text()
    rows.nth(1).locator("a.to-event").click()  # a step links to its event in the conversation
    page.wait_for_selector("#event-3.selected")
    assert page.url.endswith(f"#/run/{trace_id(1)}/conversation/s2")

"""``spanfold ui``, round 3 (issue 51): zoom on a long run's waterfall. Dragging across the bars zooms the axis to
that time range (a plain click still picks a step); "Reset zoom", a button reached by the keyboard, shows the whole
run again. A real run (the openai SDK over real HTTP to the mock server, its tool slow: a wide bar); the real command,
a real browser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

expect = pytest.importorskip("playwright.sync_api").expect


def _track_box(page: Any) -> dict[str, float]:
    box = page.locator("#wf-timeline .bar-row .wf-track").first.bounding_box()
    assert box is not None
    return box


def _left(page: Any, step: int) -> float:
    """Where step ``step``'s bar starts, in percent of its track."""
    return float(page.locator(f".wf-row[data-step='{step}'] .bar").evaluate("b => parseFloat(b.style.left)"))


def test_drag_zooms_the_waterfall_and_reset_shows_the_whole_run(recorded_dir: Path, ui_server: Any, page: Any) -> None:
    metas = [json.loads(line)["metadata"] for line in (recorded_dir / "traces.meta.jsonl").read_text().splitlines()]
    slow = next(m for m in metas if m["name"] == "slow-bot")  # model call, a 120 ms tool run, model call
    server = ui_server([recorded_dir])
    server.wait_total(len(metas))
    page.goto(f"{server.url}#/run/{slow['trace_id']}/timeline")
    expect(page.locator("#wf-zoom-hint")).to_contain_text("Drag across the bars")
    ticks = page.locator("#wf-timeline .wf-axis .tick")
    expect(ticks.first).to_have_text("0")
    whole = [_left(page, k) for k in range(3)]
    # drag across the middle half of the track: the window shown is that part of the run
    box = _track_box(page)
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.25, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=5)
    expect(page.locator("#wf-brush")).to_be_visible()  # the range being selected, drawn
    page.mouse.move(box["x"] + box["width"] * 0.75, y, steps=5)
    page.mouse.up()
    expect(page.locator("#wf-zoom-range")).to_contain_text("showing +")
    expect(page.locator("#wf-reset-zoom")).to_be_focused()  # the keyboard is where the way back is
    expect(ticks.first).not_to_have_text("0")  # the axis starts inside the run
    assert page.locator("#wf-timeline.zoomed").count() == 1
    zoomed = [_left(page, k) for k in range(3)]
    # each bar moved out from the window's middle: twice as far from it, as the window is half the run
    for before, after in zip(whole, zoomed, strict=True):
        assert abs((after - 50) - 2 * (before - 50)) < 2, (whole, zoomed)
    assert page.url.endswith("/timeline")  # the drag picked no step
    # a click still picks a step, zoomed
    page.locator(".wf-row[data-step='1'] .wf-label").click()
    expect(page.locator("#step-details")).to_have_attribute("data-step", "1")
    # Reset zoom, by the keyboard: the whole run again
    page.locator("#wf-reset-zoom").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#wf-zoom-hint")).to_be_visible()
    expect(ticks.first).to_have_text("0")
    assert [_left(page, k) for k in range(3)] == pytest.approx(whole, abs=0.01)
    assert page.locator("#wf-timeline.zoomed").count() == 0

"""The waterfall of ``spanfold ui`` (issue 34, item 1): each model call and tool run of a run on one time axis, from
the per-step timing of the metadata, tool runs under the call that asked for them, a step's details on hover and
click, and one step picked in both the waterfall and the conversation. Traces written by ``spanfold.init()`` with
default settings from the real openai SDK over real HTTP to the mock server (``recorded_dir``), the same run
converted to AgentV by ``spanfold convert``, and an OTLP JSON span file; the real command; a real headless
browser."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.ui import agents

expect = pytest.importorskip("playwright.sync_api").expect

#: The weather run as the waterfall draws it: kind, depth (tool runs under their call).
DEMO_SHAPE = [("model", 0), ("tool", 1), ("tool", 1), ("model", 0), ("tool", 1), ("model", 0)]


def _ids(server: Any) -> dict[str, str]:
    return {r["name"]: r["id"] for r in server.json("/api/runs")["runs"]}


def _details(page: Any) -> dict[str, str]:
    """The selected step's details as the page lists them (term -> definition)."""
    page.wait_for_selector("#step-details dl")
    pairs = page.locator("#step-details dl").evaluate(
        "dl => [...dl.querySelectorAll('dt')].map(dt => [dt.textContent, dt.nextElementSibling.textContent])"
    )
    return dict(pairs)


def _shape(page: Any) -> list[tuple[str, int]]:
    rows = page.locator(".timeline .wf-row[data-step]")
    kinds = rows.evaluate_all("rs => rs.map(r => r.classList.contains('step-tool') ? 'tool' : 'model')")
    nested = rows.evaluate_all("rs => rs.map(r => r.querySelector('.nest') ? 1 : 0)")
    return list(zip(kinds, nested, strict=True))


def test_each_step_is_a_bar_on_one_axis_with_tool_runs_under_their_call(
    recorded_dir: Path, ui_server: Any, page: Any
) -> None:
    server = ui_server([recorded_dir])
    server.wait_total(3)
    ids = _ids(server)
    wf = server.json(f"/api/run/{ids['weather-bot']}")["waterfall"]
    assert [(s["kind"], s["depth"]) for s in wf["steps"]] == DEMO_SHAPE
    assert [s["parent"] for s in wf["steps"]] == [None, 0, 0, None, 3, None]
    page.goto(f"{server.url}#/run/{ids['weather-bot']}/timeline")
    page.wait_for_selector(".timeline .wf-row[data-step]")
    assert _shape(page) == DEMO_SHAPE
    labels = page.locator(".wf-row[data-step] .wf-label").all_inner_texts()
    assert labels == [
        f"model {agents.MODEL}",
        "└ tool get_weather",
        "└ tool get_weather",
        f"model {agents.MODEL}",
        "└ tool convert_temperature",
        f"model {agents.MODEL}",
    ]
    assert page.locator(".wf-axis .tick").count() >= 3
    # each model call shows its tokens as the metadata records them
    first = wf["steps"][0]["usage"]
    assert (
        f"{first['input_tokens']} in / {first['output_tokens']} out"
        in page.locator(".wf-row[data-step='0']").inner_text()
    )
    assert "system" not in " ".join(labels) and "user" not in " ".join(labels)


def test_bars_are_placed_and_sized_by_the_step_times(recorded_dir: Path, ui_server: Any, page: Any) -> None:
    server = ui_server([recorded_dir])
    server.wait_total(3)
    slow = _ids(server)["slow-bot"]
    wf = server.json(f"/api/run/{slow}")["waterfall"]
    tool = next(s for s in wf["steps"] if s["kind"] == "tool")
    assert tool["duration_ms"] >= 120 and tool["depth"] == 1  # the slow tool, under the call that asked for it
    page.goto(f"{server.url}#/run/{slow}/timeline")
    page.wait_for_selector(".wf-row[data-step] .bar")
    boxes = page.locator(".wf-row[data-step]").evaluate_all(
        """rs => rs.map(r => { const t = r.querySelector('.wf-track').getBoundingClientRect();
             const b = r.querySelector('.bar').getBoundingClientRect();
             return [(b.left - t.left) / t.width, b.width / t.width]; })"""
    )
    span = wf["span_ms"]
    for (left, width), step in zip(boxes, wf["steps"], strict=True):
        assert left == pytest.approx(step["offset_ms"] / span, abs=0.01)
        assert width == pytest.approx(max(step["duration_ms"] / span, 0), abs=0.01)
    tool_width = boxes[[s["kind"] for s in wf["steps"]].index("tool")][1]
    assert tool_width > 0.3  # 120 ms of a run of a few hundred: a wide bar, not a sliver


def test_a_step_picked_in_the_waterfall_is_picked_in_the_conversation(
    recorded_dir: Path, ui_server: Any, page: Any
) -> None:
    server = ui_server([recorded_dir])
    server.wait_total(3)
    run = _ids(server)["weather-bot"]
    page.goto(f"{server.url}#/run/{run}/timeline")
    row = page.locator(".wf-row[data-step='1']")
    assert "step 2: tool get_weather" in (row.get_attribute("title") or "")  # details on hover
    assert "starts at +" in (row.get_attribute("title") or "")
    row.click()
    expect(page).to_have_url(re.compile(r"/timeline/s2$"))
    expect(page.locator(".wf-row.selected")).to_have_attribute("data-step", "1")
    details = _details(page)
    assert details["step"] == "2 of 6" and details["tool"] == "get_weather" and details["call id"] == "call_mock_1"
    assert details["asked for by"] == f"step 1: model {agents.MODEL}"
    page.click("#step-in-conversation")
    expect(page).to_have_url(re.compile(r"/conversation/s2$"))
    selected = page.locator("#run-body .selected")
    expect(selected).to_have_count(1)
    expect(selected).to_contain_text("Paris: 18°C, sunny")  # the tool run's card, its output paired with its call
    # and the other way: a step picked in the conversation is the one the waterfall shows
    page.locator(".step-chip[data-step='3'] a").first.click()
    expect(page).to_have_url(re.compile(r"/conversation/s4$"))
    expect(page.locator("#run-body .msg.selected")).to_have_count(1)
    page.click("button[data-tab=timeline]")
    expect(page.locator(".wf-row.selected")).to_have_attribute("data-step", "3")
    expect(page.locator("#step-details dd").first).to_have_text("4 of 6")


def test_a_failed_call_is_a_red_bar_with_its_error(recorded_dir: Path, ui_server: Any, page: Any) -> None:
    server = ui_server([recorded_dir])
    server.wait_total(3)
    page.goto(f"{server.url}#/run/{_ids(server)['failing-bot']}/timeline/s1")
    expect(page.locator(".wf-row[data-step] .bar.error")).to_have_count(1)
    expect(page.locator("#step-details")).to_contain_text("openai.InternalServerError")
    bar = page.locator(".bar.error")
    assert bar.evaluate("b => getComputedStyle(b).backgroundColor") == "rgb(180, 35, 24)"


def test_agentv_and_otlp_files_draw_the_same_waterfall(
    recorded_dir: Path, otlp_dir: Path, tmp_path: Path, ui_server: Any, page: Any
) -> None:
    converted = tmp_path / "agentv"
    converted.mkdir()
    source, target = str(recorded_dir / "traces.jsonl"), str(converted / "runs.agentv.jsonl")
    command = [sys.executable, "-m", "spanfold", "convert", "--to", "agentv", source, "-o", target]
    subprocess.run(command, check=True, capture_output=True)
    for directory, name in ((converted, "weather-bot"), (otlp_dir, "otlp-bot")):
        server = ui_server([directory])
        server.wait_total(1)
        page.goto(f"{server.url}#/run/{_ids(server)[name]}/timeline")
        page.wait_for_selector(".timeline .wf-row[data-step]")
        assert _shape(page) == DEMO_SHAPE, directory
        widths = page.locator(".wf-row[data-step] .bar").evaluate_all(
            "bs => bs.map(b => b.getBoundingClientRect().width)"
        )
        assert all(w >= 3 for w in widths)

"""Everyday polish of ``spanfold ui`` (issue 34, item 7): how a run ended said truthfully, permalinks by trace id,
an assistant's Markdown made of text nodes, dark mode, the keyboard, 800 px windows, and the copies ``spanfold
convert`` writes beside the traces listed once. The real command, real ``spanfold demo`` and ``spanfold convert``
output where the files matter, a real headless browser."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.ui.traces import trace, trace_id, write

expect = pytest.importorskip("playwright.sync_api").expect


def _luminance(css: str) -> float:
    r, g, b = (int(x) for x in re.findall(r"\d+", css)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def test_how_a_run_ended_is_said_truthfully(tmp_path: Path, ui_server: Any, page: Any) -> None:
    ok, recovered = trace(1), trace(2, error=True)  # run 2: a tool failed, the run went on and ended normally
    write(tmp_path, [ok, recovered])
    (tmp_path / "bare.jsonl").write_text(json.dumps(trace(3)[0]) + "\n")  # no metadata: nothing says how it ended
    server = ui_server([tmp_path])
    server.wait_total(3)
    rows = {r["name"] or r["file"]: r for r in server.json("/api/runs")["runs"]}
    bare = next(r for r in rows.values() if r["file"].endswith("bare.jsonl"))
    assert bare["status"] == "unknown" and rows["agent-2"]["status"] == "complete" and rows["agent-2"]["errors"] == 1
    assert server.json("/api/runs?status=unknown")["total"] == 1
    page.goto(server.url)
    page.wait_for_selector("#runs tr.run")
    green = "rgb(8, 116, 67)"
    cells = {
        name: page.locator(f"#runs tr[data-id='{row['id']}'] td.status") for name, row in (("ok", rows["agent-1"]),)
    }
    cells["recovered"] = page.locator(f"#runs tr[data-id='{trace_id(2)}'] td.status")
    cells["bare"] = page.locator(f"#runs tr[data-id='{bare['id']}'] td.status")
    expect(cells["recovered"]).to_have_text("complete (1 error)")
    expect(cells["bare"]).to_have_text("unknown")
    assert cells["ok"].evaluate("e => getComputedStyle(e).color") == green
    for name in ("recovered", "bare"):
        assert cells[name].evaluate("e => getComputedStyle(e).color") != green, name
    page.goto(f"{server.url}#/run/{bare['id']}")
    expect(page.locator("#run-status")).to_contain_text("unknown")


def test_a_permalink_is_the_trace_id_and_outlives_new_files(tmp_path: Path, ui_server: Any, page: Any) -> None:
    write(tmp_path, [trace(1), trace(2)], name="later")
    server = ui_server([tmp_path])
    server.wait_total(2)
    page.goto(server.url)
    page.locator(f"#runs tr[data-id='{trace_id(2)}']").click()
    expect(page.locator("h1")).to_have_text("agent-2")
    permalink = page.url
    assert permalink.endswith(f"#/run/{trace_id(2)}")
    server.stop()
    write(tmp_path, [trace(7), trace(8)], name="earlier")  # a file that sorts first, then the command again
    again = ui_server([tmp_path])
    again.wait_total(4)
    page.goto(permalink.replace(server.url, again.url))
    expect(page.locator("h1")).to_have_text("agent-2")
    assert again.json(f"/api/run/{trace_id(2)}")["row"]["name"] == "agent-2"
    assert again.get("/api/run/99-99")[0] == 404


def test_converted_copies_beside_the_traces_are_listed_once(demo_dir: Path, tmp_path: Path, ui_server: Any) -> None:
    traces = tmp_path / "traces"
    shutil.copytree(demo_dir, traces)
    source = traces / "traces.jsonl"
    convert = [sys.executable, "-m", "spanfold", "convert", str(source)]
    outputs = {
        "agentv": ["--to", "agentv", "-o", str(traces / "run.agentv.jsonl")],
        "compact": ["--to", "compact", "-o", str(traces / "run.compact.yaml")],
        "agentv-cli": ["--to", "agentv-cli", "-o", str(traces / "run.cli.json")],
        "invariant-object": ["--to", "invariant", "--style", "object", "-o", str(traces / "run.object.jsonl")],
        "agentv-summary": ["--to", "agentv", "--summary-only", "-o", str(traces / "run.summary.json")],
    }
    for args in outputs.values():
        subprocess.run([*convert, *args], check=True, capture_output=True)
    server = ui_server([traces])
    server.wait_total(6)
    listed = server.json("/api/runs")
    assert [(Path(r["file"]).name, r["shape"]) for r in listed["runs"]] == [("traces.jsonl", "invariant")]
    assert listed["copies"] == 5 and listed["all"] == 1
    run = server.json(f"/api/run/{listed['runs'][0]['id']}")
    assert sorted(c["shape"] for c in run["copies"]) == sorted(outputs)
    assert server.json("/api/runs?copies=show")["total"] == 6
    # a run of its own in the same directory is listed (another run of the demo: another trace id)
    subprocess.run([sys.executable, "-m", "spanfold", "demo", "-o", str(traces)], check=True, capture_output=True)
    server.wait_total(7)
    assert server.json("/api/runs")["all"] == 2


def test_the_page_lists_copies_once_and_names_them(demo_dir: Path, tmp_path: Path, ui_server: Any, page: Any) -> None:
    traces = tmp_path / "traces"
    shutil.copytree(demo_dir, traces)
    out = str(traces / "run.agentv.jsonl")
    subprocess.run(
        [sys.executable, "-m", "spanfold", "convert", str(traces / "traces.jsonl"), "--to", "agentv", "-o", out]
    )
    server = ui_server([traces])
    server.wait_total(2)
    page.goto(server.url)
    expect(page.locator("#runs tr.run")).to_have_count(1)
    page.check("#f-copies")
    expect(page.locator("#runs tr.run")).to_have_count(2)
    page.uncheck("#f-copies")
    expect(page.locator("#runs tr.run")).to_have_count(1)
    page.locator("#runs tr.run").click()
    expect(page.locator(".copies")).to_contain_text("run.agentv.jsonl:1 (agentv)")


MARKDOWN = """## Plan <b>bold?</b>

1. read **the <img src=x onerror="window.__xss=9"> file**
2. run `pytest -q <script>`

- see [the docs](https://example.invalid/docs) and [this](javascript:window.__xss=10)
- *done* ~~not~~

```python
print("<i>hi</i>")
```

| tool | calls |
|---|---|
| grep | 2 |
"""


def test_an_assistants_markdown_is_made_of_text_nodes(tmp_path: Path, ui_server: Any, page: Any) -> None:
    events, meta = trace(1)
    events[3]["content"] = MARKDOWN
    write(tmp_path, [(events, meta)])
    server = ui_server([tmp_path])
    server.wait_total(1)
    page.goto(f"{server.url}#/run/{trace_id(1)}")
    answer = page.locator(".msg.assistant .md").last
    answer.wait_for()
    assert answer.locator("h4").inner_text() == "Plan <b>bold?</b>"
    assert answer.locator("ol li").all_inner_texts() == [
        'read the <img src=x onerror="window.__xss=9"> file',
        "run pytest -q <script>",
    ]
    assert answer.locator("ol strong").inner_text() == 'the <img src=x onerror="window.__xss=9"> file'
    assert answer.locator("ol code").inner_text() == "pytest -q <script>"
    link = answer.locator("a")
    expect(link).to_have_count(1)  # the javascript: link is text
    assert (
        link.get_attribute("href") == "https://example.invalid/docs"
        and link.get_attribute("rel") == "noopener noreferrer"
    )
    assert "[this](javascript:window.__xss=10)" in answer.inner_text()
    assert answer.locator("em").inner_text() == "done" and answer.locator("del").inner_text() == "not"
    assert answer.locator("pre code").inner_text() == 'print("<i>hi</i>")'
    assert answer.locator("table td").all_inner_texts() == ["grep", "2"]
    made = "#run-body img, #run-body script, #run-body b, #run-body i, #run-body iframe"
    assert page.evaluate(f"document.querySelectorAll('{made}').length") == 0
    assert page.evaluate("window.__xss") is None
    page.uncheck("#markdown")  # the text as it is
    expect(page.locator(".msg.assistant .md")).to_have_count(0)
    assert MARKDOWN.strip() in page.locator(".msg.assistant").last.inner_text()


def test_dark_mode_follows_the_system(tmp_path: Path, ui_server: Any, page: Any) -> None:
    write(tmp_path, [trace(1), trace(2, error=True)])
    server = ui_server([tmp_path])
    server.wait_total(2)
    page.goto(f"{server.url}#/run/{trace_id(2)}")
    page.wait_for_selector(".card")

    def colours() -> dict[str, float]:
        return {
            "body": _luminance(page.evaluate("getComputedStyle(document.body).backgroundColor")),
            "text": _luminance(page.evaluate("getComputedStyle(document.body).color")),
            "card": _luminance(page.locator(".msg").first.evaluate("e => getComputedStyle(e).backgroundColor")),
        }

    light = colours()
    assert light["body"] > 0.8 and light["text"] < 0.3 and light["card"] > 0.8
    page.emulate_media(color_scheme="dark")
    dark = colours()
    assert dark["body"] < 0.2 and dark["text"] > 0.7 and dark["card"] < 0.2
    error = page.locator(".err-text").first.evaluate("e => getComputedStyle(e).color")
    r, g, b = (int(x) for x in re.findall(r"\d+", error)[:3])
    assert r > 200 and r > g + 60 and r > b + 60  # an error stays red, and readable on the dark page


def test_the_keyboard_moves_through_runs_and_steps(recorded_dir: Path, ui_server: Any, page: Any) -> None:
    server = ui_server([recorded_dir])
    server.wait_total(3)
    runs = server.json("/api/runs")["runs"]
    assert [r["name"] for r in runs] == ["failing-bot", "slow-bot", "weather-bot"]  # newest first
    ids = [r["id"] for r in runs]
    page.goto(server.url)
    page.wait_for_selector("#runs tr.run")
    for _ in range(3):
        page.keyboard.press("j")
    expect(page.locator("#runs tr.run.current")).to_have_attribute("data-id", ids[2])
    page.keyboard.press("k")
    expect(page.locator("#runs tr.run.current")).to_have_attribute("data-id", ids[1])
    page.keyboard.press("j")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(f"#/run/{ids[2]}$"))
    page.wait_for_selector("#run-body .msg")
    page.keyboard.press("j")
    expect(page).to_have_url(re.compile("/conversation/s1$"))
    expect(page.locator("#run-body .selected")).to_have_count(1)
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    expect(page).to_have_url(re.compile("/conversation/s2$"))
    page.keyboard.press("t")
    expect(page.locator(".wf-row.selected")).to_have_attribute("data-step", "1")
    page.keyboard.press("j")
    expect(page.locator(".wf-row.selected")).to_have_attribute("data-step", "2")
    page.keyboard.press("Escape")
    page.wait_for_selector("#runs tr.run")
    page.keyboard.press("/")
    expect(page.locator("#f-q")).to_be_focused()
    page.keyboard.type("jk")  # typed into the search box, not moving through the runs
    expect(page.locator("#f-q")).to_have_value("jk")
    page.keyboard.press("Escape")
    expect(page.locator("#f-q")).to_have_value("")
    expect(page.locator("#f-q")).not_to_be_focused()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_view_fits_800_px(recorded_dir: Path, ui_server: Any, browser: Any, scheme: str) -> None:
    server = ui_server([recorded_dir])
    server.wait_total(3)
    ids = {r["name"]: r["id"] for r in server.json("/api/runs")["runs"]}
    weather, slow = ids["weather-bot"], ids["slow-bot"]
    context = browser.new_context(viewport={"width": 800, "height": 700}, color_scheme=scheme)
    page = context.new_page()
    views = {
        "list": ("", "#runs tr.run"),
        "run": (f"#/run/{weather}", "#run-body .msg"),
        "timeline": (f"#/run/{weather}/timeline/s2", "#step-details dl"),
        "compare": (f"#/compare/{weather}/{slow}", "#divergence"),
    }
    for name, (route, ready) in views.items():
        page.goto(server.url + route)
        page.wait_for_selector(ready)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 800, (name, width)
    page.goto(server.url)
    page.wait_for_selector("#runs tr.run")
    status = page.locator("#runs tr.run td.status").first
    assert status.is_visible() and status.bounding_box()["x"] + status.bounding_box()["width"] <= 800
    context.close()

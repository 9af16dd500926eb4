"""A long run in ``spanfold ui`` (issue 34, item 5): sent as it is shown (a page of events at a time, each long
text cut, the rest a slice at a time; the raw record and the spec only when asked for), and whole when every piece
is read. How fast is ``bench/ui_open_large.py``'s to say; these tests check what arrives and what the page shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.ui.traces import XSS_IMG

from spanfold.trace.compact import compact_messages
from spanfold.trace.decode import decode

expect = pytest.importorskip("playwright.sync_api").expect

STEPS = 400
BIG = 450_000  # the output of step 7: cut, then fetched in slices of 200,000 characters
TRACE_ID = f"{0x10A6:032x}"


def _output(k: int) -> str:
    if k == 7:  # markup across the cut and across each slice's edge: text all the same
        text = "".join(f"line {i:06d} of the big output\n" for i in range(BIG // 30 + 1))[:BIG]
        for at in (1990, 199_990, 201_990):
            text = text[:at] + XSS_IMG + text[at + len(XSS_IMG) :]
        return text
    return f"output of step {k}: " + "lorem ipsum " * 200


def _write(directory: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One run of STEPS model steps, each calling a tool, with the metadata's step times."""
    events: list[dict[str, Any]] = [{"role": "user", "content": "Refactor the project."}]
    steps: list[dict[str, Any]] = []
    for k in range(1, STEPS + 1):
        call = {"id": f"c{k}", "type": "function", "function": {"name": "read_file", "arguments": {"path": f"m{k}.py"}}}
        events.append({"role": "assistant", "content": f"step {k}", "tool_calls": [call]})
        at = f"2026-01-01T00:{k // 60 % 60:02d}:{k % 60:02d}"
        steps.append({"kind": "model", "start": f"{at}.000000Z", "duration_ms": 400.0, "model": "gpt-test"})
        steps[-1]["event"] = len(events) - 1
        events.append({"role": "tool", "tool_call_id": f"c{k}", "content": _output(k)})
        steps.append({"kind": "tool", "start": f"{at}.500000Z", "duration_ms": 300.0, "name": "read_file"})
        steps[-1].update(call_id=f"c{k}", event=len(events) - 1)
    events.append({"role": "assistant", "content": "Done."})
    meta = {"trace_id": TRACE_ID, "name": "long-bot", "start": "2026-01-01T00:00:00.000Z", "steps": steps}
    directory.mkdir()
    (directory / "runs.jsonl").write_text(json.dumps(events) + "\n")
    (directory / "runs.meta.jsonl").write_text(json.dumps({"metadata": meta}) + "\n")
    return events, meta


@pytest.fixture(scope="module")
def long_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    directory = tmp_path_factory.mktemp("long") / "runs"
    events, _ = _write(directory)
    return directory, events


def _get(server: Any, path: str) -> tuple[Any, int]:
    status, _, body = server.get(path)
    assert status == 200, body
    return json.loads(body), len(body)


def test_a_run_arrives_a_page_at_a_time_and_whole_when_every_piece_is_read(long_run: Any, ui_server: Any) -> None:
    directory, events = long_run
    server = ui_server([directory])
    server.wait_total(1)
    (row,) = server.json("/api/runs")["runs"]
    run_id = row["id"]
    first, size = _get(server, f"/api/run/{run_id}")
    assert first["count"] == len(events) and "raw" not in first and "spec" not in first
    assert size < 600_000, size  # the file is over 5 MB: the first answer is what the page shows first
    assert len(first["waterfall"]["steps"]) == 2 * STEPS
    # pages follow each other, end after the tool outputs of their calls, and hold every event once
    got = list(first["events"])
    while len(got) < first["count"]:
        page, _ = _get(server, f"/api/run/{run_id}/events?from={len(got)}")
        assert page["from"] == len(got) and page["events"]
        got.extend(page["events"])
        assert got[-1]["role"] != "assistant" or got[-1]["n"] == len(events)  # a call's output is on its page
    assert [e["n"] for e in got] == list(range(1, len(events) + 1))
    big = got[14]  # step 7's output (event 15)
    assert big["cut"] == {"content": BIG} and len(big["content"]) == 2000
    assert got[13]["outputs"] == {"c7": 15}
    assert all(e["content"] == json.loads(json.dumps(events[e["n"] - 1]["content"])) for e in got if "cut" not in e)
    # the cut text, slice by slice, is the text
    text = ""
    while True:
        part, _ = _get(server, f"/api/run/{run_id}/part?n=15&path=content&from={len(text)}")
        assert part["total"] == BIG and part["from"] == len(text)
        text += part["text"]
        if len(text) >= BIG:
            break
    assert text == events[14]["content"]
    # the raw record and the spec, on request: the record as indented JSON, the spec `spanfold check` reads
    raw = ""
    while True:
        piece, _ = _get(server, f"/api/run/{run_id}/raw?from={len(raw)}")
        raw += piece["text"]
        if len(raw) >= piece["total"]:
            break
    assert json.loads(raw) == events
    spec = server.json(f"/api/run/{run_id}/spec")["spec"]
    decoded = decode(events).trace
    assert decoded is not None and yaml.safe_load(spec) == compact_messages(decoded)
    assert server.get(f"/api/run/{run_id}/part?n=15&path=content/nothing")[0] == 404


def test_the_page_shows_the_first_events_and_the_rest_as_the_reader_goes(
    long_run: Any, ui_server: Any, page: Any
) -> None:
    directory, events = long_run
    server = ui_server([directory])
    server.wait_total(1)
    run_id = server.json("/api/runs")["runs"][0]["id"]
    page.goto(f"{server.url}#/run/{run_id}")
    page.wait_for_selector("#run-body .msg")
    shown = page.locator("#conversation > .msg").count()
    assert 50 < shown < 200  # a page of messages (each output with its call), not the whole run
    expect(page.locator("#load-more")).to_contain_text(f"of {len(events)} shown")
    page.locator("#more-events").scroll_into_view_if_needed()  # the reader reaches the end: the next page comes
    expect(page.locator("#conversation > .msg")).not_to_have_count(shown)
    # a step far down, picked by its permalink: its event is fetched and shown picked
    page.goto(f"{server.url}#/run/{run_id}/conversation/s{2 * STEPS - 1}")
    picked = page.locator("#run-body .selected")
    expect(picked).to_have_count(1)
    expect(picked).to_contain_text(f"step {STEPS}")
    assert picked.is_visible()
    page.goto(f"{server.url}#/run/{run_id}/timeline")
    expect(page.locator(".wf-row[data-step]")).to_have_count(2 * STEPS)


def test_a_cut_output_is_shown_slice_by_slice_as_text(long_run: Any, ui_server: Any, page: Any) -> None:
    directory, events = long_run
    server = ui_server([directory])
    server.wait_total(1)
    run_id = server.json("/api/runs")["runs"][0]["id"]
    page.goto(f"{server.url}#/run/{run_id}/conversation/15")
    card = page.locator("#event-15")
    card.locator("summary").click()
    assert f"({BIG:,} chars)" in card.locator("summary").inner_text()
    more = card.locator("button.more")
    expect(more).to_have_text(f"Show more ({BIG - 2000:,} more characters of {BIG:,})")
    for _ in range(3):
        more.click()
        page.wait_for_timeout(50)
    expect(more).to_have_count(0)
    assert card.locator("pre").last.text_content() == events[14]["content"]
    assert page.evaluate("window.__xss") is None
    assert page.evaluate("document.querySelectorAll('#run-body img').length") == 0
    # the raw record, a slice at a time, as text
    page.click("button[data-tab=raw]")
    expect(page.locator("#raw")).to_contain_text('"role": "user"')
    raw = page.locator("#raw").text_content() or ""
    assert raw == json.dumps(events, indent=2)[: len(raw)] and len(raw) == 200_000
    expect(page.locator("#run-body button.more")).to_contain_text("of ")
    assert page.evaluate("window.__xss") is None

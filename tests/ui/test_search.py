"""Search in ``spanfold ui`` (issue 34, item 3): full text over the content of runs (messages, tool arguments and
outputs, not only the first question), in JSONL files as they grow, in runs read whole (YAML, span files), and
filters by metadata (agent, model, status, service, conversation / session id, user id, a time range) that
combine. The count as you type on 100,000 runs is ``test_large.py``'s."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.ui.traces import trace, trace_id, write

expect = pytest.importorskip("playwright.sync_api").expect


def _runs() -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
    runs = [trace(n) for n in range(1, 11)]
    runs[2][0][1]["tool_calls"][0]["function"]["arguments"] = {"path": "src/Zebrafish.py"}  # run 3: an argument
    runs[6][0][2]["content"] = "stack trace: QuuxOverflowError in module 7"  # run 7: a tool output
    runs[8][0][3]["content"] = "I booked the café by the harbour."  # run 9: a later answer, not the first question
    return runs


def _ids(server: Any, query: str) -> list[str]:
    return sorted(r["id"] for r in server.json(f"/api/runs?limit=500&{query}")["runs"])


def test_full_text_finds_arguments_outputs_and_answers(tmp_path: Path, ui_server: Any) -> None:
    write(tmp_path, _runs())
    server = ui_server([tmp_path])
    server.wait_total(10)
    assert _ids(server, "q=zebrafish") == [trace_id(3)]  # case does not matter
    assert _ids(server, "q=QuuxOverflow") == [trace_id(7)]
    assert _ids(server, "q=caf%C3%A9+by+the") == [trace_id(9)]
    assert _ids(server, "q=question+number+4") == [trace_id(4)]  # the first question, as before
    assert _ids(server, "q=tool_call_id") == []  # a key of the JSON is no content
    assert _ids(server, "q=nothing+like+this") == []
    # a run appended later is searched too (the file from where the last search stopped)
    late = trace(11)
    late[0][2]["content"] = "another QuuxOverflowError"
    write(tmp_path, [late])
    server.wait_total(11)
    assert _ids(server, "q=quuxoverflow") == sorted([trace_id(7), trace_id(11)])


def test_full_text_in_ascii_only_files_yaml_and_span_files(tmp_path: Path, otlp_dir: Path, ui_server: Any) -> None:
    ascii_dir = tmp_path / "ascii"
    ascii_dir.mkdir()
    events, meta = trace(1)
    events[2]["content"] = "déjà vu at the café"
    (ascii_dir / "escaped.jsonl").write_text(json.dumps(events, ensure_ascii=True) + "\n")  # \u00e9 in the file
    (ascii_dir / "escaped.meta.jsonl").write_text(json.dumps(meta) + "\n")
    doc, _ = trace(2)
    doc[2]["content"] = "a YAML run mentions Fjord"
    (ascii_dir / "one.yaml").write_text(yaml.safe_dump(doc))
    server = ui_server([ascii_dir, otlp_dir])
    server.wait_total(3)
    assert len(server.json("/api/runs?q=d%C3%A9j%C3%A0+vu")["runs"]) == 1
    assert [r["file"].endswith("one.yaml") for r in server.json("/api/runs?q=fjord")["runs"]] == [True]
    found = server.json("/api/runs?q=cloudy")["runs"]  # a tool output of the span file's folded run
    assert [r["name"] for r in found] == ["otlp-bot"]


def _described(n: int, **meta: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    events, record = trace(n, model=meta.pop("model", "gpt-test"))
    record["metadata"].update(meta)
    return events, record


def test_metadata_filters_combine(tmp_path: Path, ui_server: Any, page: Any) -> None:
    runs = [
        _described(1, name="planner", service="api", conversation_id="conv-a", user_id="u1"),
        _described(2, name="planner", service="api", conversation_id="conv-a", user_id="u2", model="gpt-big"),
        _described(3, name="coder", service="worker", conversation_id="conv-b", user_id="u1", status="error"),
        _described(4, name="coder", service="worker", **{"session.id": "conv-b", "user.id": "u1"}),
        _described(5, name="coder", service="api", start="2026-03-01T10:00:00.000Z"),
    ]
    write(tmp_path, runs)
    server = ui_server([tmp_path])
    server.wait_total(5)
    assert _ids(server, "agent=coder") == [trace_id(3), trace_id(4), trace_id(5)]
    assert _ids(server, "agent=coder&service=worker") == [trace_id(3), trace_id(4)]
    assert _ids(server, "agent=coder&service=worker&status=error") == [trace_id(3)]
    assert _ids(server, "conversation=conv-b") == [trace_id(3), trace_id(4)]  # session.id is a conversation id
    assert _ids(server, "user=u1") == [trace_id(1), trace_id(3), trace_id(4)]
    assert _ids(server, "user=u1&conversation=conv-a") == [trace_id(1)]
    assert _ids(server, "model=gpt-big&agent=planner") == [trace_id(2)]
    assert _ids(server, "from=2026-02-01T00:00:00Z") == [trace_id(5)]
    assert _ids(server, "to=2026-02-01T00:00:00Z&agent=coder") == [trace_id(3), trace_id(4)]
    facets = server.json("/api/runs")["facets"]
    assert facets["agents"] == ["coder", "planner"] and facets["services"] == ["api", "worker"]
    assert facets["conversations"] and facets["users"]
    # the same on the page, one filter after the other, the count as it goes
    page.goto(server.url)
    count = page.locator("#count")
    expect(count).to_have_text("1\u20135 of 5 runs")
    page.select_option("#f-agent", "coder")
    expect(count).to_have_text("1\u20133 of 3 runs (5 in all)")
    page.select_option("#f-service", "worker")
    expect(count).to_have_text("1\u20132 of 2 runs (5 in all)")
    page.fill("#f-user", "u1")
    page.fill("#f-conversation", "conv-b")
    expect(count).to_have_text("1\u20132 of 2 runs (5 in all)")
    page.select_option("#f-service", "")
    page.fill("#f-from", "2026-02-01T00:00")
    expect(count).to_have_text("0\u20130 of 0 runs (5 in all)")
    page.fill("#f-conversation", "")
    page.fill("#f-user", "")
    expect(count).to_have_text("1\u20131 of 1 runs (5 in all)")
    expect(page.locator("#runs tr.run")).to_have_attribute("data-id", trace_id(5))


def test_search_box_finds_content_as_you_type(tmp_path: Path, ui_server: Any, page: Any) -> None:
    write(tmp_path, _runs())
    server = ui_server([tmp_path])
    server.wait_total(10)
    page.goto(server.url)
    page.wait_for_selector("#runs tr.run")
    page.locator("#f-q").press_sequentially("quuxover", delay=30)
    expect(page.locator("#count")).to_have_text("1\u20131 of 1 runs (10 in all)")
    expect(page.locator("#runs tr.run")).to_have_attribute("data-id", trace_id(7))
    expect(page.locator("#totals [data-total=runs]")).to_have_text("runs 1")  # the numbers follow the search
    expect(page.locator("#f-q")).to_be_focused()

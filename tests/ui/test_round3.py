"""``spanfold ui``, round 3 (issue 51): the list's question and answer, service, user, tags and prompt (issue 49's
context) as columns and filters kept in the URL, local times with UTC on hover, a message for an empty result; a run's
trace id and permalinks by a unique start of it; a step's details; the run as the waterfall's first row; an error said
once; compare telling two runs of one agent apart; the metadata as a table; every session reachable, each turn under
its own question. The real command, a real headless browser."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from tests.ui.traces import trace, trace_id, write

expect = pytest.importorskip("playwright.sync_api").expect


def _run(n: int, **meta: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    events, record = trace(n)
    record["metadata"].update(meta)
    return events, record


def _context_runs(directory: Path) -> None:
    write(
        directory,
        [
            _run(1, service="api", user_id="u-1", tags=["beta"], prompt={"name": "support", "version": "v3"}),
            _run(2, service="worker", user_id="u-2", tags=["beta", "vip"], prompt={"name": "support", "version": "v4"}),
            _run(3, service="api"),
            _run(4, service="api", usage={"unreported_steps": 2}),  # no model call reported tokens: unknown, not 0
        ],
    )


def _hash_query(url: str) -> dict[str, list[str]]:
    fragment = urlsplit(url).fragment
    return parse_qs(fragment.split("?", 1)[1]) if "?" in fragment else {}


def test_list_columns_context_filters_in_the_url_and_an_empty_result(
    tmp_path: Path, ui_server: Any, browser: Any
) -> None:
    _context_runs(tmp_path)
    server = ui_server([tmp_path])
    server.wait_total(4)
    facets = server.json("/api/runs")["facets"]
    assert facets["tags"] == ["beta", "vip"] and facets["prompts"] == ["support@v3", "support@v4"]
    assert server.json("/api/runs?prompt=support")["total"] == 2
    assert server.json("/api/runs?prompt=support@v4")["total"] == 1
    context = browser.new_context(viewport={"width": 1400, "height": 900}, timezone_id="Asia/Tokyo")
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        page.goto(server.url)
        one = page.locator(f"#runs tr[data-id='{trace_id(1)}']")
        expect(one.locator("td.col-io .io-in")).to_have_text("question number 1")
        expect(one.locator("td.col-io .io-out")).to_have_text("answer 1")
        expect(one.locator("td.col-service")).to_have_text("api")
        expect(one.locator("td.col-user")).to_have_text("u-1")
        expect(one.locator("td.col-tags .tag")).to_have_text("beta")
        expect(one.locator("td.col-tags .prompt")).to_have_text("support v3")
        # started 2026-01-01T00:00:01Z: 09:00:01 in Tokyo, UTC on hover
        expect(one.locator("td.col-time")).to_have_text("2026-01-01 09:00:01")
        assert "UTC 2026-01-01 00:00:01.000Z" in (one.locator("td.col-time").get_attribute("title") or "")
        unknown = page.locator(f"#runs tr[data-id='{trace_id(4)}']")
        expect(unknown.locator("td.col-tokens_in")).to_have_text("\u2013")  # unknown, never 0
        # filters: each one in the URL as it is set, and a reload keeps them
        page.select_option("#f-tag", "vip")
        expect(page.locator("#count")).to_have_text("1\u20131 of 1 runs (4 in all)")
        page.select_option("#f-prompt", "support")
        page.fill("#f-user", "u-2")
        expect(page.locator("#runs tr.run")).to_have_attribute("data-id", trace_id(2))
        expect(page).to_have_url(re.compile("user=u-2"))
        assert _hash_query(page.url) == {"tag": ["vip"], "prompt": ["support"], "user": ["u-2"]}
        page.reload()
        expect(page.locator("#count")).to_have_text("1\u20131 of 1 runs (4 in all)")
        expect(page.locator("#f-tag")).to_have_value("vip")
        expect(page.locator("#f-user")).to_have_value("u-2")
        # a run opened and left with Esc: the list as it was
        page.locator("#runs tr.run").click()
        expect(page.locator("h1")).to_have_text("agent-2")
        page.keyboard.press("Escape")
        expect(page.locator("#count")).to_have_text("1\u20131 of 1 runs (4 in all)")
        # a time filter in local time, kept in UTC in the URL
        page.fill("#f-from", "2026-01-01T09:00")
        expect(page).to_have_url(re.compile("from="))
        assert _hash_query(page.url)["from"] == ["2026-01-01T00:00:00.000Z"]
        # nothing kept: said so, and the filters can be cleared from there
        page.fill("#f-user", "nobody")
        expect(page.locator("#empty-result")).to_contain_text("No run matches these filters")
        page.click("#clear-filters")
        expect(page.locator("#count")).to_have_text("1\u20134 of 4 runs")
        expect(page).to_have_url(re.compile(r"#/$"))
    finally:
        context.close()


def test_a_run_header_names_its_trace_and_a_unique_start_of_it_is_a_permalink(
    tmp_path: Path, ui_server: Any, page: Any
) -> None:
    ids = {1: "abcdef0123456789" + "0" * 16, 2: "abcdef01ffffffff" + "0" * 16, 3: "1234567890abcdef" + "1" * 16}
    write(tmp_path, [_run(n, trace_id=ids[n], user_id="u-7", tags=["beta"]) for n in ids])
    server = ui_server([tmp_path])
    server.wait_total(3)
    assert server.json(f"/api/run/{ids[1][:16]}")["row"]["id"] == ids[1]  # as spanfold summary prints it
    assert server.json("/api/run/1234567890AB")["row"]["id"] == ids[3]  # any case
    assert server.get("/api/run/abcdef01")[0] == 404  # two runs start so: neither
    assert server.get("/api/run/1234567")[0] == 404  # too short to name a run
    page.goto(f"{server.url}#/run/{ids[1][:16]}")
    expect(page.locator("h1")).to_have_text("agent-1")
    expect(page.locator("#run-trace-id")).to_have_text(f"trace id {ids[1]}")
    expect(page.locator("#run-user")).to_have_text("user u-7")
    expect(page.locator("#run-tags")).to_have_text("tags beta")
    expect(page).to_have_url(re.compile(f"#/run/{ids[1]}$"))  # the run's own permalink takes its place
    expect(page.locator("#run-steps")).to_have_text("steps 3")  # model calls and tool runs, as the list counts them


def _step_run(directory: Path) -> None:
    """A run whose second model call failed, with every step timed and the first call's metadata on its event."""
    events: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Find the weather " + "in Paris " * 400},
        {
            "role": "assistant",
            "content": "Looking it up.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "search", "arguments": {"q": "paris"}}}
            ],
        },
        {"role": "tool", "content": "18 degrees", "tool_call_id": "c1"},
        {
            "role": "error",
            "content": "RateLimitError: slow down",
            "error": {"type": "RateLimitError", "message": "slow down", "stacktrace": "Traceback: line 1\nline 2"},
        },
    ]
    steps = [
        {"kind": "model", "start": "2026-01-01T00:00:01.000Z", "duration_ms": 500.0, "model": "gpt-test",
         "usage": {"input_tokens": 30, "output_tokens": 5}, "span_id": "aaaa", "event": 2},
        {"kind": "tool", "start": "2026-01-01T00:00:01.600Z", "duration_ms": 100.0, "name": "search",
         "call_id": "c1", "span_id": "bbbb", "event": 3},
        {"kind": "model", "start": "2026-01-01T00:00:01.800Z", "duration_ms": 200.0, "model": "gpt-test",
         "error": {"type": "RateLimitError", "message": "slow down", "stacktrace": "Traceback: line 1\nline 2"},
         "span_id": "cccc", "event": 4},
    ]  # fmt: skip
    meta = {"metadata": {"trace_id": trace_id(9), "name": "step-bot", "models": ["gpt-test"],
                         "start": "2026-01-01T00:00:00.000Z", "duration_ms": 2000.0, "status": "error",
                         "error": {"type": "RateLimitError", "message": "slow down"}, "steps": steps}}  # fmt: skip
    write(directory, [(events, meta)])


def test_a_steps_details_the_run_row_and_an_error_said_once(tmp_path: Path, ui_server: Any, page: Any) -> None:
    _step_run(tmp_path)
    server = ui_server([tmp_path])
    server.wait_total(1)
    page.goto(f"{server.url}#/run/{trace_id(9)}/timeline/s1")
    details = page.locator("#step-details")
    # what the first call was sent (the system prompt and the question, cut and expandable) and what it answered
    expect(details.locator(".step-input .step-event")).to_have_count(2)
    question = details.locator(".step-input .step-event.user")
    expect(question.locator("summary")).to_contain_text("3,617 chars")
    expect(details.locator(".step-output")).to_contain_text("Looking it up.")
    expect(details.locator(".step-output .tool-name")).to_have_text("search")
    expect(details.locator("#step-attributes tr[data-key=span_id] td")).to_have_text("aaaa")
    expect(details.locator("#step-attributes tr[data-key=usage] td")).to_contain_text('"input_tokens":30')
    # the tool run: its arguments and its output
    page.goto(f"{server.url}#/run/{trace_id(9)}/timeline/s2")
    expect(details).to_contain_text("input: arguments")
    expect(details.locator("h4 + div pre").first).to_contain_text('"q": "paris"')
    expect(details.locator(".step-event.tool")).to_contain_text("18 degrees")
    # the failed call: its error's type, message and stack
    page.goto(f"{server.url}#/run/{trace_id(9)}/timeline/s3")
    expect(details.locator(".error-type")).to_have_text("RateLimitError")
    expect(details.locator(".error-message")).to_have_text("slow down")
    details.locator(".error-stack summary").click()
    expect(details.locator(".error-stack pre")).to_have_text("Traceback: line 1\nline 2")
    # the run is the first row: its whole time, and the second before its first step said
    expect(page.locator("#wf-run .wf-label")).to_have_text("run step-bot")
    expect(page.locator("#wf-run-gap")).to_have_text("1.00 s before its first step")
    # the error event's text is its error: said once
    page.goto(f"{server.url}#/run/{trace_id(9)}/conversation")
    error = page.locator(".msg.error")
    expect(error).to_have_count(1)
    assert error.inner_text().count("slow down") == 1, error.inner_text()
    # the metadata as a table: a row per field, the steps a row each
    page.click("button[data-tab=metadata]")
    expect(page.locator("#metadata tr[data-key=name] > td")).to_have_text("step-bot")
    expect(page.locator("#metadata tr[data-key=steps] .meta-records > tbody > tr")).to_have_count(3)


def test_compare_tells_two_runs_of_one_agent_apart(tmp_path: Path, ui_server: Any, page: Any) -> None:
    write(tmp_path, [_run(1, name="weather-bot"), _run(2, name="weather-bot")])
    server = ui_server([tmp_path])
    server.wait_total(2)
    page.goto(f"{server.url}#/compare/{trace_id(1)}/{trace_id(2)}")
    title = page.locator(".compare-title")
    expect(title).to_contain_text("A: weather-bot")
    tells = page.locator(".compare-title .tell").all_inner_texts()
    assert len(tells) == 2 and tells[0] != tells[1], tells
    facts = page.locator(".side-facts").all_inner_texts()
    assert all("1 tool call \u00b7" in f for f in facts), facts  # never "1 tool calls"


def test_the_chart_of_a_handful_of_runs_is_small_and_labelled(tmp_path: Path, ui_server: Any, page: Any) -> None:
    write(tmp_path, [trace(n) for n in (1, 2, 30)])
    server = ui_server([tmp_path])
    server.wait_total(3)
    assert len(server.json("/api/stats")["bins"]) == 3  # no more bins than runs
    page.goto(server.url)
    chart = page.locator("#chart svg")
    chart.wait_for()
    assert chart.bounding_box()["height"] < 140, chart.bounding_box()
    expect(page.locator("#chart .chart-axis span")).to_have_count(5)


def test_every_session_is_reachable_and_each_turn_reads_its_own_question(
    tmp_path: Path, ui_server: Any, page: Any
) -> None:
    runs = [
        _run(n, conversation_id=f"s-{n:03d}", start=f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}.000Z")
        for n in range(230)
    ]
    first, first_meta = trace(500, text="Where is my order A-100?")
    second = [*first, {"role": "user", "content": "And order B-200?"}, {"role": "assistant", "content": "On its way."}]
    turn = dict(conversation_id="chat-1", start="2026-01-02T00:00:00.000Z")
    runs.append((first, {"metadata": {**first_meta["metadata"], **turn}}))
    second_meta = {**first_meta["metadata"], **turn, "trace_id": trace_id(501), "start": "2026-01-02T00:01:00.000Z"}
    runs.append((second, {"metadata": second_meta}))
    write(tmp_path, runs)
    server = ui_server([tmp_path])
    server.wait_total(232)
    page.goto(f"{server.url}#/sessions")
    rows = page.locator("#sessions tbody tr.session")
    expect(rows).to_have_count(100)
    page.click("#more-sessions")
    expect(rows).to_have_count(200)
    page.click("#more-sessions")
    expect(rows).to_have_count(231)
    expect(page.locator("#more-sessions")).to_have_count(0)
    shown = rows.evaluate_all("rows => rows.map(r => r.dataset.id)")
    assert sorted(shown) == sorted({"chat-1", *(f"s-{n:03d}" for n in range(230))})
    page.goto(f"{server.url}#/session/chat-1")
    questions = page.locator("#session-runs .turn-question")
    expect(questions).to_have_text(["Where is my order A-100?", "And order B-200?"])
    expect(page.locator("#session-runs .turn-answer").last).to_have_text("On its way.")
    assert server.json("/api/session?id=chat-1")["runs"][1]["question"] == "And order B-200?"


def test_a_later_turn_shows_its_history_apart_from_what_it_produced(tmp_path: Path, ui_server: Any, page: Any) -> None:
    first = [{"role": "user", "content": "Where is my order A-100?"}, {"role": "assistant", "content": "Shipped."}]
    later = [*first, {"role": "user", "content": "And order B-200?"}, {"role": "assistant", "content": "On its way."}]
    write(tmp_path, [(first, _run(1, handed=1)[1]), (later, _run(2, handed=3)[1])])
    server = ui_server([tmp_path])
    server.wait_total(2)
    page.goto(f"{server.url}#/run/{trace_id(2)}")
    expect(page.locator(".msg.handed")).to_have_count(3)
    expect(page.locator("#handed-start")).to_contain_text("the 3 events this run was handed")
    expect(page.locator("#produced-start + .msg")).to_contain_text("On its way.")
    page.goto(f"{server.url}#/run/{trace_id(1)}")  # a first turn: handed only its question, nothing to set apart
    expect(page.locator(".msg.assistant")).to_have_count(1)
    expect(page.locator(".handed-mark")).to_have_count(0)


def test_scores_given_while_the_ui_is_open_are_a_column_a_filter_and_on_the_run(
    tmp_path: Path, ui_server: Any, page: Any
) -> None:
    """Issue 49's scores in the ui: another process scores a run while the page is open; the list shows a Scores
    column and filter, the run's header its scores."""
    write(tmp_path, [_run(1), _run(2)])
    server = ui_server([tmp_path])
    server.wait_total(2)
    assert "scores" not in server.json("/api/runs")["runs"][0] and server.json("/api/runs")["facets"]["scores"] == []
    code = (
        "import spanfold, sys; "
        "spanfold.score(sys.argv[1], 'helpful', True, directory=sys.argv[3]); "
        "spanfold.score(sys.argv[1], 'accuracy', 0.8123, source='llm', directory=sys.argv[3]); "
        "spanfold.score(sys.argv[2], 'accuracy', 0.25, source='code', directory=sys.argv[3])"
    )
    subprocess.run([sys.executable, "-c", code, trace_id(1), trace_id(2), str(tmp_path)], check=True)
    deadline = time.monotonic() + 30  # the ui looks at its files again every second or so
    while server.json("/api/runs?score=helpful")["total"] != 1:
        assert time.monotonic() < deadline, server.json("/api/runs")
        time.sleep(0.1)
    assert server.json("/api/runs")["facets"]["scores"] == ["accuracy", "helpful"]
    assert server.json("/api/runs?score=accuracy")["total"] == 2
    page.goto(server.url)
    one = page.locator(f"#runs tr[data-id='{trace_id(1)}']")
    expect(one.locator("td.col-scores .score")).to_have_text(["helpful ✓", "accuracy 0.812"])
    page.select_option("#f-score", "helpful")
    expect(page.locator("#runs tr.run")).to_have_count(1)
    assert _hash_query(page.url)["score"] == ["helpful"]
    one.click()
    expect(page.locator("#run-scores .score")).to_have_text(["helpful true", "accuracy 0.8123"])

"""Sessions in ``spanfold ui`` (issue 34, item 4): runs grouped by the conversation (or session) id their metadata
records, a session's runs in the order they started with its total tokens and cost, reached from a run and from the
list of sessions (which the list's filters narrow)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.ui.traces import trace, trace_id, write

expect = pytest.importorskip("playwright.sync_api").expect


def _run(n: int, second: int, **meta: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    events, record = trace(n)
    record["metadata"].update(start=f"2026-02-01T10:00:{second:02d}.000Z", **meta)
    return events, record


def _write(directory: Path) -> None:
    # conv-a's runs are written out of order, and across two files; conv-b names its id as a session id
    write(
        directory,
        [
            _run(3, 30, conversation_id="conv-a", name="planner", cost={"total": 0.03, "currency": "USD"}),
            _run(1, 10, conversation_id="conv-a", name="planner", cost={"total": 0.01, "currency": "USD"}),
            _run(4, 5, **{"session.id": "conv-b", "name": "coder", "user_id": "u9"}),
            _run(5, 50, name="loner"),
        ],
        name="one",
    )
    write(directory, [_run(2, 20, conversation_id="conv-a", name="critic")], name="two")


def test_sessions_group_runs_in_order_with_their_totals(tmp_path: Path, ui_server: Any) -> None:
    _write(tmp_path)
    server = ui_server([tmp_path])
    server.wait_total(5)
    listed = server.json("/api/sessions")
    assert listed["total"] == 2
    a, b = listed["sessions"]  # the one active last first
    assert (a["id"], a["runs"], a["agents"]) == ("conv-a", 3, ["critic", "planner"])
    assert a["tokens_in"] == 101 + 102 + 103 and a["cost"] == {"amount": pytest.approx(0.04), "currency": "USD"}
    assert (b["id"], b["runs"], b["users"], b["cost"]) == ("conv-b", 1, ["u9"], None)
    one = server.json("/api/session?id=conv-a")
    assert [r["id"] for r in one["runs"]] == [trace_id(1), trace_id(2), trace_id(3)]  # in the order they started
    assert one["stats"]["runs"] == 3 and one["stats"]["tokens_out"] == 11 + 12 + 13
    assert server.json("/api/sessions?agent=critic")["sessions"][0]["runs"] == 1  # the list's filters apply
    assert server.get("/api/session?id=nope")[0] == 404
    assert server.json(f"/api/run/{trace_id(2)}")["session"] == {"id": "conv-a", "runs": 3}
    assert "session" not in server.json(f"/api/run/{trace_id(5)}")


SESSIONS = 230  # past two pages of 100


def _many_sessions(directory: Path) -> list[tuple[str, int]]:
    """230 sessions of one or two runs, written in id order over two files, active last in another order (two at
    each time: told apart by id); each session's id and runs, the one active last first."""
    runs, expected, n = [], [], 0
    for k in range(SESSIONS):
        sid, last = f"conv-{k:03d}", 60 + (k * 37) % (SESSIONS // 2) * 10
        for ago in range(1 + k % 2):
            n += 1
            events, record = trace(n)
            record["metadata"].update(conversation_id=sid, start=_at(last - 5 * ago))
            runs.append((events, record))
        expected.append((-last, sid, 1 + k % 2))
    write(directory, runs[: len(runs) // 2], name="one")
    write(directory, runs[len(runs) // 2 :], name="two")
    return [(sid, count) for _, sid, count in sorted(expected)]


def _at(seconds: int) -> str:
    return f"2026-02-01T{10 + seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.000Z"


def test_sessions_past_the_first_page_come_on_the_next_ones_complete_and_in_order(
    tmp_path: Path, ui_server: Any
) -> None:
    expected = _many_sessions(tmp_path)
    server = ui_server([tmp_path])
    server.wait_total(sum(count for _, count in expected))
    for limit, query in ((100, "?offset={}"), (7, "?offset={}&limit=7")):  # the default page, and a small one
        pages = [server.json("/api/sessions" + query.format(offset)) for offset in range(0, SESSIONS + limit, limit)]
        assert [(p["total"], p["offset"]) for p in pages] == [(SESSIONS, o) for o in range(0, SESSIONS + limit, limit)]
        assert [len(p["sessions"]) for p in pages[:-2]] == [limit] * (len(pages) - 2)
        assert pages[-1]["sessions"] == []  # past the last one: none
        listed = [(s["id"], s["runs"]) for p in pages for s in p["sessions"]]
        assert listed == expected  # every session once, each with all its runs, the one active last first
    tail = server.json("/api/sessions?offset=225")["sessions"]
    assert [s["id"] for s in tail] == [sid for sid, _ in expected[225:]]
    assert tail[-2]["last"] == tail[-1]["last"] == _at(60)  # two active last at the same time: told apart by id


def test_a_run_leads_to_its_session_and_the_session_to_its_runs(tmp_path: Path, ui_server: Any, page: Any) -> None:
    _write(tmp_path)
    server = ui_server([tmp_path])
    server.wait_total(5)
    page.goto(f"{server.url}#/run/{trace_id(3)}")
    link = page.locator("#session-link")
    expect(link).to_have_text("conv-a")
    expect(page.locator(".session-link")).to_contain_text("(3 runs)")
    link.click()
    rows = page.locator("#session-runs tr.run")
    expect(rows).to_have_count(3)
    assert [rows.nth(i).get_attribute("data-id") for i in range(3)] == [trace_id(1), trace_id(2), trace_id(3)]
    assert rows.nth(0).locator(".turn-question").inner_text() == "question number 1"
    expect(page.locator("#totals [data-total=runs]")).to_have_text("runs 3")
    expect(page.locator("#totals [data-total=cost]")).to_have_text("cost $0.040 (2 of the runs record one)")
    rows.nth(1).click()
    expect(page.locator("h1")).to_have_text("critic")
    page.click("#nav a[data-nav=sessions]")
    expect(page.locator("#sessions tr.session")).to_have_count(2)
    expect(page.locator("#sessions-count")).to_contain_text("2 sessions")
    page.locator("#sessions tr.session").first.click()
    expect(page.locator("h1")).to_have_text("Session conv-a")


def test_no_session_without_a_conversation_id(tmp_path: Path, ui_server: Any, page: Any) -> None:
    write(tmp_path, [trace(1), trace(2)])
    server = ui_server([tmp_path])
    server.wait_total(2)
    assert server.json("/api/sessions")["total"] == 0
    page.goto(f"{server.url}#/sessions")
    expect(page.locator("#main")).to_contain_text("No run here records a conversation or session id")
    assert "null" not in page.locator("#main").inner_text()

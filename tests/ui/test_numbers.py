"""Numbers in ``spanfold ui`` (issue 34, item 2): tokens (in / cached / out / reasoning), latency and cost on every
step and run, cost only where the trace records it (the page never prices tokens); totals and error rate over the
runs the filters keep, and a chart of runs, errors, tokens and cost over time."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
from tests.ui.traces import trace, trace_id, write

expect = pytest.importorskip("playwright.sync_api").expect


def _dollars(amount: float) -> str:
    """A cost as the page writes it: two significant digits below a dollar, cents above."""
    digits = 2 if amount >= 1 else max(2, 1 - math.floor(math.log10(amount)))
    return f"${amount:.{digits}f}"


def _ms(text: str) -> float:
    """A duration as the page writes it, in ms."""
    number, unit = re.fullmatch(r"([\d.]+) (ms|s)", text.strip()).groups()  # type: ignore[union-attr]
    return float(number) * (1000 if unit == "s" else 1)


def test_each_step_and_the_run_show_tokens_and_latency(recorded_dir: Path, ui_server: Any, page: Any) -> None:
    server = ui_server([recorded_dir])
    server.wait_total(3)
    run_id = {r["name"]: r["id"] for r in server.json("/api/runs")["runs"]}["weather-bot"]
    run = server.json(f"/api/run/{run_id}")
    steps = run["meta"]["steps"]
    page.goto(f"{server.url}#/run/{run_id}/timeline")
    rows = page.locator(".wf-row[data-step]")
    expect(rows).to_have_count(6)
    for k, step in enumerate(run["waterfall"]["steps"]):
        cells = rows.nth(k).locator(":scope > span").all_inner_texts()
        shown = 0.006 if step["duration_ms"] < 1 else 0.51  # under 1 ms to the hundredth, else to the ms
        assert _ms(cells[0]) == pytest.approx(step["duration_ms"], abs=shown)
        if step["kind"] == "model":
            usage = step["usage"]
            tokens = f"{usage['input_tokens']} in / {usage['output_tokens']} out"
            if step["cost"] is None:  # no cost recorded: none shown
                assert cells[1] == tokens and "$" not in rows.nth(k).inner_text()
            else:  # the cost the metadata records (issue 33 prices each model call)
                assert cells[1].startswith(f"{tokens} · $") and step["cost"]["currency"] == "USD"
    model_ms = sum(s["duration_ms"] for s in steps if s["kind"] == "model")
    tool_ms = sum(s["duration_ms"] for s in steps if s["kind"] == "tool")
    latency = page.locator("#run-latency").inner_text()
    found = re.fullmatch(r"in steps 3 model calls (.+) · 3 tool runs (.+)", latency)
    assert found, latency
    assert _ms(found.group(1)) == pytest.approx(model_ms, rel=0.01, abs=0.5)
    # shown as the ui shows a time: under 1 ms to the hundredth, else to the ms (1.058 ms of tool runs reads "1 ms")
    assert _ms(found.group(2)) == pytest.approx(tool_ms, abs=0.006 if tool_ms < 1 else 0.51)
    assert ("cost" in page.locator(".facts").first.inner_text()) == (run["row"]["cost"] is not None)


def _priced_run(n: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A run whose trace records cached and reasoning tokens and a cost on its model steps, and the run's cost."""
    events, meta = trace(n)
    events[1].update(usage={"input_tokens": 1200, "output_tokens": 40, "cache_read_input_tokens": 1000}, cost=0.0021)
    events[3].update(usage={"input_tokens": 1300, "output_tokens": 90, "reasoning_tokens": 64}, cost=0.0034)
    steps = [
        {"kind": "model", "start": "2026-01-01T00:00:00.000000Z", "duration_ms": 800.0, "model": "gpt-test"},
        {"kind": "tool", "start": "2026-01-01T00:00:00.900000Z", "duration_ms": 100.0, "name": "search"},
        {"kind": "model", "start": "2026-01-01T00:00:01.000000Z", "duration_ms": 600.0, "model": "gpt-test"},
    ]
    for step, event, usage in zip(steps, (1, 2, 3), (events[1]["usage"], None, events[3]["usage"]), strict=True):
        step["event"] = event
        if usage:
            step["usage"] = {"input_tokens": usage["input_tokens"], "output_tokens": usage["output_tokens"]}
    meta["metadata"].update(steps=steps, cost={"total": 0.0055, "currency": "USD"}, start="2026-01-01T00:00:00.000Z")
    return events, meta


def test_cost_and_cached_and_reasoning_tokens_are_shown_where_the_trace_has_them(
    tmp_path: Path, ui_server: Any, page: Any
) -> None:
    write(tmp_path, [_priced_run(1), trace(2)])
    server = ui_server([tmp_path])
    server.wait_total(2)
    page.goto(f"{server.url}#/run/{trace_id(1)}/timeline")
    rows = page.locator(".wf-row[data-step]")
    expect(rows).to_have_count(3)
    assert rows.nth(0).locator(":scope > span").nth(1).inner_text() == "1,200 in / 1,000 cached / 40 out · $0.0021"
    assert rows.nth(2).locator(":scope > span").nth(1).inner_text() == "1,300 in / 90 out / 64 reasoning · $0.0034"
    rows.nth(0).click()
    details = dict(
        page.locator("#step-details dl").evaluate(
            "dl => [...dl.querySelectorAll('dt')].map(dt => [dt.textContent, dt.nextElementSibling.textContent])"
        )
    )
    assert details["tokens"] == "1,200 in / 1,000 cached / 40 out" and details["cost"] == "$0.0021"
    expect(page.locator(".run-head .facts").first).to_contain_text("cost $0.0055")
    # a run whose trace records no cost shows none, anywhere
    page.goto(f"{server.url}#/run/{trace_id(2)}")
    page.wait_for_selector("#run-body .msg")
    assert "$" not in page.locator("#main").inner_text()
    # the list: a cost column (there is a cost to show), sortable; the unpriced run's cell is empty
    page.goto(server.url)
    page.wait_for_selector("#runs tr.run")
    page.click("th[data-sort=cost]")
    expect(page.locator("#runs tr.run").first.locator("td.col-cost")).to_have_text("$0.0055")
    assert page.locator(f"#runs tr[data-id='{trace_id(2)}'] td.col-cost").inner_text() == ""


def test_without_any_cost_the_list_has_no_cost_column(tmp_path: Path, ui_server: Any, page: Any) -> None:
    write(tmp_path, [trace(1), trace(2)])
    server = ui_server([tmp_path])
    server.wait_total(2)
    page.goto(server.url)
    page.wait_for_selector("#runs tr.run")
    assert page.locator("th[data-sort=cost]").count() == 0 and page.locator("[data-total=cost]").count() == 0


def _many() -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
    runs = []
    for n in range(1, 41):
        events, meta = trace(n, tool="fetch" if n % 2 else "search", error=n % 5 == 0)
        if n % 4 == 0:
            meta["metadata"]["cost"] = {"total": n / 1000, "currency": "USD"}
        if n % 10 == 0:
            meta["metadata"]["status"] = "error"
        runs.append((events, meta))
    return runs


def test_totals_and_the_chart_follow_the_filters(tmp_path: Path, ui_server: Any, page: Any) -> None:
    runs = _many()
    write(tmp_path, runs)
    server = ui_server([tmp_path])
    server.wait_total(40)

    def expected(keep: Any) -> dict[str, Any]:
        metas = [m["metadata"] for (ev, m) in runs if keep(ev)]
        errors = sum(1 for (ev, m) in runs if keep(ev) and any("error" in e for e in ev))
        costs = [m["cost"]["total"] for m in metas if "cost" in m]
        return {
            "runs": len(metas),
            "with_errors": errors,
            "failed": sum(m["status"] == "error" for m in metas),
            "tokens_in": sum(m["usage"]["input_tokens"] for m in metas),
            "tokens_out": sum(m["usage"]["output_tokens"] for m in metas),
            "cost": sum(costs),
            "priced": len(costs),
        }

    everything = expected(lambda ev: True)
    fetch = expected(lambda ev: ev[1]["tool_calls"][0]["function"]["name"] == "fetch")
    for query, want in (("", everything), ("?tool=fetch", fetch)):
        got = server.json(f"/api/stats{query}")
        assert {k: got[k] for k in ("runs", "with_errors", "failed", "tokens_in", "tokens_out", "priced")} == {
            k: want[k] for k in ("runs", "with_errors", "failed", "tokens_in", "tokens_out", "priced")
        }
        if want["priced"]:
            assert got["cost"]["amount"] == pytest.approx(want["cost"]) and got["cost"]["currency"] == "USD"
        else:
            assert got["cost"] is None
        assert got["error_rate"] == pytest.approx(want["with_errors"] / want["runs"])
        assert sum(b["runs"] for b in got["bins"]) == want["runs"]
        assert sum(b["with_errors"] for b in got["bins"]) == want["with_errors"]
    page.goto(server.url)
    totals = page.locator("#totals")
    expect(totals.locator("[data-total=runs]")).to_have_text("runs 40")
    rate = 100 * everything["with_errors"] / 40
    expect(totals.locator("[data-total='with errors']")).to_have_text(
        f"with errors {everything['with_errors']} ({rate:.1f}%)"
    )
    expect(totals.locator("[data-total=cost]")).to_have_text(
        f"cost {_dollars(everything['cost'])} ({everything['priced']} of the runs record one)"
    )
    bins = server.json("/api/stats")["bins"]
    assert page.locator("#chart rect.errors").count() == sum(1 for b in bins if b["with_errors"])
    assert page.locator("#chart rect.runs").count() == len(bins)
    page.select_option("#f-tool", "fetch")
    expect(totals.locator("[data-total=runs]")).to_have_text("runs 20")
    expect(totals.locator("[data-total=tokens]")).to_have_text(
        f"tokens {fetch['tokens_in']:,} in / {fetch['tokens_out']:,} out"
    )
    fetch_bins = len(server.json("/api/stats?tool=fetch")["bins"])
    expect(page.locator("#chart g.bin")).to_have_count(2 * fetch_bins)  # runs and tokens: no cost among these runs
    titles = page.locator("#chart g.bin title").all_text_contents()[:fetch_bins]
    assert sum(int(re.search(r"(\d+) runs,", t).group(1)) for t in titles) == 20  # type: ignore[union-attr]


def test_costs_in_two_currencies_are_not_added_up(tmp_path: Path, ui_server: Any, page: Any) -> None:
    usd, eur = trace(1), trace(2)
    usd[1]["metadata"]["cost"] = {"total": 0.5, "currency": "USD"}
    eur[1]["metadata"]["cost"] = {"amount": 0.25, "currency": "EUR"}
    write(tmp_path, [usd, eur])
    server = ui_server([tmp_path])
    server.wait_total(2)
    got = server.json("/api/stats")
    assert got["cost"] is None and got["currencies"] == ["EUR", "USD"] and got["priced"] == 2
    page.goto(server.url)
    expect(page.locator("[data-total=cost]")).to_have_text("cost in EUR, USD (not added up)")

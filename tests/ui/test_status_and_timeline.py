"""How each run ended, and the timeline of its steps, in ``spanfold ui`` (issue 36, items 6 and 7): traces written
by ``spanfold.init()`` with default settings (the Invariant file and its ``.meta.jsonl``) from the real openai SDK
over real HTTP to the mock server; the real command; a real headless browser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest

import spanfold
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec, run_agent, scenarios
from spanfold.testing.agents import PROVIDERS

expect = pytest.importorskip("playwright.sync_api").expect


@spanfold.tool
def slow_lookup(city: str) -> str:
    """A tool the user interrupts (Ctrl-C)."""
    raise KeyboardInterrupt


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, _global_provider: Any) -> Path:
    """Three runs with default settings: one that ends normally, one whose last call fails (500), one interrupted
    in a tool (Ctrl-C)."""
    out = tmp_path_factory.mktemp("status") / "traces"
    spanfold.init(output=str(out))
    try:
        with MockLLMServer(scenarios.weather_agent) as server:
            client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
            with spanfold.agent("weather-bot"):
                run_agent("openai", client)
            server.script(Reply.error(500, "upstream exploded", should_retry=False))
            with pytest.raises(openai.InternalServerError), spanfold.agent("failing-bot"):
                client.chat.completions.create(
                    model=PROVIDERS["openai"].model, messages=[{"role": "user", "content": "hi"}]
                )
            server.script(Reply.tools([ToolCallSpec("slow_lookup", {"city": "Paris"})]))
            with pytest.raises(KeyboardInterrupt), spanfold.agent("interrupted-bot"):
                messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
                message = (
                    client.chat.completions.create(model=PROVIDERS["openai"].model, messages=messages)
                    .choices[0]
                    .message
                )
                for call in message.tool_calls or []:
                    slow_lookup(**json.loads(call.function.arguments), tool_call_id=call.id)
        assert spanfold.flush(timeout=30)
    finally:
        spanfold.shutdown()
    return out


def _ids(server: Any) -> dict[str, str]:
    return {r["name"]: r["id"] for r in server.json("/api/runs")["runs"]}


def test_the_api_says_how_each_run_ended_and_lists_its_steps(runs: Path, ui_server: Any) -> None:
    server = ui_server([runs])
    server.wait_total(3)
    rows = {r["name"]: r for r in server.json("/api/runs")["runs"]}
    assert {name: r["status"] for name, r in rows.items()} == {
        "weather-bot": "complete",
        "failing-bot": "error",
        "interrupted-bot": "error",
    }
    assert server.json("/api/runs?status=error")["total"] == 2
    interrupted = server.json(f"/api/run/{rows['interrupted-bot']['id']}")["meta"]
    assert interrupted["error"] == {"type": "KeyboardInterrupt"}
    weather = server.json(f"/api/run/{rows['weather-bot']['id']}")
    models = [s for s in weather["meta"]["steps"] if s["kind"] == "model"]
    assert [s["model"] for s in models] == [PROVIDERS["openai"].model] * 3 and all(s["duration_ms"] > 0 for s in models)


def test_the_page_shows_failed_runs_in_red_and_a_timeline_of_steps(runs: Path, ui_server: Any, page: Any) -> None:
    server = ui_server([runs])
    server.wait_total(3)
    ids = _ids(server)
    page.goto(server.url)
    page.wait_for_selector("#runs tr.run")
    failed = page.locator(f"#runs tr[data-id='{ids['interrupted-bot']}'] td.status-error")
    expect(failed).to_have_text("error")
    red = page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--err').trim()")
    assert red == "#b42318"
    assert failed.evaluate("e => getComputedStyle(e).color") == "rgb(180, 35, 24)"  # not green
    ok = page.locator(f"#runs tr[data-id='{ids['weather-bot']}'] td.status-complete")
    assert ok.evaluate("e => getComputedStyle(e).color") == "rgb(8, 116, 67)"
    page.goto(f"{server.url}#/run/{ids['interrupted-bot']}")
    expect(page.locator("#run-status")).to_contain_text("error (KeyboardInterrupt)")
    # the timeline of a default-settings trace: its model calls, from the metadata; no message drawn as a step
    page.goto(f"{server.url}#/run/{ids['weather-bot']}/timeline")
    page.wait_for_selector(".timeline")
    assert "records no step times" not in page.locator(".timeline").inner_text()
    expect(page.locator(".bar-row.step-model")).to_have_count(3)
    expect(page.locator(".bar-row.step-model a[href*='/conversation/']")).to_have_count(3)  # each to its answer
    labels = page.locator(".bar-row").all_inner_texts()
    assert not any(label.startswith(("system", "user")) for label in labels), labels
    widths = page.locator(".bar-row .bar").evaluate_all("bars => bars.map(b => b.getBoundingClientRect().width)")
    assert all(w > 0 for w in widths)
    page.goto(f"{server.url}#/run/{ids['failing-bot']}/timeline")
    expect(page.locator(".bar-row.step-model .bar.error")).to_have_count(1)
    expect(page.locator(".timeline")).to_contain_text("openai.InternalServerError")


def test_the_list_holds_no_steps_and_a_run_reads_them_again(runs: Path) -> None:
    """A row keeps what the list shows (100,000 rows stay small); opening a run reads its metadata record whole."""
    from spanfold.ui.index import Index

    index = Index([runs])
    index.refresh()
    rows = index.snapshot()[1]
    assert len(rows) == 3 and all(row.meta.steps == [] for row in rows)
    weather = next(row for row in rows if row.meta.name == "weather-bot")
    trace = index.trace(weather)[1]
    assert trace is not None and [s.kind for s in trace.meta.steps].count("model") == 3

"""Compare in ``spanfold ui`` (issue 34, item 6): besides the tool trajectories, the first message where two runs
differ, what a call's output and the answer became (diffs made of text nodes), and the deltas of tokens, latency and
cost. Two runs of the weather agent written by ``spanfold.init()`` with default settings (the real openai SDK over
real HTTP to the mock server), the second converting Tokyo's temperature instead of Paris's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.ui import agents

import spanfold
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec

expect = pytest.importorskip("playwright.sync_api").expect

TOKYO = "In Tokyo it is 24°C and cloudy, in Paris 18°C and sunny; 24°C is 75.2°F, a warm day."


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory, _global_provider: Any) -> Path:
    out = tmp_path_factory.mktemp("compare") / "traces"
    spanfold.init(output=str(out))
    try:
        with MockLLMServer() as server:
            agents.weather(server, "paris-bot")
            server.script(
                agents.WEATHER_REPLIES[0],
                Reply.tools([ToolCallSpec("convert_temperature", {"celsius": 24})]),
                Reply.text(TOKYO),
            )
            with spanfold.agent("tokyo-bot"):
                agents.run(agents.client(server))
        assert spanfold.flush(timeout=30)
    finally:
        spanfold.shutdown()
    return out


def _ids(server: Any) -> tuple[str, str]:
    ids = {r["name"]: r["id"] for r in server.json("/api/runs")["runs"]}
    return ids["paris-bot"], ids["tokyo-bot"]


def test_the_api_says_where_and_how_two_runs_differ(two_runs: Path, ui_server: Any) -> None:
    server = ui_server([two_runs])
    server.wait_total(2)
    a, b = _ids(server)
    got = server.json(f"/api/compare?a={a}&b={b}")
    assert got["divergence"] == 2  # the third call: convert_temperature(18) against (24)
    first = got["message"]
    assert first["index"] == 3  # system, user, the two get_weather calls, then the convert call
    assert first["a"]["calls"] == [{"name": "convert_temperature", "args": {"celsius": 18}}]
    assert first["b"]["calls"] == [{"name": "convert_temperature", "args": {"celsius": 24}}]
    (output,) = got["outputs"]
    assert output["call"] == 2 and output["name"] == "convert_temperature"
    assert [p["op"] for p in output["parts"]] == ["delete", "insert"]
    assert "64.4" in output["parts"][0]["text"] and "75.2" in output["parts"][1]["text"]
    answer = {p["op"]: p["text"] for p in got["answer"]["parts"]}
    assert answer["delete"] == agents.ANSWER and answer["insert"] == TOKYO
    na, nb = got["a"]["numbers"], got["b"]["numbers"]
    assert got["deltas"]["tokens_out"] == nb["tokens_out"] - na["tokens_out"] > 0  # a longer answer
    assert got["deltas"]["model_ms"] == pytest.approx(nb["model_ms"] - na["model_ms"])
    assert na["model_ms"] > 0 and na["tool_ms"] > 0
    if na["cost"] and nb["cost"]:  # the cost the metadata records (issue 33 prices each model call)
        assert got["deltas"]["cost"]["amount"] == pytest.approx(nb["cost"]["amount"] - na["cost"]["amount"])
    else:
        assert got["deltas"]["cost"] is None
    same = server.json(f"/api/compare?a={a}&b={a}")
    assert same["divergence"] is None and same["message"] is None and same["outputs"] == [] and same["answer"] is None
    assert same["deltas"]["tokens_in"] == 0


def test_the_page_explains_the_difference(two_runs: Path, ui_server: Any, page: Any) -> None:
    server = ui_server([two_runs])
    server.wait_total(2)
    a, b = _ids(server)
    page.goto(server.url)
    page.locator(f"#runs tr[data-id='{a}'] input.pick").click()
    page.locator(f"#runs tr[data-id='{b}'] input.pick").click()
    page.click("#compare")
    expect(page.locator("#divergence")).to_have_text("The trajectories part at call 3.")
    first = page.locator("#first-difference")
    expect(first.locator("h3")).to_have_text("The first message that differs: message 4")
    assert '"celsius": 18' in first.locator(".message-side").nth(0).inner_text()
    assert '"celsius": 24' in first.locator(".message-side").nth(1).inner_text()
    diff = page.locator(".output-diff[data-call='2'] pre.diff")
    assert "64.4" in diff.locator("del").inner_text() and "75.2" in diff.locator("ins").inner_text()
    assert page.locator("#answer del").inner_text() == agents.ANSWER
    assert page.locator("#answer ins").inner_text() == TOKYO
    got = server.json(f"/api/compare?a={a}&b={b}")
    delta = got["deltas"]["tokens_out"]
    expect(page.locator("#deltas tr[data-metric=tokens_out] td.delta")).to_have_text(f"+{delta}")
    priced = bool(got["a"]["numbers"]["cost"] or got["b"]["numbers"]["cost"])
    assert page.locator("#deltas tr[data-metric=cost]").count() == priced  # a cost row when a run records one
    assert page.locator("#runs-compared, li.diverge").count() == 2


def test_a_diff_is_text_never_markup(tmp_path: Path, ui_server: Any, page: Any) -> None:
    from tests.ui.traces import XSS_IMG, XSS_SCRIPT, trace, trace_id, write

    a, b = trace(1), trace(2)
    a[0][3]["content"] = f"fine {XSS_SCRIPT}"
    b[0][3]["content"] = f"fine {XSS_IMG}"
    write(tmp_path, [a, b])
    server = ui_server([tmp_path])
    server.wait_total(2)
    page.goto(f"{server.url}#/compare/{trace_id(1)}/{trace_id(2)}")
    expect(page.locator("#answer del")).to_have_text(f"fine {XSS_SCRIPT}")
    expect(page.locator("#answer ins")).to_have_text(f"fine {XSS_IMG}")
    assert page.evaluate("document.querySelectorAll('#main img, #main script').length") == 0
    assert page.evaluate("window.__xss") is None

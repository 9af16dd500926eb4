"""``spanfold ui``, round 3 (issue 51), what a model call was asked with and where it went: a model step's request
parameters (temperature, max_tokens, top_p ... as its span states them: the fold keeps them in the metadata step's
``params``) in the step's details; the providers a run's calls went to (the metadata's ``providers``) as a list column
and a filter kept in the URL, and in the run's header. Real runs: the openai and anthropic SDKs over real HTTP to the
mock server, ``spanfold.init()`` in a process of its own writing the directory; the real command, a real browser."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

expect = pytest.importorskip("playwright.sync_api").expect

#: Two runs: a chat completion with five request parameters (openai), a message with only max_tokens (anthropic).
RECORD = """
import sys, anthropic, openai, spanfold
from spanfold.testing import MockLLMServer, Reply
spanfold.init(output=sys.argv[1])
with MockLLMServer() as server:
    server.script(Reply.text("Bonjour."), Reply.text("Hello back."))
    oa = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    with spanfold.agent("openai-bot"):
        oa.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Say hello in French"}],
            temperature=0.2, max_tokens=64, top_p=0.9, stop=["END"], seed=7,
        )
    claude = anthropic.Anthropic(api_key="sk-test", base_url=server.anthropic_base_url, max_retries=0)
    with spanfold.agent("claude-bot"):
        claude.messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=[{"role": "user", "content": "Hi"}])
assert spanfold.flush(timeout=30)
spanfold.shutdown()
"""


@pytest.fixture(scope="module")
def calls_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("calls") / "traces"
    subprocess.run([sys.executable, "-c", RECORD, str(out)], check=True, capture_output=True, timeout=120)
    return out


def _ids(directory: Path) -> dict[str, str]:
    """Each run's trace id by its agent's name, as the metadata line records it."""
    metas = [json.loads(line)["metadata"] for line in (directory / "traces.meta.jsonl").read_text().splitlines()]
    return {m["name"]: m["trace_id"] for m in metas}


def test_a_model_steps_request_parameters_are_kept_and_shown_in_its_details(
    calls_dir: Path, ui_server: Any, page: Any
) -> None:
    metas = {
        m["name"]: m
        for m in (json.loads(line)["metadata"] for line in (calls_dir / "traces.meta.jsonl").read_text().splitlines())
    }
    # the fold kept what each span states, and only that
    assert metas["openai-bot"]["steps"][0]["params"] == {
        "temperature": 0.2,
        "max_tokens": 64,
        "top_p": 0.9,
        "stop_sequences": ["END"],
        "seed": 7,
    }
    assert metas["claude-bot"]["steps"][0]["params"] == {"max_tokens": 100}
    server = ui_server([calls_dir])
    server.wait_total(2)
    ids = _ids(calls_dir)
    assert server.json(f"/api/run/{ids['openai-bot']}")["waterfall"]["steps"][0]["params"]["temperature"] == 0.2
    page.goto(f"{server.url}#/run/{ids['openai-bot']}/timeline/s1")
    details = page.locator("#step-details")
    expect(details.locator("dd[data-param=temperature]")).to_have_text("0.2")
    expect(details.locator("dd[data-param=max_tokens]")).to_have_text("64")
    expect(details.locator("dd[data-param=top_p]")).to_have_text("0.9")
    expect(details.locator("dd[data-param=seed]")).to_have_text("7")
    expect(details.locator("dd[data-param=stop_sequences]")).to_have_text('["END"]')
    expect(details.locator("dt.param")).to_have_text(["temperature", "max_tokens", "top_p", "stop_sequences", "seed"])
    page.goto(f"{server.url}#/run/{ids['claude-bot']}/timeline/s1")
    expect(details.locator("dt.param")).to_have_text(["max_tokens"])  # what the call was sent, nothing made up
    expect(details.locator("dd[data-param=max_tokens]")).to_have_text("100")


def test_the_providers_are_a_column_a_filter_kept_in_the_url_and_in_the_run_header(
    calls_dir: Path, ui_server: Any, page: Any
) -> None:
    server = ui_server([calls_dir])
    server.wait_total(2)
    ids = _ids(calls_dir)
    assert server.json("/api/runs")["facets"]["providers"] == ["anthropic", "openai"]
    assert [r["name"] for r in server.json("/api/runs?provider=anthropic")["runs"]] == ["claude-bot"]
    page.goto(server.url)
    expect(page.locator(f"#runs tr[data-id='{ids['openai-bot']}'] td.col-providers")).to_have_text("openai")
    expect(page.locator(f"#runs tr[data-id='{ids['claude-bot']}'] td.col-providers")).to_have_text("anthropic")
    page.select_option("#f-provider", "anthropic")
    expect(page.locator("#runs tr.run")).to_have_count(1)
    expect(page.locator("#runs tr.run")).to_have_attribute("data-id", ids["claude-bot"])
    expect(page).to_have_url(re.compile("provider=anthropic"))
    page.reload()  # a shared or reloaded link keeps the filter
    expect(page.locator("#f-provider")).to_have_value("anthropic")
    expect(page.locator("#count")).to_have_text("1\u20131 of 1 runs (2 in all)")
    page.locator("#runs tr.run").click()
    expect(page.locator("#run-providers")).to_have_text("provider anthropic")

"""Unknown is not zero, and "steps" means one thing (issue 46, items 5 and 8), in the metadata, ``spanfold summary``
and ``spanfold ui`` (its index, totals, sessions, and the list and run header in a real browser).

Recorded with the real openai SDK over real HTTP to the mock server: a call streamed without
``stream_options.include_usage`` and a failed call report no tokens: their runs' tokens are unknown (a dash, "unknown"),
never 0, and totals add only what was reported, saying how many model calls reported none. A run's steps are the
entries of its metadata's ``steps`` (model calls and tool runs): the weather run's 3 calls and 3 tool runs are 6
steps, a run of one model call is 1 step (the list said "steps 0" beside a failed call, and 3 for the weather run)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from spanfold.ui.index import Index
from spanfold.ui.sessions import group
from spanfold.ui.stats import stats

MESSAGES = [{"role": "user", "content": "hi"}]
UNKNOWN = "\u2013"  # how the ui writes a count that is not known (an en dash)


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory: pytest.TempPathFactory, _global_provider: Any) -> Path:
    """``streamed`` (one call streamed without include_usage), ``failing`` (one call failing with a 500), ``mixed``
    (a streamed call asking for a tool, the tool, a plain call: one of two calls reports tokens), ``weather`` (3 calls,
    3 tool runs, all reporting tokens); all in conversation ``chat-1``, ``streamed`` and ``failing`` alone in
    ``chat-2``."""
    import openai
    from tests.ui import agents

    import spanfold
    from spanfold.testing import MockLLMServer, Reply, ToolCallSpec

    out = tmp_path_factory.mktemp("unknown") / "traces"
    spanfold.init(output=str(out))
    try:
        with MockLLMServer() as server:
            client = agents.client(server)
            server.script(Reply.text("Streamed answer."))
            with spanfold.agent("streamed", conversation_id="chat-2"):
                chunks = client.chat.completions.create(model=agents.MODEL, messages=MESSAGES, stream=True)
                assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Streamed answer."
            server.script(Reply.error(500, "upstream exploded", should_retry=False))
            with pytest.raises(openai.InternalServerError), spanfold.agent("failing", conversation_id="chat-2"):
                client.chat.completions.create(model=agents.MODEL, messages=MESSAGES)
            server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]), Reply.text("18°C."))
            with spanfold.agent("mixed", conversation_id="chat-1"):
                asked = client.chat.completions.create(model=agents.MODEL, messages=MESSAGES, stream=True)
                call = next(c for chunk in list(asked) for c in (chunk.choices[0].delta.tool_calls or []))
                result = agents.get_weather(city="Paris", tool_call_id=call.id)
                history = [*MESSAGES, {"role": "assistant", "tool_calls": [{"id": call.id, "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
                    {"role": "tool", "tool_call_id": call.id, "content": result}]  # fmt: skip
                client.chat.completions.create(model=agents.MODEL, messages=history)
            server.script(*agents.WEATHER_REPLIES)
            with spanfold.agent("weather", conversation_id="chat-1"):
                agents.run(client)
        assert spanfold.flush(timeout=30)
    finally:
        spanfold.shutdown()
    return out


def _metas(directory: Path) -> dict[str, dict[str, Any]]:
    lines = (directory / "traces.meta.jsonl").read_text().splitlines()
    return {m["name"]: m for m in (json.loads(line)["metadata"] for line in lines)}


def _rows(directory: Path) -> dict[str, Any]:
    index = Index([directory])
    index.refresh()
    _, rows = index.snapshot()
    return {row.meta.name: row for row in rows}


def test_the_metadata_says_unknown_and_how_many_calls_lack_tokens(runs_dir: Path) -> None:
    metas = _metas(runs_dir)
    # no model call reported tokens: no totals (never 0), and how many lack them
    assert metas["streamed"]["usage"] == {"unreported_steps": 1}
    assert metas["failing"]["usage"] == {"unreported_steps": 1}
    mixed = metas["mixed"]
    reported = [s["usage"] for s in mixed["steps"] if s["kind"] == "model" and "usage" in s]
    assert len(reported) == 1 and mixed["usage"] == {**reported[0], "unreported_steps": 1}
    weather = metas["weather"]
    assert "unreported_steps" not in weather["usage"] and weather["usage"]["input_tokens"] > 0
    # the metadata's steps: model calls and tool runs
    assert [s["kind"] for s in mixed["steps"]] == ["model", "tool", "model"]
    assert [s["kind"] for s in weather["steps"]].count("tool") == 3 and len(weather["steps"]) == 6


def test_the_ui_index_shows_unknown_tokens_and_the_metadata_s_steps(runs_dir: Path) -> None:
    rows = _rows(runs_dir)
    metas = _metas(runs_dir)
    shown = {name: row.to_json() for name, row in rows.items()}
    for name in ("streamed", "failing"):
        assert shown[name]["tokens_in"] is None and shown[name]["tokens_out"] is None
        assert shown[name]["tokens_unreported"] == 1
    assert shown["mixed"]["tokens_in"] == metas["mixed"]["usage"]["input_tokens"]
    assert shown["mixed"]["tokens_unreported"] == 1
    for name, meta in metas.items():  # one definition of steps: the metadata's
        assert shown[name]["steps"] == len(meta["steps"]), name
    assert [shown[n]["steps"] for n in ("streamed", "failing", "mixed", "weather")] == [1, 1, 3, 6]


def test_totals_and_sessions_add_only_known_tokens_and_count_the_rest(runs_dir: Path) -> None:
    rows = _rows(runs_dir)
    metas = _metas(runs_dir)
    known = [m["usage"] for m in metas.values() if "input_tokens" in m["usage"]]
    totals = stats(list(rows.values()))
    assert totals["tokens_in"] == sum(u["input_tokens"] for u in known)
    assert totals["tokens_out"] == sum(u["output_tokens"] for u in known)
    assert totals["tokens_unreported"] == 3
    only_unknown = stats([rows["streamed"], rows["failing"]])
    assert only_unknown["tokens_in"] is None and only_unknown["tokens_unreported"] == 2
    sessions = {sid: s.to_json() for sid, s in group(list(rows.values())).items()}
    assert sessions["chat-2"]["tokens_in"] is None and sessions["chat-2"]["tokens_unreported"] == 2
    chat1 = sessions["chat-1"]
    assert chat1["tokens_in"] == metas["mixed"]["usage"]["input_tokens"] + metas["weather"]["usage"]["input_tokens"]
    assert chat1["tokens_unreported"] == 1


def test_summary_says_unknown_and_counts_steps_as_the_metadata_does(runs_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spanfold", "summary", "--json", str(runs_dir / "traces.jsonl")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    metas = list(_metas(runs_dir).values())
    assert [r["usage"] for r in rows] == [m["usage"] for m in metas]
    assert [r["steps"] for r in rows] == [len(m["steps"]) for m in metas]
    table = subprocess.run(
        [sys.executable, "-m", "spanfold", "summary", str(runs_dir / "traces.jsonl")],
        capture_output=True, text=True, check=True, env={"COLUMNS": "200", "PATH": ""},
    ).stdout  # fmt: skip
    assert "3 model calls without token counts" in table.splitlines()[-1]
    mixed = metas[2]["usage"]
    assert f"{mixed['input_tokens']}/{mixed['output_tokens']}+" in table


def test_show_and_the_agentv_cli_document_say_unknown(runs_dir: Path) -> None:
    """``spanfold show``'s header says "tokens unknown", or how many calls reported none beside the totals; the
    AgentV CLI document leaves ``token_usage`` out when unknown (0 before)."""
    shown = subprocess.run(
        [sys.executable, "-m", "spanfold", "show", str(runs_dir / "traces.jsonl")],
        capture_output=True, text=True, check=True, env={"COLUMNS": "200", "PATH": "", "NO_COLOR": "1"},
    ).stdout  # fmt: skip
    lines = shown.splitlines()
    headers = [lines[i + 1] for i, line in enumerate(lines) if line.endswith(("(streamed)", "(mixed)"))]
    assert len(headers) == 2 and "tokens unknown (1 model call reported none)" in headers[0]
    mixed = _metas(runs_dir)["mixed"]["usage"]
    partial = f"{mixed['input_tokens']} in / {mixed['output_tokens']} out tokens (1 model call reported none)"
    assert partial in headers[1]
    converted = subprocess.run(
        [sys.executable, "-m", "spanfold", "convert", "--to", "agentv-cli", str(runs_dir / "traces.jsonl")],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    documents = {d["metadata"]["name"]: d for d in map(json.loads, converted.splitlines())}
    assert "token_usage" not in documents["streamed"] and "token_usage" not in documents["failing"]
    assert documents["weather"]["token_usage"]["input"] > 0


def test_the_list_and_the_run_header_show_unknown_and_steps(runs_dir: Path, ui_server: Any, page: Any) -> None:
    server = ui_server([runs_dir])
    server.wait_total(4)
    ids = {r["name"]: r["id"] for r in server.json("/api/runs")["runs"]}
    page.goto(server.url)
    page.wait_for_selector("#runs tr.run")
    for name, tokens, steps in (("streamed", UNKNOWN, "1"), ("failing", UNKNOWN, "1"), ("weather", None, "6")):
        row = page.locator(f"#runs tr[data-id='{ids[name]}']")
        assert row.locator("td.col-steps").inner_text() == steps
        if tokens is not None:
            assert row.locator("td.col-tokens_in").inner_text() == tokens
            assert row.locator("td.col-tokens_out").inner_text() == tokens
    assert page.locator(f"#runs tr[data-id='{ids['mixed']}'] td.col-tokens_in").inner_text().endswith("+")
    totals = page.locator("[data-total=tokens]").inner_text()
    assert totals.endswith("(+ 3 model calls reported no tokens)"), totals
    page.goto(f"{server.url}#/run/{ids['failing']}")
    page.wait_for_selector("#run-tokens")
    assert page.locator("#run-tokens").inner_text() == "tokens unknown (1 model call reported no tokens)"
    assert page.locator("#run-steps").inner_text() == "steps 1"
    page.goto(f"{server.url}#/run/{ids['weather']}")
    page.locator("#run-steps", has_text="steps 6").wait_for()  # the weather run's, not the last run's
    assert "0 in" not in page.locator(".run-head").inner_text()

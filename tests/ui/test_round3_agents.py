"""``spanfold ui``, round 3 (issue 51): the agents a run ran below its own as rows of its waterfall, with what ran
under them nested: a handoff (the OpenAI Agents SDK's triage agent handing the question to its weather agent: two
agents side by side in the turn) and a sub-agent (the weather agent called as a tool of a boss agent: nested in it).
The fold writes them in the metadata's ``agents`` and each step's ``parent``; the steps, and so the run's step count,
stay its model calls and tool runs. A real run: the Agents SDK over the Responses API of the mock server,
``spanfold.init()`` in a process of its own; the real command, a real browser."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

expect = pytest.importorskip("playwright.sync_api").expect
pytest.importorskip("agents", reason="the OpenAI Agents SDK is not installed (pip install openai-agents)")

RECORD = """
import os, sys, openai, spanfold
os.environ.pop("OPENAI_API_KEY", None)  # the SDK's own exporter skips its upload: offline
spanfold.init(output=sys.argv[1])
from agents import Agent, OpenAIResponsesModel, Runner, function_tool
from spanfold.testing import MockLLMServer, MockRequest, Reply, ToolCallSpec, scenarios

@function_tool
def get_weather(city: str) -> str:
    '''Get the current weather in a city.'''
    return scenarios.get_weather(city)

@function_tool
def convert_temperature(celsius: float, to: str) -> str:
    '''Convert a temperature in degrees Celsius to another unit.'''
    return scenarios.convert_temperature(celsius, to)

def answer(request: MockRequest) -> Reply:
    tools = [t.get("name") for t in request.body.get("tools", [])]
    if "transfer_to_weather_agent" in tools:
        return Reply.tools([ToolCallSpec("transfer_to_weather_agent", {})])
    if "ask_weather" in tools:
        inputs = request.body.get("input", [])
        if any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in inputs):
            return Reply.text("Paris is sunny.")
        return Reply.tools([ToolCallSpec("ask_weather", {"input": "Weather in Paris?"})])
    return scenarios.weather_agent(request)

with MockLLMServer(answer) as server:
    client = openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    model = OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
    weather = Agent(name="Weather agent", instructions="You are a weather assistant.",
                    tools=[get_weather, convert_temperature], model=model)
    triage = Agent(name="Triage agent", instructions="You route questions.", handoffs=[weather], model=model)
    Runner.run_sync(triage, "Weather in Paris and Tokyo, and Paris in Fahrenheit?")
    ask = weather.as_tool(tool_name="ask_weather", tool_description="Ask the weather agent")
    boss = Agent(name="Boss agent", instructions="Ask the weather agent.", tools=[ask], model=model)
    Runner.run_sync(boss, "Weather in Paris?")
assert spanfold.flush(timeout=30)
spanfold.shutdown()
"""


@pytest.fixture(scope="module")
def agents_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("agents") / "traces"
    subprocess.run([sys.executable, "-c", RECORD, str(out)], check=True, capture_output=True, timeout=180)
    return out


def _metas(directory: Path) -> dict[str, dict[str, Any]]:
    lines = (directory / "traces.meta.jsonl").read_text().splitlines()
    return {m["name"]: m for m in (json.loads(line)["metadata"] for line in lines)}


def test_the_fold_writes_the_agents_below_the_run_and_each_steps_parent(agents_dir: Path) -> None:
    metas = _metas(agents_dir)
    handoff, nested = metas["Triage agent"], metas["Boss agent"]
    # a handoff: both agents in the turn (the run's root), neither under the other
    triage, weather = handoff["agents"]
    assert (triage["name"], weather["name"]) == ("Triage agent", "Weather agent")
    assert "parent" not in triage and "parent" not in weather and triage["span_id"] != handoff["root_span_id"]
    assert triage["start"] < weather["start"] and weather["duration_ms"] > 0
    kinds = [(s["kind"], s.get("model") or s.get("name"), s.get("parent")) for s in handoff["steps"]]
    assert kinds == [
        ("model", "gpt-4o-mini", triage["span_id"]),
        ("tool", "transfer_to_weather_agent", triage["span_id"]),
        ("model", "gpt-4o-mini", weather["span_id"]),
        ("tool", "get_weather", weather["span_id"]),
        ("tool", "get_weather", weather["span_id"]),
        ("model", "gpt-4o-mini", weather["span_id"]),
        ("tool", "convert_temperature", weather["span_id"]),
        ("model", "gpt-4o-mini", weather["span_id"]),
    ]  # the steps as they were: model calls and tool runs only, an agent is none
    # a sub-agent: the weather agent, called as the boss's tool, under the boss
    boss, sub = nested["agents"]
    assert (boss["name"], sub["name"], sub["parent"]) == ("Boss agent", "Weather agent", boss["span_id"])
    assert [s.get("parent") for s in nested["steps"]].count(sub["span_id"]) == 6
    assert [s.get("parent") for s in nested["steps"]].count(boss["span_id"]) == 3
    # the summaries count the run's steps as before
    out = subprocess.run(
        [sys.executable, "-m", "spanfold", "summary", str(agents_dir / "traces.jsonl"), "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert sorted(json.loads(line)["steps"] for line in out.splitlines()) == [8, 9]


def test_agents_are_waterfall_rows_with_their_steps_nested(agents_dir: Path, ui_server: Any, page: Any) -> None:
    metas = _metas(agents_dir)
    server = ui_server([agents_dir])
    server.wait_total(2)
    handoff = metas["Triage agent"]["trace_id"]
    drawn = [(s["kind"], s["label"], s["depth"]) for s in server.json(f"/api/run/{handoff}")["waterfall"]["steps"]]
    assert drawn == [
        ("agent", "Triage agent", 0),
        ("model", "gpt-4o-mini", 1),
        ("tool", "transfer_to_weather_agent", 2),  # under the call that asked for it, in its agent
        ("agent", "Weather agent", 0),
        ("model", "gpt-4o-mini", 1),
        ("tool", "get_weather", 2),
        ("tool", "get_weather", 2),
        ("model", "gpt-4o-mini", 1),
        ("tool", "convert_temperature", 2),
        ("model", "gpt-4o-mini", 1),
    ]
    page.goto(f"{server.url}#/run/{handoff}/timeline")
    rows = page.locator(".wf-row.step-agent .wf-label")
    expect(rows).to_have_text(["agent Triage agent", "agent Weather agent"])
    expect(page.locator("#run-steps")).to_have_text("steps 8")  # the agents are rows, not steps
    page.locator(".wf-row.step-agent").nth(1).click()
    expect(page.locator("#step-details dd").nth(1)).to_have_text("Weather agent")
    expect(page.locator("#step-details")).to_contain_text("model gpt-4o-mini, model gpt-4o-mini, model gpt-4o-mini")
    # the sub-agent: under the boss, its own steps under it
    nested = metas["Boss agent"]["trace_id"]
    page.goto(f"{server.url}#/run/{nested}/timeline")
    labels = page.locator(".wf-row .wf-label")
    expect(labels.nth(1)).to_have_text("agent Boss agent")
    sub = page.locator(".wf-row.step-agent").nth(1)
    expect(sub.locator(".wf-label")).to_have_text("└ agent Weather agent")
    drawn = [(s["kind"], s["depth"]) for s in server.json(f"/api/run/{nested}")["waterfall"]["steps"]]
    assert drawn[:4] == [("agent", 0), ("model", 1), ("tool", 2), ("agent", 1)]
    assert drawn[4:] == [("model", 2), ("tool", 3), ("tool", 3), ("model", 2), ("tool", 3), ("model", 2), ("model", 1)]

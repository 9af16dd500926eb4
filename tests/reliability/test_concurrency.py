"""Concurrency: 1,000 concurrent asyncio agent runs and 8 threads of runs at the same time, each run its own
``spanfold.agent`` (two model calls around one ``@spanfold.tool`` call): exactly one trace per run, the exact events,
and nothing from another run in it. Then the same runs without any agent span (zero-code stitching of un-parented
calls), with distinct and with identical conversation starts.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import threading
from collections.abc import Iterator
from typing import Any

import httpx2
import openai
import pytest

import spanfold
from spanfold import counters, setup
from spanfold.testing import Reply, ToolCallSpec
from spanfold.testing.request import MockRequest
from spanfold.testing.server import RENDERERS
from spanfold.testing.wire.base import RenderContext
from spanfold.trace.model import Trace

from .conftest import OPENAI_KEY, SLOW

ASYNC_RUNS = 1000
THREADS = 8
RUNS_PER_THREAD = 25
#: (asyncio runs, runs per thread): the issue's headline scale, and a smaller one for the variants in the default suite
#: (the variants run at full scale with SPANFOLD_SLOW=1; the SDKs' own request handling is most of the time).
FULL = (ASYNC_RUNS, RUNS_PER_THREAD)
SMALL = (200, 5)
SCALES = [pytest.param(SMALL, id="small"), pytest.param(FULL, id="full", marks=SLOW)]
SYSTEM = "You are a weather bot."
_RUN = re.compile(r"run ([\w-]+)\?")


def _run_of(request: httpx2.Request, body: dict[str, Any]) -> tuple[str, bool]:
    """(the run's key, whether the tool result is already in the history): from the tool result, else the user's
    message, else (identical starts) the ``x-run`` header the run sends."""
    messages = body["messages"]
    tool_msg = next((m for m in messages if m["role"] == "tool"), None)
    user = next(m for m in messages if m["role"] == "user")["content"]
    if tool_msg is not None:
        return tool_msg["content"].removeprefix("sunny in "), True
    found = _RUN.search(user)
    return (found.group(1) if found else request.headers["x-run"]), False


def _reply(request: httpx2.Request, ids: dict[str, int], lock: threading.Lock, city: str | None) -> httpx2.Response:
    body = json.loads(request.content)
    run, answered = _run_of(request, body)
    if answered:
        reply = Reply.text(f"It is sunny in {run}.")
    else:
        with lock:  # the server's own call ids: unique, like the provider's
            ids["n"] += 1
            call_id = f"call_{ids['n']}"
        reply = Reply.tools([ToolCallSpec("get_weather", {"city": city or run}, id=call_id)])
    ctx = RenderContext(MockRequest("chat", "/v1/chat/completions", body))
    return httpx2.Response(200, json=RENDERERS["chat"].body(reply, ctx))


class Server:
    """An in-process chat completions endpoint (sync and async handlers) that yields to other runs mid-request."""

    def __init__(self, city: str | None = None) -> None:
        self.ids = {"n": 0}
        self.lock = threading.Lock()
        self.city = city  # the city every tool call asks for (default: the run's own)

    def sync(self, request: httpx2.Request) -> httpx2.Response:
        return _reply(request, self.ids, self.lock, self.city)

    async def async_(self, request: httpx2.Request) -> httpx2.Response:
        await asyncio.sleep(random.random() / 1000)
        return _reply(request, self.ids, self.lock, self.city)


@spanfold.tool
def get_weather(city: str) -> str:
    return f"sunny in {city}"


@spanfold.tool(name="get_weather")
async def aget_weather(city: str) -> str:
    await asyncio.sleep(0)
    return f"sunny in {city}"


def _first_messages(run: str, identical_start: bool) -> list[dict[str, Any]]:
    user = "What's the weather where I am?" if identical_start else f"Weather for run {run}?"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _history(run: str, identical_start: bool, call: Any) -> list[dict[str, Any]]:
    return [
        *_first_messages(run, identical_start),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": call.function.arguments},
                }
            ],
        },
    ]


async def async_run(client: Any, run: str, agent: bool, identical_start: bool, call_id: bool) -> None:
    async def body() -> None:
        messages = _first_messages(run, identical_start)
        first = await client.chat.completions.create(model="gpt-4o", messages=messages, extra_headers={"x-run": run})
        call = first.choices[0].message.tool_calls[0]
        city = json.loads(call.function.arguments)["city"]
        result = await (aget_weather(city, tool_call_id=call.id) if call_id else aget_weather(city))
        history = [*_history(run, identical_start, call), {"role": "tool", "tool_call_id": call.id, "content": result}]
        await client.chat.completions.create(model="gpt-4o", messages=history)

    if agent:
        async with spanfold.agent(f"agent-{run}"):
            await body()
    else:
        await body()


def sync_run(client: Any, run: str, agent: bool, identical_start: bool, call_id: bool) -> None:
    def body() -> None:
        messages = _first_messages(run, identical_start)
        first = client.chat.completions.create(model="gpt-4o", messages=messages, extra_headers={"x-run": run})
        call = first.choices[0].message.tool_calls[0]
        city = json.loads(call.function.arguments)["city"]
        result = get_weather(city, tool_call_id=call.id) if call_id else get_weather(city)
        history = [*_history(run, identical_start, call), {"role": "tool", "tool_call_id": call.id, "content": result}]
        client.chat.completions.create(model="gpt-4o", messages=history)

    if agent:
        with spanfold.agent(f"agent-{run}"):
            body()
    else:
        body()


def expected_events(run: str, identical_start: bool, call_id: str) -> list[dict[str, Any]]:
    """The flat trace of one run (the oracle, written from the run's own messages)."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": _first_messages(run, identical_start)[1]["content"]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": {"city": run}}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": f"sunny in {run}"},
        {"role": "assistant", "content": f"It is sunny in {run}."},
    ]


@pytest.fixture
def traces(_global_provider: Any) -> Iterator[list[Trace]]:
    with setup.capture_traces() as captured:
        yield captured


def _run_all(
    agent: bool, identical_start: bool, call_id: bool, scale: tuple[int, int] = FULL, city: str | None = None
) -> list[str]:
    """``scale[0]`` concurrent asyncio runs while THREADS threads do ``scale[1]`` runs each; returns the run keys."""
    async_runs, runs_per_thread = scale
    server = Server(city)
    errors: list[BaseException] = []

    def thread_main(t: int) -> None:
        client = openai.OpenAI(
            api_key=OPENAI_KEY,
            base_url="http://mock.test/v1",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(server.sync)),
        )
        try:
            for k in range(runs_per_thread):
                sync_run(client, f"t{t}-{k}", agent, identical_start, call_id)
        except BaseException as exc:
            errors.append(exc)

    async def main() -> None:
        client = openai.AsyncOpenAI(
            api_key=OPENAI_KEY,
            base_url="http://mock.test/v1",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(server.async_)),
        )
        await asyncio.gather(*(async_run(client, f"a{i}", agent, identical_start, call_id) for i in range(async_runs)))

    threads = [threading.Thread(target=thread_main, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    asyncio.run(main())
    for th in threads:
        th.join()
    assert errors == []
    return [f"a{i}" for i in range(async_runs)] + [f"t{t}-{k}" for t in range(THREADS) for k in range(runs_per_thread)]


def _check(traces: list[Trace], runs: list[str], identical_start: bool) -> None:
    assert spanfold.flush(timeout=60)
    by_run: dict[str, list[Trace]] = {}
    for trace in traces:
        events = trace.to_invariant()
        tool_outputs = [e for e in events if e.get("role") == "tool"]
        run = tool_outputs[0]["content"].removeprefix("sunny in ") if tool_outputs else f"?{len(by_run)}"
        by_run.setdefault(run, []).append(trace)
    assert sorted(by_run) == sorted(runs), "a run without its own trace, or a trace of no run"
    wrong = []
    for run, found in by_run.items():
        assert len(found) == 1, f"run {run}: {len(found)} traces"
        events = found[0].to_invariant()
        call_id = events[2]["tool_calls"][0]["id"] if len(events) > 2 and events[2].get("tool_calls") else "?"
        if events != expected_events(run, identical_start, call_id):
            wrong.append((run, events))
    assert wrong == [], f"{len(wrong)} traces with wrong events, e.g. {wrong[:2]}"
    stats = spanfold.stats()
    assert stats.get("dropped_spans", 0) == 0
    assert stats.get("faults", 0) == 0, {k: v for k, v in stats.items() if k.startswith("fault")}


def test_concurrent_agent_runs_one_trace_each(traces: list[Trace]) -> None:
    runs = _run_all(agent=True, identical_start=False, call_id=False)
    _check(traces, runs, identical_start=False)
    assert len(traces) == ASYNC_RUNS + THREADS * RUNS_PER_THREAD
    assert all(t.meta.status == "complete" for t in traces)
    assert counters.snapshot()["traces_written"] == len(traces)


@pytest.mark.parametrize("scale", SCALES)
def test_concurrent_agent_runs_with_identical_starts(traces: list[Trace], scale: tuple[int, int]) -> None:
    runs = _run_all(agent=True, identical_start=True, call_id=False, scale=scale)
    _check(traces, runs, identical_start=True)


def test_concurrent_unparented_runs_are_stitched_one_trace_each(traces: list[Trace]) -> None:
    runs = _run_all(agent=False, identical_start=False, call_id=True)
    _check(traces, runs, identical_start=False)
    assert len(traces) == ASYNC_RUNS + THREADS * RUNS_PER_THREAD
    assert all(len(t.meta.extra["otel_trace_ids"]) == 1 for t in traces)  # the run's one trace id, from the source


@pytest.mark.parametrize("scale", SCALES)
def test_concurrent_unparented_runs_without_call_ids_are_stitched(traces: list[Trace], scale: tuple[int, int]) -> None:
    """The tool is called without ``tool_call_id=``: its span joins by name and arguments."""
    runs = _run_all(agent=False, identical_start=False, call_id=False, scale=scale)
    _check(traces, runs, identical_start=False)
    assert all(len(t.meta.extra["otel_trace_ids"]) == 1 for t in traces)  # the run's one trace id, from the source


@pytest.mark.parametrize("scale", SCALES)
def test_concurrent_unparented_runs_with_identical_starts_are_stitched(
    traces: list[Trace], scale: tuple[int, int]
) -> None:
    runs = _run_all(agent=False, identical_start=True, call_id=True, scale=scale)
    _check(traces, runs, identical_start=True)


def test_concurrent_unparented_runs_making_the_same_tool_call_are_stitched(traces: list[Trace]) -> None:
    """Different users, the same tool call (``get_weather("Paris")``, no ``tool_call_id=``): each run's tool span
    must join its own run, one each (at the source: the oldest waiting call of that name and arguments)."""
    runs = _run_all(agent=False, identical_start=False, call_id=False, scale=SMALL, city="Paris")
    assert spanfold.flush(timeout=60)
    assert len(traces) == len(runs)
    per_trace = sorted(len(t.meta.extra["otel_trace_ids"]) for t in traces)
    assert per_trace == [1] * len(runs), f"trace ids per stitched trace: {per_trace[:3]} ... {per_trace[-3:]}"

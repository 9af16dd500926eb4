"""Stitching, round 3: the five ways adversarial users got one user's data into another user's trace, each with the
real ``openai`` SDK over real HTTP to the embedded mock server, zero-code (no agent span).

Each user runs in a thread of its own (:class:`~.user_threads.UserThread`: its steps keep the thread and its
context, as a request handler's would); the test drives the interleaving step by step, so each schedule is the same
every run. The privacy rule, in the files and in the OTel spans: no flat trace holds two users' secrets, and no OTel
trace holds two users' calls (bar a caller's TRACEPARENT, whose trace id every run shares by design).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import openai
import pytest

import spanfold
from spanfold import counters
from spanfold.testing import MockLLMServer, MockRequest, Reply
from spanfold.testing.replies import ToolCallSpec

from ..conftest import Traced
from .user_threads import UserThread

T = TypeVar("T")
MODEL = "gpt-4o-mini"
SYSTEM = "You are the assistant of Example Bank."
QUESTION = "What is my balance?"
BALANCES = {"A": "balance of A: 100.00 EUR", "B": "balance of B: 250.00 EUR"}
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class Users:
    """One thread per user: ``do(user, fn)`` runs ``fn`` in that user's thread and returns its result."""

    def __init__(self, names: str) -> None:
        self.threads = {name: UserThread() for name in names}

    def do(self, user: str, fn: Callable[[], T]) -> T:
        return self.threads[user].do(fn)

    def close(self) -> None:
        for thread in self.threads.values():
            thread.close()


@pytest.fixture
def users() -> Iterator[Users]:
    u = Users("AB")
    yield u
    u.close()


def _tool_answer(ids: str | None) -> Callable[[MockRequest], Reply]:
    """A bank model: asked a question, it calls ``get_my_balance()`` (ids: the server's unique ones, ``"numbered"``
    ``call_1`` in every response); given the tool's result, it repeats it."""

    def respond(request: MockRequest) -> Reply:
        results = request.tool_results()
        if results and request.turns()[-1].role == "tool":
            return Reply.text(f"Your {results[-1].text}")
        call_id = "call_1" if ids == "numbered" else None
        return Reply.tools([ToolCallSpec("get_my_balance", {}, id=call_id)])

    return respond


def _secret_holders(traces: list[list[dict[str, Any]]]) -> list[set[str]]:
    return [{u for u, secret in BALANCES.items() if secret in json.dumps(events)} for events in traces]


def _assert_private(traces: list[list[dict[str, Any]]]) -> None:
    for i, holders in enumerate(_secret_holders(traces)):
        assert len(holders) <= 1, f"trace {i} holds the secrets of users {sorted(holders)}: {traces[i]}"


def _span_users(spans: Any) -> dict[int, set[str]]:
    """OTel trace id -> the users whose tool runs or answers it holds (by the secret in the span's attributes)."""
    out: dict[int, set[str]] = {}
    for span in spans.get_finished_spans():
        text = json.dumps(dict(span.attributes or {}), default=str)
        for user, secret in BALANCES.items():
            if secret in text:
                out.setdefault(span.context.trace_id, set()).add(user)
    return out


def _bank_run(client: openai.OpenAI, tool: Callable[..., str], user: str, *, with_id: bool) -> Callable[[], Any]:
    """The two steps of one user's run: ask (returns the messages and the call), then run the tool and answer."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]

    def ask() -> Any:
        reply = client.chat.completions.create(model=MODEL, messages=messages)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        return message.tool_calls[0]

    def answer(call: Any) -> str:
        output = tool(user, tool_call_id=call.id) if with_id else tool(user)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
        reply = client.chat.completions.create(model=MODEL, messages=messages)
        return str(reply.choices[0].message.content)

    return lambda: (ask, answer)


@spanfold.tool(name="get_my_balance")
def get_my_balance(user: str) -> str:
    """The session's balance (the user is the session, not an argument the model gives)."""
    return BALANCES[user]


def _interleaved(users: Users, client: openai.OpenAI, *, with_id: bool) -> None:
    """B asks, A asks (both wait on ``get_my_balance()``), then A runs its tool and answers, then B."""
    steps = {u: _bank_run(client, lambda who, **kw: get_my_balance(who, **kw), u, with_id=with_id)() for u in "AB"}
    calls = {}
    for u in "BA":
        ask, _ = steps[u]
        calls[u] = users.do(u, ask)
    for u in "AB":
        _, answer = steps[u]
        assert users.do(u, lambda u=u, answer=answer: answer(calls[u])) == f"Your {BALANCES[u]}"


@pytest.mark.parametrize("ids", ["unique", "numbered"])
def test_tool_runs_without_call_id_stay_with_the_run_that_asked(
    traced: Traced, global_spans: Any, users: Users, ids: str
) -> None:
    """Two users wait on ``get_my_balance()`` (same name, same arguments); each runs it without ``tool_call_id=``:
    each balance is in its own user's trace only, in the files and in the OTel traces (the execution context that
    asked for the tool is the evidence, never "the oldest waiting call")."""
    with MockLLMServer(_tool_answer(None if ids == "unique" else ids)) as server:
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
        _interleaved(users, client, with_id=False)
    traces = traced.traces()
    _assert_private(traces)
    assert all(len(u) == 1 for u in _span_users(global_spans).values()), _span_users(global_spans)
    for user in "AB":  # each user's run is whole: question, call, its own balance, answer
        own = [events for events, holders in zip(traces, _secret_holders(traces), strict=True) if holders == {user}]
        assert len(own) == 1, f"user {user}: {own}"
        assert [e.get("role") for e in own[0]] == ["system", "user", "assistant", "tool", "assistant"]
        assert own[0][3]["content"] == BALANCES[user]
        assert own[0][4]["content"] == f"Your {BALANCES[user]}"


def test_call_ids_two_runs_hold_are_no_evidence(traced: Traced, global_spans: Any, users: Users) -> None:
    """A server that numbers tool calls per response (``call_1`` in every response): with ``tool_call_id=`` passed,
    B's later ``call_1`` does not take the id over from A; the context that asked decides, and each run is whole."""
    with MockLLMServer(_tool_answer("numbered")) as server:
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
        _interleaved(users, client, with_id=True)
    traces = traced.traces()
    _assert_private(traces)
    assert all(len(u) == 1 for u in _span_users(global_spans).values()), _span_users(global_spans)
    for user in "AB":
        own = [events for events, holders in zip(traces, _secret_holders(traces), strict=True) if holders == {user}]
        assert len(own) == 1 and own[0][3] == {"role": "tool", "tool_call_id": "call_1", "content": BALANCES[user]}


def test_a_response_continued_twice_is_a_fork(traced: Traced, global_spans: Any) -> None:
    """A bot stores a primer response and starts every user's conversation from it (``previous_response_id``): two
    users never become one trace; the second continuation is a counted fork."""
    counters.reset()
    with MockLLMServer(lambda r: Reply.text(f"Noted: {r.last_user_text()}")) as server:
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
        primer = client.responses.create(model=MODEL, instructions=SYSTEM, input="Primer: be brief.")
        private = {"A": "my account is A-123", "B": "my account is B-987"}
        for user in "AB":
            first = client.responses.create(model=MODEL, previous_response_id=primer.id, input=private[user])
            client.responses.create(model=MODEL, previous_response_id=first.id, input=f"and {user} again")
    traces = traced.traces()
    for i, events in enumerate(traces):
        text = json.dumps(events)
        assert not (private["A"] in text and private["B"] in text), f"trace {i} holds both users: {events}"
    for user in "AB":  # each user's two turns stay together
        own = [e for e in traces if private[user] in json.dumps(e)]
        assert len(own) == 1 and f"and {user} again" in json.dumps(own[0])
    assert counters.snapshot().get("stitch_splits.fork") == 1


@pytest.mark.parametrize("fmt", ["invariant", "agentv-transcript"])
def test_runs_under_one_traceparent_are_separate_traces(
    tmp_path: Path, _global_provider: Any, global_spans: Any, monkeypatch: pytest.MonkeyPatch, users: Users, fmt: str
) -> None:
    """In a process started under a caller's TRACEPARENT, two users' zero-code runs keep the caller's trace id in
    OTel, and each is its own flat trace, with a run id of its own in its metadata and AgentV transcript rows."""
    monkeypatch.setenv("TRACEPARENT", TRACEPARENT)
    directory = tmp_path / "traces"
    spanfold.init(output=str(directory), format=fmt)
    try:
        with MockLLMServer(_tool_answer(None)) as server:
            client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
            _interleaved(users, client, with_id=True)
        assert spanfold.flush(timeout=30)
    finally:
        spanfold.shutdown()
    caller = int(TRACEPARENT.split("-")[1], 16)
    assert {s.context.trace_id for s in global_spans.get_finished_spans()} == {caller}
    if fmt == "agentv-transcript":
        rows = [json.loads(line) for line in (directory / "traces.agentv-transcript.jsonl").read_text().splitlines()]
        by_test: dict[str, set[str]] = {}
        for row in rows:
            by_test.setdefault(row["test_id"], set()).update(u for u, s in BALANCES.items() if s in json.dumps(row))
        assert sorted(map(sorted, by_test.values())) == [["A"], ["B"]], by_test
        return
    traced = Traced(None, directory)
    traces = traced.traces()
    _assert_private(traces)
    assert sorted(map(sorted, _secret_holders(traces))) == [["A"], ["B"]], traces
    metas = [line["metadata"] for line in traced.metas()]
    assert len({m["trace_id"] for m in metas}) == 2, metas
    assert all(m["otel_trace_ids"] == [f"{caller:032x}"] for m in metas), metas


def test_one_loop_that_trims_its_own_list_is_one_run(traced: Traced, global_spans: Any) -> None:
    """One agent loop that drops its oldest tool exchange from its own list in place (the same list object, call ids
    passed): one trace, each exchange shown once, in order."""
    counters.reset()
    with MockLLMServer(_tool_answer(None)) as server:
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]
        for turn in range(6):
            reply = client.chat.completions.create(model=MODEL, messages=messages)
            call = reply.choices[0].message.tool_calls[0]
            messages.append(reply.choices[0].message.model_dump(exclude_none=True))
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": get_my_balance("A", tool_call_id=call.id)}
            )
            messages.append({"role": "user", "content": f"{QUESTION} ({turn})"})
            if turn >= 1:
                del messages[2:5]  # the oldest exchange: its call, its result and the question after it
    traces = traced.traces()
    assert len(traces) == 1, [len(t) for t in traces]
    assert counters.snapshot().get("stitch_splits", 0) == 0
    calls = [c["id"] for e in traces[0] for c in e.get("tool_calls") or []]
    assert len(calls) == 6 and len(set(calls)) == 6, traces[0]
    outputs = [e["tool_call_id"] for e in traces[0] if e.get("role") == "tool"]
    assert outputs == calls, traces[0]
    assert len({s.context.trace_id for s in global_spans.get_finished_spans()}) == 1

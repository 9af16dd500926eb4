"""Multi-tenant stitching: two users of one process never share a trace, in the files nor in the spans.

Stitching joins an un-parented model call to the conversation whose history (inputs and outputs of one of its calls)
its own input history extends. In a chat server, many users open alike: one system prompt, "Hi", and a model that
greets them all alike. Their histories are then identical up to the first private message, and a stitcher that joins
on content alone writes one user's private messages into another user's trace (and makes the later call a child of
the other user's first span in every OTel backend).

The real ``openai`` SDK over real HTTP to the embedded mock server; its responder answers identical inputs
identically (the reply is derived from the last user message), as a deterministic model would. Spans are mapped to
users by ``gen_ai.response.id`` (the mock's ids are unique per server, and the SDK hands the same id back to the
caller), which spanfold records with content capture off too.

The privacy rule asserted everywhere: no event of one user ever appears in another user's trace. A user's
conversation split into several traces is acceptable (a history rebuilt from a database is a new list per call, and
content alone cannot tell it from another user's identical history); a merge of two users is not.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest

from spanfold.testing import MockLLMServer, MockRequest, Reply

from ..conftest import Traced, traced_into
from .conftest import invariant_of

MODEL = "gpt-4o-mini"
SYSTEM = "You are the support assistant of Example Bank. Be brief."
GREETINGS = ("Hi", "Hello", "Hey")
GREETING_REPLY = "Hello! How can I help?"
A_PRIVATE = "my account number is A-123-456, please check my balance"
B_PRIVATE = "my account number is B-987-654, please block my card"
RATE_LIMITED = "Rate limit reached for gpt-4o-mini"
SECRET = re.compile(r"secret-(\d+)-(\d+)\b")

Message = dict[str, Any]


def answer(request: MockRequest) -> Reply:
    """A deterministic model: identical inputs, identical answers (every greeting gets the same greeting back)."""
    text = request.last_user_text() or ""
    return Reply.text(GREETING_REPLY if text in GREETINGS else f"Noted: {text}")


def reply_to(text: str) -> str:
    return GREETING_REPLY if text in GREETINGS else f"Noted: {text}"


@pytest.fixture
def mock() -> Iterator[MockLLMServer]:
    with MockLLMServer(answer) as srv:
        yield srv


def client_for(server: MockLLMServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="test-key", base_url=server.base_url, max_retries=0)


def conversation(*turns: tuple[str, str]) -> list[Message]:
    """``[system, user, assistant, user, assistant, ...]`` from (user text, assistant text) pairs, as new dicts."""
    out: list[Message] = [{"role": "system", "content": SYSTEM}]
    for user, assistant in turns:
        out.append({"role": "user", "content": user})
        out.append({"role": "assistant", "content": assistant})
    return out


def opening(greeting: str = "Hi") -> list[Message]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": greeting}]


def chat_spans(global_spans: Any) -> list[Any]:
    return [s for s in global_spans.get_finished_spans() if (s.attributes or {}).get("gen_ai.operation.name") == "chat"]


def owners(spans: list[Any], responses: dict[str, Any]) -> dict[int, Any]:
    """span id -> user, for the spans whose ``gen_ai.response.id`` is one a user was handed (``responses``)."""
    out = {}
    for span in spans:
        user = responses.get(str((span.attributes or {}).get("gen_ai.response.id")))
        if user is not None:
            out[span.context.span_id] = user
    return out


def users_by_trace_id(spans: list[Any], owner: dict[int, Any]) -> dict[int, set[Any]]:
    out: dict[int, set[Any]] = defaultdict(set)
    for span in spans:
        if span.context.span_id in owner:
            out[span.context.trace_id].add(owner[span.context.span_id])
    return out


def foreign_parents(spans: list[Any], owner: dict[int, Any]) -> list[tuple[Any, Any]]:
    """(user, parent's user) for every span of one user whose parent is a span of another user."""
    return [
        (owner[s.context.span_id], owner[s.parent.span_id])
        for s in spans
        if s.context.span_id in owner
        and s.parent is not None
        and s.parent.span_id in owner
        and owner[s.parent.span_id] != owner[s.context.span_id]
    ]


def texts(events: list[dict[str, Any]]) -> str:
    return json.dumps(events, ensure_ascii=False)


# --- 1. two users, the same greeting -----------------------------------------------------------------------------


@pytest.mark.parametrize("lists", ["own_list", "new_list_per_call"])
def test_two_users_same_greeting(traced: Traced, global_spans: Any, mock: MockLLMServer, lists: str) -> None:
    """Case A: A and B open with "Hi" and get the same greeting back; then each sends a private message.

    ``own_list``: each user appends to its own list object and re-sends it (an agent loop): exactly two traces, one
    per user, each holding both of its turns. ``new_list_per_call``: each call is a new list rebuilt from the user's
    stored history (a chat server loading it from a database): at least two traces, none mixing users (a user split
    into two traces is acceptable, a merge of two users is not).
    """
    client = client_for(mock)
    private = {"A": A_PRIVATE, "B": B_PRIVATE}
    owned: dict[str, list[Message]] = {u: opening() for u in "AB"}
    responses: dict[str, str] = {}
    sent: dict[str, list[Message]] = {}  # each user's last request, the oracle of its trace

    def call(user: str, messages: list[Message]) -> str:
        reply = client.chat.completions.create(model=MODEL, messages=messages)
        responses[reply.id] = user
        sent[user] = [*messages, {"role": "assistant", "content": reply.choices[0].message.content}]
        return str(reply.choices[0].message.content)

    for user in "AB":  # A call 1, B call 1
        messages = owned[user] if lists == "own_list" else opening()
        text = call(user, messages)
        assert text == GREETING_REPLY
        if lists == "own_list":
            owned[user].append({"role": "assistant", "content": text})
    for user in "AB":  # A call 2, B call 2: the private messages
        if lists == "own_list":
            owned[user].append({"role": "user", "content": private[user]})
            messages = owned[user]
        else:
            messages = [*conversation(("Hi", GREETING_REPLY)), {"role": "user", "content": private[user]}]
        assert call(user, messages) == f"Noted: {private[user]}"

    traces = traced.traces()
    spans = chat_spans(global_spans)
    assert len(spans) == 4
    owner = owners(spans, responses)
    assert sorted(owner.values()) == ["A", "A", "B", "B"]

    # The privacy rule, in the files and in the spans (every breach listed before the test fails).
    breaches = [
        f"trace {i} holds A's and B's private messages: {events}"
        for i, events in enumerate(traces)
        if A_PRIVATE in texts(events) and B_PRIVATE in texts(events)
    ]
    breaches += [
        f"trace id {t:032x} holds calls of users {sorted(users)}"
        for t, users in users_by_trace_id(spans, owner).items()
        if len(users) > 1
    ]
    breaches += [f"a call of {user} is a child of a span of {other}" for user, other in foreign_parents(spans, owner)]
    assert breaches == [], "\n".join(breaches)

    expected = {user: invariant_of(history) for user, history in sent.items()}
    for i, events in enumerate(traces):  # event by event: each trace is the beginning of one user's conversation
        holders = [user for user in "AB" if private[user] in texts(events)]
        if holders:
            assert events == expected[holders[0]], f"trace {i} is not user {holders[0]}'s conversation: {events}"
        else:  # only a greeting, identical for both users
            assert events == expected["A"][: len(events)], f"trace {i}: {events}"
    for user in "AB":
        assert sum(private[user] in texts(events) for events in traces) >= 1, f"user {user}'s trace is missing"
    if lists == "own_list":
        assert len(traces) == 2, f"one trace per user expected, got {len(traces)}: {traces}"
    else:  # a split is acceptable, a merge is not
        assert len(traces) >= 2, f"two users merged into {len(traces)} trace(s): {traces}"
    if lists == "own_list":  # one trace id per user; the second call is a child of the user's first (remote parent)
        for user in "AB":
            first, second = sorted((s for s in spans if owner[s.context.span_id] == user), key=lambda s: s.start_time)
            assert first.parent is None
            assert second.context.trace_id == first.context.trace_id
            assert second.parent is not None and second.parent.span_id == first.context.span_id
            assert second.parent.is_remote


# --- 2 and 3. a failed call (HTTP 429) -------------------------------------------------------------------------------


def rate_limited(client: openai.OpenAI, messages: list[Message]) -> None:
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model=MODEL, messages=messages)


def is_rate_limit_event(event: dict[str, Any]) -> bool:
    return (
        event.get("role") == "error"
        and event.get("error", {}).get("type") == "openai.RateLimitError"
        and RATE_LIMITED in str(event.get("content"))
    )


def test_failed_call_never_adopts_another_user(traced: Traced, global_spans: Any, mock: MockLLMServer) -> None:
    """Case B: A's first call fails (429, no retry) and A gives up. B then sends the same opening (a new list) and its
    private follow-up: A's failed trace holds A's inputs and A's error, nothing of B; no span of B is in its trace."""
    client = client_for(mock)
    mock.script(Reply.error(429, RATE_LIMITED, should_retry=False))
    rate_limited(client, opening())  # A gives up

    responses: dict[str, str] = {}
    first = client.chat.completions.create(model=MODEL, messages=opening())
    responses[first.id] = "B"
    b_history = [*conversation(("Hi", GREETING_REPLY)), {"role": "user", "content": B_PRIVATE}]
    second = client.chat.completions.create(model=MODEL, messages=b_history)
    responses[second.id] = "B"

    traces = traced.traces()
    spans = chat_spans(global_spans)
    errors = [s for s in spans if (s.attributes or {}).get("error.type") == "openai.RateLimitError"]
    assert len(errors) == 1 and len(spans) == 3
    a_span = errors[0]
    owner = owners(spans, responses)
    assert sorted(owner.values()) == ["B", "B"]
    failed = [events for events in traces if any(is_rate_limit_event(e) for e in events)]
    assert len(failed) == 1, traces
    a_trace = failed[0]

    # The privacy rule, in the files and in the spans (every breach listed before the test fails).
    breaches = [
        f"B's {what} is in A's failed trace: {a_trace}"
        for what, text in (("private message", B_PRIVATE), ("greeting reply", GREETING_REPLY))
        if text in texts(a_trace)
    ]
    breaches += [
        f"B's call {s.attributes['gen_ai.response.id']} is in the trace id of A's failed call"
        for s in spans
        if s.context.span_id in owner and s.context.trace_id == a_span.context.trace_id
    ]
    breaches += [
        f"B's call {s.attributes['gen_ai.response.id']} is a child of A's failed call"
        for s in spans
        if s.context.span_id in owner and s.parent is not None and s.parent.span_id == a_span.context.span_id
    ]
    assert breaches == [], "\n".join(breaches)

    # A's failed trace: A's inputs and A's error, nothing else.
    assert a_trace[:2] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Hi"}]
    assert len(a_trace) == 3 and is_rate_limit_event(a_trace[2]), a_trace
    b_expected = invariant_of([*b_history, {"role": "assistant", "content": f"Noted: {B_PRIVATE}"}])
    b_traces = [events for events in traces if events is not a_trace]
    assert b_traces, "B's trace is missing"
    for events in b_traces:  # B may be split (a new list per call), never merged
        assert events == b_expected[: len(events)], events
    assert any(events == b_expected for events in b_traces), b_traces


def test_retry_of_same_list_joins(traced: Traced, global_spans: Any, mock: MockLLMServer) -> None:
    """A real retry: A's call fails (429), A re-sends the SAME list object, succeeds and continues with that list.
    One trace: A's inputs, the error, the greeting and the continuation; one trace id, the later calls children of
    the failed call's span."""
    client = client_for(mock)
    mock.script(Reply.error(429, RATE_LIMITED, should_retry=False))
    messages: list[Message] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Hi"}]
    rate_limited(client, messages)
    reply = client.chat.completions.create(model=MODEL, messages=messages)
    messages += [{"role": "assistant", "content": reply.choices[0].message.content}]
    messages += [{"role": "user", "content": A_PRIVATE}]
    client.chat.completions.create(model=MODEL, messages=messages)

    events = traced.one()
    assert events[:2] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Hi"}]
    assert is_rate_limit_event(events[2]), events
    assert events[3:] == [
        {"role": "assistant", "content": GREETING_REPLY},
        {"role": "user", "content": A_PRIVATE},
        {"role": "assistant", "content": f"Noted: {A_PRIVATE}"},
    ]
    spans = sorted(chat_spans(global_spans), key=lambda s: s.start_time)
    assert len(spans) == 3 and (spans[0].attributes or {}).get("error.type") == "openai.RateLimitError"
    assert len({s.context.trace_id for s in spans}) == 1
    assert spans[0].parent is None
    for later in spans[1:]:
        assert later.parent is not None and later.parent.span_id == spans[0].context.span_id


# --- 4. many users at once -------------------------------------------------------------------------------------------

USERS = 50
WORKERS = 16


def greeting_of(user: int) -> str:
    return GREETINGS[user % len(GREETINGS)]


def private_turns(user: int) -> int:
    """3 to 5 private turns after the greeting, deterministic per user (independent of the greeting)."""
    return 3 + (user // len(GREETINGS)) % 3


def user_text(user: int, turn: int) -> str:
    """Turn 0 is the shared greeting; every later user turn carries the user's private token."""
    return greeting_of(user) if turn == 0 else f"note secret-{user}-{turn} for my file"


class Tenants:
    """The stored history of each user (the chat server's database) and the responses each user was handed."""

    def __init__(self) -> None:
        self.stored: dict[int, list[tuple[str, str]]] = {user: [] for user in range(USERS)}
        self.responses: dict[str, int] = {}

    def request(self, user: int) -> list[Message]:
        """A new list per call, rebuilt from the user's stored history (new dicts too)."""
        turn = len(self.stored[user])
        return [*conversation(*self.stored[user]), {"role": "user", "content": user_text(user, turn)}]

    def store(self, user: int, reply: Any) -> None:
        text = str(reply.choices[0].message.content)
        turn = len(self.stored[user])
        assert text == reply_to(user_text(user, turn)), (user, turn, text)
        self.stored[user].append((user_text(user, turn), text))
        self.responses[reply.id] = user

    def turns(self, user: int) -> int:
        return 1 + private_turns(user)

    def expected(self, user: int) -> list[dict[str, Any]]:
        return invariant_of(conversation(*self.stored[user]))


def run_threads(server: MockLLMServer, tenants: Tenants) -> None:
    """A threaded chat server: in each round every user still talking sends one message, on a pool of 16 workers
    (all 50 openings in flight together, then all first private messages, ...); one shared client."""
    client = client_for(server)

    def one(user: int) -> None:
        messages = tenants.request(user)
        tenants.store(user, client.chat.completions.create(model=MODEL, messages=messages))

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for turn in range(max(tenants.turns(u) for u in range(USERS))):
            list(pool.map(one, [u for u in range(USERS) if turn < tenants.turns(u)]))


def think_time(user: int) -> float:
    """Seconds between a user's turns (0 to 9 ms, deterministic per user)."""
    return (user * 7 % 10) / 1000


def run_asyncio(server: MockLLMServer, tenants: Tenants) -> None:
    """An asyncio chat server: every user's conversation a task, all gathered at once; one shared client. Each turn
    waits a little first (the user's next message arrives later), so other users' calls end in between: without it a
    task would re-send right after its own call ended, before any other task could run."""

    async def user_task(client: openai.AsyncOpenAI, user: int) -> None:
        for _ in range(tenants.turns(user)):
            await asyncio.sleep(think_time(user))  # the user types; the server loads the history: other users run
            messages = tenants.request(user)
            reply = await client.chat.completions.create(model=MODEL, messages=messages)
            tenants.store(user, reply)

    async def main() -> None:
        async with openai.AsyncOpenAI(api_key="test-key", base_url=server.base_url, max_retries=0) as client:
            await asyncio.gather(*(user_task(client, user) for user in range(USERS)))

    asyncio.run(main())


def secret_order(secret: str) -> tuple[int, ...]:
    return tuple(int(n) for n in secret.split("-")[1:])


def secret_users(text: str) -> set[int]:
    return {int(user) for user, _ in SECRET.findall(text)}


def check_tenants(traced: Traced, global_spans: Any, tenants: Tenants, capture: bool) -> None:
    """No written trace and no trace id holds two users' calls; every user's events are written."""
    traces = traced.traces()
    spans = chat_spans(global_spans)
    assert len(spans) == sum(tenants.turns(u) for u in range(USERS))
    owner = owners(spans, tenants.responses)
    assert len(owner) == len(spans), "a span without the response id a user was handed"

    # The spans: one user per trace id (by response id; with capture on, by the secrets recorded in the input messages
    # too), no user's call the child of another user's span.
    by_trace_id = users_by_trace_id(spans, owner)
    recorded: dict[int, set[int]] = defaultdict(set)
    for span in spans:
        recorded[span.context.trace_id] |= secret_users(str((span.attributes or {}).get("gen_ai.input.messages")))
    span_breaches = [
        f"trace id {t:032x} holds calls of users {sorted(users)}" for t, users in by_trace_id.items() if len(users) > 1
    ]
    span_breaches += [
        f"trace id {t:032x}: its spans' input messages hold secrets of users {sorted(users)}"
        for t, users in recorded.items()
        if len(users) > 1
    ]
    foreign = foreign_parents(spans, owner)
    if foreign:
        span_breaches.append(
            f"{len(foreign)} calls are children of another user's span, e.g. (user, parent's) {foreign[:5]}"
        )

    # The files: every written trace holds at most one user's events, by the trace ids it folds (its meta's
    # otel_trace_ids) and, with capture on, by the secrets written in it.
    metas = [m["metadata"] for m in traced.metas()]
    traces_per_user: dict[int, int] = defaultdict(int)
    file_breaches: list[str] = []
    for i, (events, meta) in enumerate(zip(traces, metas, strict=True)):
        by_ids = {user for t in meta.get("otel_trace_ids") or [meta["trace_id"]] for user in by_trace_id[int(t, 16)]}
        by_text = secret_users(texts(events))
        for user in by_ids | by_text:
            traces_per_user[user] += 1
        if len(by_ids | by_text) > 1:
            secrets = sorted({f"secret-{u}-{t}" for u, t in SECRET.findall(texts(events))}, key=secret_order)
            written = f"; secrets written: {secrets[:8]}" if capture else ""
            file_breaches.append(f"trace {i} ({len(events)} events) folds the calls of users {sorted(by_ids)}{written}")
            continue
        assert by_ids, f"trace {i} folds none of the users' calls: {meta}"
        (user,) = by_ids | by_text
        expected = tenants.expected(user)[: len(events)]  # event by event: the beginning of its user's conversation
        if not capture:  # no text written: the roles
            events, expected = [e["role"] for e in events], [e["role"] for e in expected]
        assert events == expected, f"trace {i} is not the beginning of user {user}'s conversation: {events}"
    split = sorted(user for user, n in traces_per_user.items() if n > 1)
    print(
        f"\n{len(traces)} traces for {USERS} users; {len(split)} users split into more than one trace;"
        f" {len(file_breaches)} traces mixing users; {sum(len(u) > 1 for u in by_trace_id.values())} trace ids shared"
        " by users"
    )
    breaches = file_breaches[:6] + span_breaches[:6]
    assert breaches == [], (
        f"{len(file_breaches)} written traces and {len(span_breaches)} span checks breached, e.g.\n"
        + "\n".join(breaches)
    )
    assert sorted(traces_per_user) == list(range(USERS)), "a user with no written trace"
    if capture:  # every user's secrets are all written somewhere
        written = texts([events for events in traces])
        missing = [
            f"secret-{u}-{t}"
            for u in range(USERS)
            for t in range(1, tenants.turns(u))
            if f"secret-{u}-{t}" not in written
        ]
        assert missing == [], f"secrets never written: {missing[:10]}"


@pytest.fixture(params=[True, False], ids=["capture_on", "capture_off"])
def traced_capture(request: Any, tmp_path: Path, _global_provider: Any) -> Iterator[tuple[Traced, bool]]:
    """``traced``, with content capture on and off (``spanfold.init(capture_content=...)``)."""
    with traced_into(tmp_path / "traces", capture_content=request.param) as t:
        yield t, request.param


def test_multi_tenant_threads(traced_capture: tuple[Traced, bool], global_spans: Any, mock: MockLLMServer) -> None:
    traced, capture = traced_capture
    tenants = Tenants()
    run_threads(mock, tenants)
    check_tenants(traced, global_spans, tenants, capture)


def test_multi_tenant_asyncio(traced_capture: tuple[Traced, bool], global_spans: Any, mock: MockLLMServer) -> None:
    traced, capture = traced_capture
    tenants = Tenants()
    run_asyncio(mock, tenants)
    check_tenants(traced, global_spans, tenants, capture)

"""The schedule generator: random multi-user programs against the mock server, checked on what was written.

Hypothesis draws a program: 2-8 users, each a zero-code run of the real ``openai`` SDK over real HTTP to the embedded
mock server, each in a thread of its own or each an asyncio task of one loop; openings drawn from a few identical
texts (every user may say "Hi" and get the same greeting back); turns that ask a tool whose calls carry unique ids or
ids numbered per response (``call_1``), run with or without ``tool_call_id=``, with equal or per-user arguments;
calls that fail once and are retried with the very same list; lists re-sent (one object, appended), rebuilt (a new
list per call) or trimmed (the oldest exchange dropped in place); runs resumed from a stored history (an opening and
its greeting no call of this process made); Responses API users chained by ``previous_response_id``, some starting
from one shared primer response (a fork per user); some runs inside ``spanfold.agent``. The users' steps (one model
call, or one tool run) are interleaved in a drawn order, each run in its user's thread or task, so a failing schedule
replays exactly. The test runs with content capture on and off, and under a caller's ``TRACEPARENT``.

Every span is mapped to its user by what the user was handed (a model call's response id, the tool span current while
the user's tool ran), so the invariants hold with capture off too. On the flat traces written (their metadata's steps)
and on the OTel spans exported (by trace id; under a ``TRACEPARENT``, by ``spanfold.run.id``):

1. no flat trace and no OTel trace holds two users' calls;
2. every model call and tool run of every user is a step of exactly one flat trace: nothing lost, nothing twice;
3. a user's run is one trace, or the extra traces are counted splits (``stitch_splits`` in ``spanfold.stats()``).

A fixed-seed budget runs in the suite (``SPANFOLD_SCHEDULES`` examples per configuration, 100 by default: about
40 s); set it higher to search longer. Each failure found is kept below as a named test of its minimal schedule.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry import trace as otel_trace

import spanfold
from spanfold import counters
from spanfold.instrumentation.toolkit import conversations
from spanfold.testing import MockLLMServer, MockRequest, Reply
from spanfold.testing.replies import ToolCallSpec

from ..conftest import Traced, traced_into
from .user_threads import UserThread

MODEL = "gpt-4o-mini"
SYSTEMS = ("You are a helpful assistant.", "You are the assistant of Example Bank.")
OPENINGS = ("Hi", "Hello", "What is my balance?")
GREETING = "Hello! How can I help?"
BUDGET = int(os.environ.get("SPANFOLD_SCHEDULES", "100"))
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
_EXAMPLES = itertools.count()
_FAILED: set[str] = set()


# --- the model ----------------------------------------------------------------------------------------------------


def respond(request: MockRequest) -> Reply:
    """A deterministic model. A user text ``ask <tool> <args-json> <ids> ...`` asks for that tool (``numbered``: id
    ``call_1`` in every response, as many OpenAI-compatible servers do); after a tool result it repeats the result;
    a user text with ``[fail:N]`` fails the first time its N is seen; any other text gets an answer derived from it
    alone (identical texts, identical answers)."""
    turns = request.turns()
    last = turns[-1] if turns else None
    if last is not None and last.role == "tool":
        return Reply.text(f"Done: {last.text}")
    text = request.last_user_text() or ""
    if "[fail:" in text:
        token = text.split("[fail:", 1)[1].split("]", 1)[0]
        if token not in _FAILED:
            _FAILED.add(token)
            return Reply.error(500, "upstream overloaded", should_retry=False)
    if text.startswith("ask "):
        _, tool, arguments, ids, *_ = text.split(" ")
        return Reply.tools([ToolCallSpec(tool, json.loads(arguments), id="call_1" if ids == "numbered" else None)])
    if text in OPENINGS:
        return Reply.text(GREETING)
    return Reply.text(f"Noted: {text}")


# --- programs -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One user turn: an opening (shared text) or a private message, asking a tool or not, failing once or not."""

    opening: str | None
    tool: bool
    fail: bool


@dataclass(frozen=True)
class User:
    system: str
    turns: tuple[Turn, ...]
    lists: str  # own | rebuilt | trimmed | responses (chained by previous_response_id, text turns only)
    ids: str  # unique | numbered
    with_id: bool  # tool runs pass tool_call_id=
    shared_args: bool  # tool arguments equal for every user
    agent: bool  # the run inside spanfold.agent
    resumed: str | None = None  # goes on from a stored history (this opening and its greeting); responses: the primer


@dataclass(frozen=True)
class Program:
    users: tuple[User, ...]
    order: tuple[int, ...]  # the user of each step, in the order the steps run
    tasks: bool = False  # asyncio tasks of one loop, not threads


turns = st.builds(Turn, opening=st.none() | st.sampled_from(OPENINGS), tool=st.booleans(), fail=st.booleans())
users = st.builds(
    User,
    system=st.sampled_from(SYSTEMS),
    turns=st.lists(turns, min_size=1, max_size=3).map(tuple),
    lists=st.sampled_from(("own", "rebuilt", "trimmed", "responses")),
    ids=st.sampled_from(("unique", "numbered")),
    with_id=st.booleans(),
    shared_args=st.booleans(),
    agent=st.booleans(),
    resumed=st.none() | st.sampled_from(OPENINGS[:2]),
)


def steps_of(user: User) -> int:
    """A user's steps: each turn's model call, and for a tool turn the tool run and the call after it."""
    if user.lists == "responses":
        return len(user.turns)
    return sum(3 if turn.tool else 1 for turn in user.turns)


@st.composite
def programs(draw: st.DrawFn) -> Program:
    chosen = tuple(draw(st.lists(users, min_size=2, max_size=8)))
    pending = [u for u, user in enumerate(chosen) for _ in range(steps_of(user))]
    order = tuple(draw(st.permutations(pending)))  # each user's steps keep their order: only who goes next is drawn
    return Program(chosen, order, draw(st.booleans()))


# --- running one ---------------------------------------------------------------------------------------------------


@dataclass
class Run:
    """One user's run as it goes: its list, the calls it waits on, and what it was handed (its spans' keys)."""

    tag: str
    user: User
    client: Any  # openai.OpenAI, or openai.AsyncOpenAI for tasks
    primer: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[Any] = field(default_factory=list)
    previous: str | None = None
    responses: list[str] = field(default_factory=list)  # the response ids it was handed
    tool_spans: list[int] = field(default_factory=list)  # the span ids of its tool runs
    agent: Any = None

    def steps(self) -> Iterator[Callable[[], Any]]:
        """Each step: a callable returning None (threads) or an awaitable (tasks)."""
        user = self.user
        self.messages = [{"role": "system", "content": user.system}]
        if user.resumed is not None and user.lists != "responses":  # a chat server loading its database's history
            self.messages += [{"role": "user", "content": user.resumed}, {"role": "assistant", "content": GREETING}]
        if user.lists == "responses" and user.resumed is not None:
            self.previous = self.primer
        for k, turn in enumerate(user.turns):
            shared = turn.opening is not None and k == 0 and not turn.tool
            text = turn.opening if shared and turn.opening is not None else f"{self.tag} private {k}"
            if turn.tool and user.lists != "responses":
                arguments = json.dumps({} if user.shared_args else {"who": self.tag}, separators=(",", ":"))
                text = f"ask lookup {arguments} {user.ids} {self.tag} {k}"
            if turn.fail:
                text += f" [fail:{self.tag}-{k}]"
            yield lambda text=text, first=(k == 0): self._ask(text, first)
            if turn.tool and user.lists != "responses":
                yield lambda k=k: self._run_tool(k)
                yield lambda: self._ask(None, False)

    def _enter(self, first: bool) -> None:
        if first and self.user.agent:
            self.agent = spanfold.agent(f"agent-{self.tag}")
            self.agent.__enter__()

    def _ask(self, text: str | None, first: bool) -> Any:
        self._enter(first)
        if self.user.lists == "responses":
            return self._respond(str(text))
        if text is not None:
            self.messages.append({"role": "user", "content": text})
        messages = self.messages if self.user.lists != "rebuilt" else [dict(m) for m in self.messages]
        create = self.client.chat.completions.create
        if isinstance(self.client, openai.AsyncOpenAI):

            async def ask() -> None:
                try:
                    reply = await create(model=MODEL, messages=messages)
                except openai.APIStatusError:
                    reply = await create(model=MODEL, messages=messages)
                self._answered(reply)

            return ask()
        try:
            reply = create(model=MODEL, messages=messages)
        except openai.APIStatusError:  # a real retry: the very same list
            reply = create(model=MODEL, messages=messages)
        return self._answered(reply)

    def _answered(self, reply: Any) -> None:
        self.responses.append(reply.id)
        message = reply.choices[0].message
        self.messages.append(message.model_dump(exclude_none=True))
        self.calls = list(message.tool_calls or [])
        if self.user.lists == "trimmed" and len(self.messages) > 5:
            del self.messages[1:3]  # the oldest exchange, in place

    def _respond(self, text: str) -> Any:
        kwargs: dict[str, Any] = {"model": MODEL, "input": text}
        if self.previous is not None:
            kwargs["previous_response_id"] = self.previous
        else:
            kwargs["instructions"] = self.user.system
        create = self.client.responses.create
        if isinstance(self.client, openai.AsyncOpenAI):

            async def ask() -> None:
                try:
                    reply = await create(**kwargs)
                except openai.APIStatusError:
                    reply = await create(**kwargs)
                self.responses.append(reply.id)
                self.previous = reply.id

            return ask()
        try:
            reply = create(**kwargs)
        except openai.APIStatusError:
            reply = create(**kwargs)
        self.responses.append(reply.id)
        self.previous = reply.id
        return None

    def _run_tool(self, k: int) -> None:
        call = self.calls[0]
        output = f"{self.tag} output {k}"
        arguments = json.loads(call.function.arguments)
        given = {"tool_call_id": call.id} if self.user.with_id else {}
        result = lookup(self, output, **given, **arguments)
        self.messages.append({"role": "tool", "tool_call_id": call.id, "content": result})

    def close(self) -> None:
        if self.agent is not None:
            self.agent.__exit__(None, None, None)
            self.agent = None


@spanfold.tool(name="lookup")
def lookup(run: Run, output: str, **arguments: Any) -> str:
    run.tool_spans.append(otel_trace.get_current_span().get_span_context().span_id)
    return output


def run_program(program: Program, server: MockLLMServer) -> list[Run]:
    example = next(_EXAMPLES)
    tags = [f"u{example}x{i}" for i in range(len(program.users))]
    if program.tasks:
        return asyncio.run(_run_tasks(program, server, tags))
    client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
    primer = client.responses.create(model=MODEL, instructions=SYSTEMS[0], input="Primer: be brief.").id
    runs = [Run(tag, user, client, primer) for tag, user in zip(tags, program.users, strict=True)]
    threads = [UserThread() for _ in runs]
    steps = [run.steps() for run in runs]
    try:
        for u in program.order:
            threads[u].do(next(steps[u]))
        for u, run in enumerate(runs):
            threads[u].do(run.close)
    finally:
        for thread in threads:
            thread.close()
    return runs


async def _run_tasks(program: Program, server: MockLLMServer, tags: list[str]) -> list[Run]:
    """Each user an asyncio task that runs its steps when told to, one at a time, in the program's order."""
    client = openai.AsyncOpenAI(api_key="k", base_url=server.base_url, max_retries=0)
    primer = (await client.responses.create(model=MODEL, instructions=SYSTEMS[0], input="Primer: be brief.")).id
    runs = [Run(tag, user, client, primer) for tag, user in zip(tags, program.users, strict=True)]
    go = [asyncio.Queue[bool]() for _ in runs]
    done = [asyncio.Queue[None]() for _ in runs]

    async def user(u: int) -> None:
        for step in runs[u].steps():
            await go[u].get()
            pending = step()
            if pending is not None:
                await pending
            done[u].put_nowait(None)
        await go[u].get()
        runs[u].close()
        done[u].put_nowait(None)

    tasks = [asyncio.create_task(user(u)) for u in range(len(runs))]
    for u in [*program.order, *range(len(runs))]:
        go[u].put_nowait(True)
        await asyncio.wait_for(done[u].get(), 30)
    await asyncio.gather(*tasks)
    return runs


# --- the invariants ------------------------------------------------------------------------------------------------


def span_owners(runs: list[Run], spans: list[Any]) -> dict[int, str]:
    """span id -> user, for every span a user's call or tool run made."""
    by_response = {rid: run.tag for run in runs for rid in run.responses}
    owner = {sid: run.tag for run in runs for sid in run.tool_spans}
    for span in spans:
        user = by_response.get(str((span.attributes or {}).get("gen_ai.response.id")))
        if user is not None:
            owner[span.context.span_id] = user
    return owner


def run_of(span: Any, by_id: dict[int, Any]) -> Any:
    """The run a span is in under a caller's trace: the ``spanfold.run.id`` it or its nearest ancestor carries."""
    while span is not None:
        run_id = (span.attributes or {}).get("spanfold.run.id")
        if run_id:
            return run_id
        span = by_id.get(span.parent.span_id) if span.parent is not None else None
    return None


def check(runs: list[Run], metas: list[dict[str, Any]], spans: list[Any], splits: int, *, by_run: bool) -> None:
    owner = span_owners(runs, spans)
    placed: dict[int, int] = {}  # span id -> the flat trace it is a step of
    holders: list[set[str]] = []
    for i, meta in enumerate(metas):
        users = set()
        for step in meta.get("steps") or []:
            span_id = int(step["span_id"], 16)
            assert span_id not in placed, f"span {span_id:016x} is a step of traces {placed[span_id]} and {i}"
            placed[span_id] = i
            if span_id in owner:
                users.add(owner[span_id])
        assert len(users) <= 1, f"flat trace {meta['trace_id']} holds the calls of users {sorted(users)}"
        holders.append(users)
    groups: dict[Any, set[str]] = {}
    for span in spans:
        if span.context.span_id in owner:
            key = run_of(span, {s.context.span_id: s for s in spans}) if by_run else span.context.trace_id
            groups.setdefault(key, set()).add(owner[span.context.span_id])
    for key, users in groups.items():
        assert len(users) <= 1, f"OTel trace or run {key} holds the calls of users {sorted(users)}"
    lost = sorted(f"{user}:{span_id:016x}" for span_id, user in owner.items() if span_id not in placed)
    assert not lost, f"calls in no flat trace: {lost}"
    extra = sum(max(0, sum(run.tag in users for users in holders) - 1) for run in runs)
    assert extra <= splits, f"{extra} extra traces, {splits} splits counted: {holders}"


@pytest.fixture(scope="module")
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer(respond) as srv:
        yield srv


def run_and_check(
    program: Program, traced: Traced, global_spans: Any, server: MockLLMServer, *, by_run: bool = False
) -> None:
    """Run ``program`` on its own (the source's live conversations anew, so a schedule replays exactly) and check."""
    source = conversations.active()
    assert source is not None
    conversations.activate(conversations.Conversations(parent=source.parent, idle=source.idle, limit=source.limit))
    assert spanfold.flush(timeout=30)
    before = len(traced.traces())
    global_spans.clear()
    split_count = counters.snapshot().get("stitch_splits", 0)
    runs = run_program(program, server)
    assert spanfold.flush(timeout=30)
    metas = [line["metadata"] for line in traced.metas()[before:]]
    splits = counters.snapshot().get("stitch_splits", 0) - split_count
    check(runs, metas, list(global_spans.get_finished_spans()), splits, by_run=by_run)


_SETTINGS = settings(
    max_examples=BUDGET,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(params=["capture", "no_capture", "traceparent"])
def setup(
    request: pytest.FixtureRequest, tmp_path: Path, _global_provider: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Traced, bool]]:
    if request.param == "traceparent":
        monkeypatch.setenv("TRACEPARENT", TRACEPARENT)
    with traced_into(tmp_path / "traces", capture_content=request.param != "no_capture") as traced:
        yield traced, request.param == "traceparent"


@_SETTINGS
@given(program=programs())
def test_schedules_keep_users_apart(
    program: Program, setup: tuple[Traced, bool], global_spans: Any, server: MockLLMServer
) -> None:
    traced, by_run = setup
    run_and_check(program, traced, global_spans, server, by_run=by_run)


# --- minimal schedules, kept --------------------------------------------------------------------------------------

_PLAIN: dict[str, Any] = {"lists": "own", "ids": "unique", "with_id": False, "shared_args": True, "agent": False}


def test_schedule_a_resumed_history_does_not_join_another_users_greeting(
    traced: Traced, global_spans: Any, server: MockLLMServer
) -> None:
    """User 0 says "Hi" and gets the greeting; user 1, in another thread, goes on from a stored history that reads
    the same (its "Hi" and greeting came from a database, not from a call here): its private turns never join user
    0's run, though user 0's is the one live conversation holding that history (text anyone's call could give is
    evidence only from the context that made it)."""
    greeter = User(SYSTEMS[0], (Turn("Hi", False, False), Turn(None, False, False)), **_PLAIN)
    resumed = User(SYSTEMS[0], (Turn(None, False, False), Turn(None, False, False)), **_PLAIN, resumed="Hi")
    run_and_check(Program((greeter, resumed), (0, 1, 1, 0)), traced, global_spans, server)


def test_schedule_tool_runs_without_ids_in_two_threads(
    traced: Traced, global_spans: Any, server: MockLLMServer
) -> None:
    """Both users' models ask ``lookup({})``; the later asker's thread runs its tool first, without ``tool_call_id=``:
    each output lands in its own run (never "the oldest waiting call")."""
    asking = User(SYSTEMS[0], (Turn(None, True, False),), **_PLAIN)
    run_and_check(Program((asking, asking), (0, 1, 1, 0, 1, 0)), traced, global_spans, server)

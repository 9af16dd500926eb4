"""The schedule generator: random multi-user programs against the mock server, checked on what was written.

Hypothesis draws a program: 2-8 users, each a zero-code run of the real ``openai`` SDK over real HTTP to the embedded
mock server, in a thread of its own; openings drawn from a few identical texts (every user may say "Hi" and get the
same greeting back); turns that ask a tool whose calls carry unique ids or ids numbered per response (``call_1``),
run with or without ``tool_call_id=``, with equal or per-user arguments; calls that fail once and are retried with the
very same list; lists re-sent (one object, appended), rebuilt (a new list per call) or trimmed (the oldest exchange
dropped in place); runs resumed from a stored history (an opening and its greeting no call of this process made);
some runs inside ``spanfold.agent``. The users' steps (one model call, or one tool run) are
interleaved in a drawn order, each run in its user's thread, so a failing schedule replays exactly.

Invariants, on the flat traces written and on the OTel spans exported:

1. no flat trace and no OTel trace holds two users' content (each user's messages and tool outputs carry its tag);
2. nothing is lost: everything each user sent or got back is in a flat trace;
3. a user's run is one trace, or the extra traces are counted splits (``stitch_splits`` in ``spanfold.stats()``).

A fixed-seed budget runs in the suite (``SPANFOLD_SCHEDULES`` examples, 120 by default: about a minute); set it higher
to search longer. Each failure found is kept below as a named test of its minimal schedule.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spanfold
from spanfold import counters
from spanfold.instrumentation.toolkit import conversations
from spanfold.testing import MockLLMServer, MockRequest, Reply
from spanfold.testing.replies import ToolCallSpec

from ..conftest import Traced

MODEL = "gpt-4o-mini"
SYSTEMS = ("You are a helpful assistant.", "You are the assistant of Example Bank.")
OPENINGS = ("Hi", "Hello", "What is my balance?")
GREETING = "Hello! How can I help?"
BUDGET = int(os.environ.get("SPANFOLD_SCHEDULES", "120"))
_EXAMPLES = itertools.count()


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


_FAILED: set[str] = set()


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
    lists: str  # own | rebuilt | trimmed
    ids: str  # unique | numbered
    with_id: bool  # tool runs pass tool_call_id=
    shared_args: bool  # tool arguments equal for every user
    agent: bool  # the run inside spanfold.agent
    resumed: str | None = (
        None  # the run goes on from a stored history (this opening and its greeting, no call for them)
    )


@dataclass(frozen=True)
class Program:
    users: tuple[User, ...]
    order: tuple[int, ...]  # the user of each step, in the order the steps run


turns = st.builds(
    Turn,
    opening=st.none() | st.sampled_from(OPENINGS),
    tool=st.booleans(),
    fail=st.booleans(),
)
users = st.builds(
    User,
    system=st.sampled_from(SYSTEMS),
    turns=st.lists(turns, min_size=1, max_size=3).map(tuple),
    lists=st.sampled_from(("own", "rebuilt", "trimmed")),
    ids=st.sampled_from(("unique", "numbered")),
    with_id=st.booleans(),
    shared_args=st.booleans(),
    agent=st.booleans(),
    resumed=st.none() | st.sampled_from(OPENINGS[:2]),
)


def steps_of(user: User) -> int:
    """A user's steps: each turn's model call, and for a tool turn the tool run and the call after it."""
    return sum(3 if turn.tool else 1 for turn in user.turns)


@st.composite
def programs(draw: st.DrawFn) -> Program:
    chosen = tuple(draw(st.lists(users, min_size=2, max_size=8)))
    pending = [u for u, user in enumerate(chosen) for _ in range(steps_of(user))]
    order = tuple(draw(st.permutations(pending)))  # each user's steps keep their order: only who goes next is drawn
    return Program(chosen, order)


# --- running one ---------------------------------------------------------------------------------------------------


@dataclass
class Run:
    """One user's run as it goes: its list, the calls it waits on, what it sent and got (its tag marks all)."""

    tag: str
    user: User
    client: openai.OpenAI
    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[Any] = field(default_factory=list)
    produced: list[str] = field(default_factory=list)  # tool outputs and private texts: each must be written
    agent: Any = None

    def steps(self) -> Iterator[Callable[[], None]]:
        user = self.user
        self.messages = [{"role": "system", "content": user.system}]
        if user.resumed is not None:  # a chat server loading the user's history from its database
            self.messages += [{"role": "user", "content": user.resumed}, {"role": "assistant", "content": GREETING}]
        for k, turn in enumerate(user.turns):
            shared = turn.opening is not None and k == 0 and not turn.tool
            text = turn.opening if shared and turn.opening is not None else f"{self.tag} private {k}"
            if turn.tool:
                arguments = json.dumps({} if user.shared_args else {"who": self.tag}, separators=(",", ":"))
                text = f"ask lookup {arguments} {user.ids} {self.tag} {k}"
            if turn.fail:
                text += f" [fail:{self.tag}-{k}]"
                shared = False
            if not shared:
                self.produced.append(text)
            yield lambda text=text, first=(k == 0): self._ask(text, first)
            if turn.tool:
                yield lambda k=k: self._run_tool(k)
                yield lambda: self._ask(None, False)

    def _send(self) -> Any:
        messages = self.messages if self.user.lists != "rebuilt" else [dict(m) for m in self.messages]
        try:
            return self.client.chat.completions.create(model=MODEL, messages=messages)  # type: ignore[arg-type]
        except openai.APIStatusError:
            return self.client.chat.completions.create(model=MODEL, messages=messages)  # type: ignore[arg-type]

    def _ask(self, text: str | None, first: bool) -> None:
        if first and self.user.agent:
            self.agent = spanfold.agent(f"agent-{self.tag}")
            self.agent.__enter__()
        if text is not None:
            self.messages.append({"role": "user", "content": text})
        reply = self._send()
        message = reply.choices[0].message
        self.messages.append(message.model_dump(exclude_none=True))
        self.calls = list(message.tool_calls or [])
        if self.user.lists == "trimmed" and len(self.messages) > 5:
            del self.messages[1:3]  # the oldest exchange, in place

    def _run_tool(self, k: int) -> None:
        call = self.calls[0]
        output = f"{self.tag} output {k}"
        self.produced.append(output)
        arguments = json.loads(call.function.arguments)
        given = {"tool_call_id": call.id} if self.user.with_id else {}
        result = lookup(output, **given, **arguments)
        self.messages.append({"role": "tool", "tool_call_id": call.id, "content": result})

    def close(self) -> None:
        if self.agent is not None:
            self.agent.__exit__(None, None, None)
            self.agent = None


@spanfold.tool(name="lookup")
def lookup(output: str, **arguments: Any) -> str:
    return output


def run_program(program: Program, server: MockLLMServer) -> list[Run]:
    example = next(_EXAMPLES)
    client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
    runs = [Run(f"u{example}x{i}", user, client) for i, user in enumerate(program.users)]
    pools = [ThreadPoolExecutor(max_workers=1) for _ in runs]
    steps = [run.steps() for run in runs]
    try:
        for u in program.order:
            pools[u].submit(next(steps[u])).result(timeout=30)
        for u, run in enumerate(runs):
            pools[u].submit(run.close).result(timeout=30)
    finally:
        for pool in pools:
            pool.shutdown()
    return runs


# --- the invariants ------------------------------------------------------------------------------------------------


def check(runs: list[Run], traces: list[list[dict[str, Any]]], spans: list[Any], splits: int) -> None:
    tags = [run.tag for run in runs]

    def owners(text: str) -> set[str]:
        return {tag for tag in tags if f"{tag} " in text}

    holders = [owners(json.dumps(events)) for events in traces]
    for events, who in zip(traces, holders, strict=True):
        assert len(who) <= 1, f"a flat trace holds users {sorted(who)}: {events}"
    by_trace: dict[int, set[str]] = {}
    for span in spans:
        by_trace.setdefault(span.context.trace_id, set()).update(
            owners(json.dumps(dict(span.attributes or {}), default=str))
        )
    for trace_id, who in by_trace.items():
        assert len(who) <= 1, f"OTel trace {trace_id:032x} holds users {sorted(who)}"
    written = "\n".join(json.dumps(events) for events in traces)
    for run in runs:
        for text in run.produced:
            assert json.dumps(text)[1:-1] in written, f"{run.tag}: {text!r} is in no trace"
    extra = sum(max(0, sum(run.tag in who for who in holders) - 1) for run in runs)
    assert extra <= splits, f"{extra} extra traces, {splits} splits counted: {holders}"


@pytest.fixture(scope="module")
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer(respond) as srv:
        yield srv


def run_and_check(program: Program, traced: Traced, global_spans: Any, server: MockLLMServer) -> None:
    """Run ``program`` on its own (the source's live conversations anew, so a schedule replays exactly) and check."""
    source = conversations.active()
    assert source is not None
    conversations.activate(conversations.Conversations(parent=source.parent, idle=source.idle, limit=source.limit))
    assert spanfold.flush(timeout=30)
    before = len(traced.traces())
    global_spans.clear()
    split_count = counters.snapshot().get("stitch_splits", 0)
    runs = run_program(program, server)
    traces = traced.traces()[before:]
    splits = counters.snapshot().get("stitch_splits", 0) - split_count
    check(runs, traces, list(global_spans.get_finished_spans()), splits)


@settings(
    max_examples=BUDGET,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(program=programs())
def test_schedules_keep_users_apart(program: Program, traced: Traced, global_spans: Any, server: MockLLMServer) -> None:
    run_and_check(program, traced, global_spans, server)


# --- minimal schedules, kept --------------------------------------------------------------------------------------

_PLAIN = {"lists": "own", "ids": "unique", "with_id": False, "shared_args": True, "agent": False}


def test_schedule_a_resumed_history_does_not_join_another_users_greeting(
    traced: Traced, global_spans: Any, server: MockLLMServer
) -> None:
    """User 0 says "Hi" and gets the greeting; user 1, in another thread, goes on from a stored history that reads
    the same (its "Hi" and greeting came from a database, not from a call here): its private turns never join user
    0's run, though user 0's is the one live conversation holding that history (text anyone's call could give is
    evidence only from the context that made it)."""
    greeter = User(SYSTEMS[0], (Turn("Hi", False, False), Turn(None, False, False)), **_PLAIN)  # type: ignore[arg-type]
    resumed = User(SYSTEMS[0], (Turn(None, False, False), Turn(None, False, False)), **_PLAIN, resumed="Hi")  # type: ignore[arg-type]
    run_and_check(Program((greeter, resumed), (0, 1, 1, 0)), traced, global_spans, server)


def test_schedule_tool_runs_without_ids_in_two_threads(
    traced: Traced, global_spans: Any, server: MockLLMServer
) -> None:
    """Both users' models ask ``lookup({})``; the later asker's thread runs its tool first, without ``tool_call_id=``:
    each output lands in its own run (never "the oldest waiting call")."""
    asking = User(SYSTEMS[0], (Turn(None, True, False),), **_PLAIN)  # type: ignore[arg-type]
    run_and_check(Program((asking, asking), (0, 1, 1, 0, 1, 0)), traced, global_spans, server)

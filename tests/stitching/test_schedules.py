"""The schedule generator: random multi-user programs against the mock server, checked on what was written.

Hypothesis draws a program: 2-20 users (most programs 2-5), each a zero-code run of the real ``openai`` SDK over real
HTTP to the embedded mock server, each in a thread of its own or each an asyncio task of one loop; openings drawn
from a few identical texts (every user may say "Hi" and get the same greeting back); turns that ask a tool whose
calls carry unique ids, ids numbered per response (``call_1``) or no id at all (as Gemini and Ollama make them: no
``id`` on the wire, or an empty one), run with or without ``tool_call_id=``, with equal or per-user arguments; calls
that fail once and are retried with the very same list; lists re-sent (one object, appended), rebuilt (a new list per
call) or trimmed (the oldest exchange dropped in place); runs resumed from a stored history (an opening and its
greeting no call of this process made); Responses API users chained by ``previous_response_id``, some starting from
one shared primer response (a fork per user), or by a ``conversation`` of their own (``gen_ai.conversation.id``); some
runs inside ``spanfold.agent``, with a ``conversation_id`` of their own or one several users wrongly share. The users'
steps (one model call, or one tool run) are interleaved in a drawn order, each run in its user's thread or task, so
a failing schedule replays exactly.

Four configurations: ``init()`` with content capture on, off, and under a caller's ``TRACEPARENT``; and ``fold``,
where ``spanfold.init`` instruments nothing: the official ``opentelemetry-instrumentation-openai-v2`` makes the model
calls' spans, tool runs and agent runs are plain OTel spans of the application's (another producer's), and a
``FoldingSpanProcessor`` folds them, stitching the un-parented calls by what the spans show (the path of ``spanfold
serve``; it sees neither execution contexts nor list objects).

Every span is mapped to its user by when it started: the steps run one at a time, so a span started during a user's
step is that user's (failed calls too, and with capture off). On the flat traces written (their metadata's steps)
and on the OTel spans exported (by trace id; under a ``TRACEPARENT``, by ``spanfold.run.id``):

1. no flat trace and no OTel trace holds two users' spans;
2. every model call and tool run of every user is a step of exactly one flat trace: nothing lost, nothing twice;
3. a user's run is one trace, or the extra traces are counted splits (``stitch_splits`` in ``spanfold.stats()``).
   In the fold a run that trims its own list is exempt: without the list object nothing names its run, so its
   trimmed call starts a trace no evidence pointed past (nothing to count).

A fixed-seed budget runs in the suite (``SPANFOLD_SCHEDULES`` examples per configuration, 100 by default, 60 for the
fold: about 65 s); set it higher to search longer. ``SPANFOLD_SCHEDULES_REPORT=FILE`` (``-``: stderr, with ``-s``)
writes the splits by reason summed over the examples, per configuration. Each failure found is kept below as a named
test of its minimal schedule.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import spanfold
import spanfold.setup
from spanfold import config, counters
from spanfold.exporter.files.writers import MemoryWriter
from spanfold.exporter.pipeline.processor import FoldingSpanProcessor
from spanfold.stitching import conversations
from spanfold.testing import MockLLMServer, MockRequest, Reply
from spanfold.testing.replies import ToolCallSpec

from ..conftest import Traced, traced_into
from .user_threads import UserThread

MODEL = "gpt-4o-mini"
SYSTEMS = ("You are a helpful assistant.", "You are the assistant of Example Bank.")
OPENINGS = ("Hi", "Hello", "What is my balance?")
GREETING = "Hello! How can I help?"
BUDGET = int(os.environ.get("SPANFOLD_SCHEDULES", "100"))
FOLD_BUDGET = int(os.environ.get("SPANFOLD_SCHEDULES", "60"))
REPORT = os.environ.get("SPANFOLD_SCHEDULES_REPORT")
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
#: Tool-call id styles: the server's unique ids, ``call_1`` in every response, no ``id`` on the wire, ``""``.
ID_STYLES = ("unique", "numbered", "none", "empty")
_EXAMPLES = itertools.count()
_IDLESS = itertools.count()
_FAILED: set[str] = set()


# --- the model ----------------------------------------------------------------------------------------------------


def _idless(request: MockRequest, tool: str, arguments: str, wire_id: str | None) -> Reply:
    """A chat completion asking ``tool`` with no tool-call id (``wire_id`` None: no ``id`` field), as an
    OpenAI-compatible server in front of a model whose calls have none sends it."""
    call: dict[str, Any] = {"type": "function", "function": {"name": tool, "arguments": arguments}}
    if wire_id is not None:
        call["id"] = wire_id
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return Reply.shaped(
        {
            "id": f"chatcmpl-idless-{next(_IDLESS)}",
            "object": "chat.completion",
            "created": 1_735_689_600,
            "model": request.model,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    )


def respond(request: MockRequest) -> Reply:
    """A deterministic model. A user text ``ask <tool> <args-json> <ids> ...`` asks for that tool (``numbered``: id
    ``call_1`` in every response, as many OpenAI-compatible servers do; ``none`` / ``empty``: no id, or ``""``);
    after a tool result it repeats the result; a user text with ``[fail:N]`` fails the first time its N is seen; any
    other text gets an answer derived from it alone (identical texts, identical answers)."""
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
        if ids in ("none", "empty"):
            return _idless(request, tool, arguments, None if ids == "none" else "")
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
    #: own | rebuilt | trimmed | responses (chained by previous_response_id) | conversation (a Responses API
    #: ``conversation`` of its own: ``gen_ai.conversation.id``); the last two: text turns only
    lists: str
    ids: str  # unique | numbered | none | empty
    with_id: bool  # tool runs pass tool_call_id=
    shared_args: bool  # tool arguments equal for every user
    #: None: zero-code; plain: inside spanfold.agent; own: with a conversation_id of its own; shared: with one
    #: conversation_id every "shared" user of the program has (wrongly)
    agent: str | None = None
    resumed: str | None = None  # goes on from a stored history (this opening and its greeting); responses: the primer


@dataclass(frozen=True)
class Program:
    users: tuple[User, ...]
    order: tuple[int, ...]  # the user of each step, in the order the steps run
    tasks: bool = False  # asyncio tasks of one loop, not threads


def users_of(lists: tuple[str, ...]) -> st.SearchStrategy[User]:
    turns = st.builds(Turn, opening=st.none() | st.sampled_from(OPENINGS), tool=st.booleans(), fail=st.booleans())
    return st.builds(
        User,
        system=st.sampled_from(SYSTEMS),
        turns=st.lists(turns, min_size=1, max_size=3).map(tuple),
        lists=st.sampled_from(lists),
        ids=st.sampled_from(ID_STYLES),
        with_id=st.booleans(),
        shared_args=st.booleans(),
        agent=st.sampled_from((None, None, "plain", "own", "shared")),
        resumed=st.none() | st.sampled_from(OPENINGS[:2]),
    )


def steps_of(user: User) -> int:
    """A user's steps: each turn's model call, and for a tool turn the tool run and the call after it."""
    if user.lists in ("responses", "conversation"):
        return len(user.turns)
    return sum(3 if turn.tool else 1 for turn in user.turns)


@st.composite
def programs(draw: st.DrawFn, fold: bool = False) -> Program:
    """A program of 2-5 users, one in eight of 2-20 (drawn so that it shrinks to 2); ``fold``: the official
    instrumentation's (Chat Completions only)."""
    n = draw(st.integers(2, 5))
    if draw(st.booleans()) and draw(st.booleans()) and draw(st.booleans()):
        n = draw(st.integers(2, 20))
    lists = ("own", "rebuilt", "trimmed") if fold else ("own", "rebuilt", "trimmed", "responses", "conversation")
    chosen = tuple(draw(st.lists(users_of(lists), min_size=n, max_size=n)))
    pending = [u for u, user in enumerate(chosen) for _ in range(steps_of(user))]
    order = tuple(draw(st.permutations(pending)))  # each user's steps keep their order: only who goes next is drawn
    return Program(chosen, order, draw(st.booleans()))


# --- running one ---------------------------------------------------------------------------------------------------


@dataclass
class Run:
    """One user's run as it goes: its list, the calls it waits on, the agent it runs in."""

    tag: str
    user: User
    client: Any  # openai.OpenAI, or openai.AsyncOpenAI for tasks
    primer: str | None = None
    #: The fold configuration's tracer (its tool and agent spans: another producer's); None: spanfold's.
    tracer: Any = None
    shared: str = ""  # the conversation id the "shared" users share
    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[Any] = field(default_factory=list)
    previous: str | None = None
    agent: Any = None

    def steps(self) -> Iterator[Callable[[], Any]]:
        """Each step: a callable returning None (threads) or an awaitable (tasks)."""
        user = self.user
        chained = user.lists in ("responses", "conversation")
        self.messages = [{"role": "system", "content": user.system}]
        if user.resumed is not None and not chained:  # a chat server loading its database's history
            self.messages += [{"role": "user", "content": user.resumed}, {"role": "assistant", "content": GREETING}]
        if user.lists == "responses" and user.resumed is not None:
            self.previous = self.primer
        for k, turn in enumerate(user.turns):
            shared = turn.opening is not None and k == 0 and not turn.tool
            text = turn.opening if shared and turn.opening is not None else f"{self.tag} private {k}"
            if turn.tool and not chained:
                arguments = json.dumps({} if user.shared_args else {"who": self.tag}, separators=(",", ":"))
                text = f"ask lookup {arguments} {user.ids} {self.tag} {k}"
            if turn.fail:
                text += f" [fail:{self.tag}-{k}]"
            yield lambda text=text, first=(k == 0): self._ask(text, first)
            if turn.tool and not chained:
                yield lambda k=k: self._run_tool(k)
                yield lambda: self._ask(None, False)

    def _conversation_id(self) -> str | None:
        return {"own": f"conv-{self.tag}", "shared": self.shared}.get(self.user.agent or "")

    def _enter(self, first: bool) -> None:
        if not first or self.user.agent is None:
            return
        conversation_id = self._conversation_id()
        if self.tracer is None:
            self.agent = spanfold.agent(f"agent-{self.tag}", conversation_id=conversation_id)
            self.agent.__enter__()
            return
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"agent-{self.tag}"}
        if conversation_id is not None:
            attributes["gen_ai.conversation.id"] = conversation_id
        self.agent = self.tracer.start_as_current_span(f"invoke_agent agent-{self.tag}", attributes=attributes)
        self.agent.__enter__()

    def _ask(self, text: str | None, first: bool) -> Any:
        self._enter(first)
        if self.user.lists in ("responses", "conversation"):
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
        message = reply.choices[0].message
        self.messages.append(message.model_dump(exclude_none=True))
        self.calls = list(message.tool_calls or [])
        if self.user.lists == "trimmed" and len(self.messages) > 5:
            del self.messages[1:3]  # the oldest exchange, in place

    def _respond(self, text: str) -> Any:
        kwargs: dict[str, Any] = {"model": MODEL, "input": text}
        if self.user.lists == "conversation":
            kwargs["conversation"] = f"conv_{self.tag}"
            kwargs["instructions"] = self.user.system
        elif self.previous is not None:
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
                self.previous = reply.id

            return ask()
        try:
            reply = create(**kwargs)
        except openai.APIStatusError:
            reply = create(**kwargs)
        self.previous = reply.id
        return None

    def _run_tool(self, k: int) -> None:
        call = self.calls[0]
        call_id = getattr(call, "id", None)  # None: the call had no id on the wire
        output = f"{self.tag} output {k}"
        arguments = json.loads(call.function.arguments)
        if self.tracer is None:
            given = {"tool_call_id": call_id} if self.user.with_id and call_id is not None else {}
            result = lookup(output, **given, **arguments)
        else:
            result = self._traced_tool(call_id if self.user.with_id else None, call.function.arguments, output)
        message: dict[str, Any] = {"role": "tool", "content": result}
        if call_id is not None:
            message["tool_call_id"] = call_id
        self.messages.append(message)

    def _traced_tool(self, call_id: str | None, arguments: str, output: str) -> str:
        """The tool run as another producer's ``execute_tool`` span (a framework's: no spanfold)."""
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.arguments": arguments,
        }
        if call_id is not None:
            attributes["gen_ai.tool.call.id"] = call_id
        with self.tracer.start_as_current_span("execute_tool lookup", attributes=attributes) as span:
            span.set_attribute("gen_ai.tool.call.result", output)
        return output

    def close(self) -> None:
        if self.agent is not None:
            self.agent.__exit__(None, None, None)
            self.agent = None


@spanfold.tool(name="lookup")
def lookup(output: str, **arguments: Any) -> str:
    return output


#: Each step's user and its time: (start ns, end ns, user tag), in the order they ran.
Windows = list[tuple[int, int, str]]


def run_program(program: Program, server: MockLLMServer, tracer: Any = None) -> Windows:
    example = next(_EXAMPLES)
    tags = [f"u{example}x{i}" for i in range(len(program.users))]
    if program.tasks:
        return asyncio.run(_run_tasks(program, server, tags, tracer))
    client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
    primer = client.responses.create(model=MODEL, instructions=SYSTEMS[0], input="Primer: be brief.").id
    shared = f"conv-shared-{tags[0]}"
    runs = [Run(tag, user, client, primer, tracer, shared) for tag, user in zip(tags, program.users, strict=True)]
    threads = [UserThread() for _ in runs]
    steps = [run.steps() for run in runs]
    windows: Windows = []

    def step(u: int, fn: Callable[[], Any]) -> None:
        start = time.time_ns()
        threads[u].do(fn)
        windows.append((start, time.time_ns(), runs[u].tag))

    try:
        for u in program.order:
            step(u, next(steps[u]))
        for u, run in enumerate(runs):
            step(u, run.close)
    finally:
        for thread in threads:
            thread.close()
    return windows


async def _run_tasks(program: Program, server: MockLLMServer, tags: list[str], tracer: Any) -> Windows:
    """Each user an asyncio task that runs its steps when told to, one at a time, in the program's order."""
    client = openai.AsyncOpenAI(api_key="k", base_url=server.base_url, max_retries=0)
    primer = (await client.responses.create(model=MODEL, instructions=SYSTEMS[0], input="Primer: be brief.")).id
    shared = f"conv-shared-{tags[0]}"
    runs = [Run(tag, user, client, primer, tracer, shared) for tag, user in zip(tags, program.users, strict=True)]
    go = [asyncio.Queue[bool]() for _ in runs]
    done = [asyncio.Queue[None]() for _ in runs]
    windows: Windows = []

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
        start = time.time_ns()
        go[u].put_nowait(True)
        await asyncio.wait_for(done[u].get(), 30)
        windows.append((start, time.time_ns(), runs[u].tag))
    await asyncio.gather(*tasks)
    return windows


# --- the invariants ------------------------------------------------------------------------------------------------


def span_owners(windows: Windows, spans: list[Any]) -> dict[int, str]:
    """span id -> user, for every span started during a user's step (the steps run one at a time)."""
    owner = {}
    for span in spans:
        for start, end, tag in windows:
            if start <= span.start_time <= end:
                owner[span.context.span_id] = tag
                break
    return owner


def is_step(span: Any) -> bool:
    """A model call or a tool run (not an agent run)."""
    operation = (span.attributes or {}).get("gen_ai.operation.name")
    return operation is not None and operation != "invoke_agent"


def run_of(span: Any, by_id: dict[int, Any]) -> Any:
    """The run a span is in under a caller's trace: the ``spanfold.run.id`` it or its nearest ancestor carries."""
    while span is not None:
        run_id = (span.attributes or {}).get("spanfold.run.id")
        if run_id:
            return run_id
        span = by_id.get(span.parent.span_id) if span.parent is not None else None
    return None


def check(
    windows: Windows,
    metas: list[dict[str, Any]],
    spans: list[Any],
    splits: int,
    *,
    by_run: bool,
    exempt: frozenset[str] = frozenset(),
) -> None:
    """The three invariants; ``exempt``: users whose extra traces need not be counted splits."""
    owner = span_owners(windows, spans)
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
    by_id = {s.context.span_id: s for s in spans}
    for span in spans:
        if span.context.span_id in owner:
            key = run_of(span, by_id) if by_run else span.context.trace_id
            groups.setdefault(key, set()).add(owner[span.context.span_id])
    for key, users in groups.items():
        assert len(users) <= 1, f"OTel trace or run {key} holds the calls of users {sorted(users)}"
    lost = sorted(
        f"{owner[s.context.span_id]}:{s.name}:{s.context.span_id:016x}"
        for s in spans
        if s.context.span_id in owner and is_step(s) and s.context.span_id not in placed
    )
    assert not lost, f"calls in no flat trace: {lost}"
    tags = {tag for _, _, tag in windows} - exempt
    extra = sum(max(0, sum(tag in users for users in holders) - 1) for tag in tags)
    assert extra <= splits, f"{extra} extra traces, {splits} splits counted: {holders}"


@pytest.fixture(scope="module")
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer(respond) as srv:
        yield srv


#: Configuration -> examples, and each ``stitch_*`` counter summed over them (SPANFOLD_SCHEDULES_REPORT).
_TALLY: dict[str, dict[str, int]] = {}


def _tally(configuration: str, before: dict[str, int], after: dict[str, int]) -> None:
    row = _TALLY.setdefault(configuration, {"examples": 0})
    row["examples"] += 1
    for key, value in after.items():
        if key.startswith("stitch_") and value != before.get(key, 0):
            row[key] = row.get(key, 0) + value - before.get(key, 0)


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    if not REPORT or not _TALLY:
        return
    keys = sorted({key for row in _TALLY.values() for key in row} - {"examples"})
    lines = ["| configuration | examples | " + " | ".join(keys) + " |", "|---" * (len(keys) + 2) + "|"]
    for name, row in _TALLY.items():
        lines.append(f"| {name} | {row['examples']} | " + " | ".join(str(row.get(k, 0)) for k in keys) + " |")
    text = "\n".join(lines) + "\n"
    if REPORT == "-":
        sys.stderr.write(text)
    else:
        Path(REPORT).write_text(text, encoding="utf-8")


def _counters() -> dict[str, int]:
    return {k: v for k, v in counters.snapshot().items() if isinstance(v, int)}


def run_and_check(
    program: Program,
    traced: Traced,
    global_spans: Any,
    server: MockLLMServer,
    *,
    by_run: bool = False,
    configuration: str = "named",
) -> None:
    """Run ``program`` through ``init()`` on its own (the source's live conversations anew, so a schedule replays
    exactly) and check."""
    source = conversations.active()
    assert source is not None
    conversations.activate(conversations.Conversations(parent=source.parent, idle=source.idle, limit=source.limit))
    assert spanfold.flush(timeout=30)
    before = len(traced.traces())
    global_spans.clear()
    counted = _counters()
    windows = run_program(program, server)
    assert spanfold.flush(timeout=30)
    metas = [line["metadata"] for line in traced.metas()[before:]]
    now = _counters()
    _tally(configuration, counted, now)
    splits = now.get("stitch_splits", 0) - counted.get("stitch_splits", 0)
    check(windows, metas, list(global_spans.get_finished_spans()), splits, by_run=by_run)


class Relay(SpanProcessor):
    """The fold configuration's provider hands each span to the current example's processors (the official
    instrumentation is instrumented once per test, on one provider)."""

    def __init__(self) -> None:
        self.processors: list[SpanProcessor] = []

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        for processor in self.processors:
            processor.on_start(span, parent_context)

    def on_end(self, span: Any) -> None:
        for processor in self.processors:
            processor.on_end(span)


@dataclass
class Official:
    """The official instrumentation on ``provider`` (spanfold.init() not called), its spans to ``relay``."""

    provider: TracerProvider
    relay: Relay


def fold_and_check(
    program: Program, server: MockLLMServer, official: Official, *, configuration: str = "named"
) -> None:
    """Run ``program`` with the official OpenAI instrumentation into a fresh ``FoldingSpanProcessor`` (stitching
    on, windows longer than the program) and check what it folded."""
    writer = MemoryWriter()
    spans = InMemorySpanExporter()
    cfg = config.load({"stitch_idle": 600.0, "trace_timeout": 600.0}, environ={})
    folding = FoldingSpanProcessor([writer], cfg, stitch=True, poll_interval=0.05)
    official.relay.processors = [SimpleSpanProcessor(spans), folding]
    counted = _counters()
    try:
        windows = run_program(program, server, official.provider.get_tracer("users-app"))
    finally:
        official.relay.processors = []
        folding.shutdown()  # every open conversation written
    now = _counters()
    _tally(configuration, counted, now)
    splits = now.get("stitch_splits", 0) - counted.get("stitch_splits", 0)
    metas = [trace.meta.to_dict() for trace in writer.traces]
    tags = list(dict.fromkeys(tag for _, _, tag in windows))  # in the order of the users (each closes last)
    exempt = frozenset(tag for tag in tags if program.users[int(tag.rsplit("x", 1)[1])].lists == "trimmed")
    check(windows, metas, list(spans.get_finished_spans()), splits, by_run=False, exempt=exempt)


#: The official instrumentation's latest attributes, content on the spans (the fold's evidence).
OTEL_V2 = {
    "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
}


@contextlib.contextmanager
def official_instrumentation(provider: TracerProvider) -> Iterator[None]:
    """``opentelemetry-instrumentation-openai-v2`` on ``provider`` with :data:`OTEL_V2` for a block (as
    tests/bridge/producers.py runs it: the semconv opt-in read again both ways), spanfold.init() not called."""
    from opentelemetry.instrumentation._semconv import _OpenTelemetrySemanticConventionStability as stability
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    assert spanfold.setup.current() is None, "spanfold.init() is active: the calls would be traced twice"
    instrumentor = OpenAIInstrumentor()
    with pytest.MonkeyPatch.context() as env:
        for key, value in OTEL_V2.items():
            env.setenv(key, value)
        stability._initialized = False  # the opt-in is read once per process; read it again
        stability._initialize()
        instrumentor.instrument(tracer_provider=provider)
        try:
            yield
        finally:
            instrumentor.uninstrument()
    stability._initialized = False
    stability._initialize()


def _settings(budget: int) -> Any:
    return settings(
        max_examples=budget,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@pytest.fixture(params=["capture", "no_capture", "traceparent"])
def setup(
    request: pytest.FixtureRequest, tmp_path: Path, _global_provider: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Traced, str]]:
    if request.param == "traceparent":
        monkeypatch.setenv("TRACEPARENT", TRACEPARENT)
    with traced_into(tmp_path / "traces", capture_content=request.param != "no_capture") as traced:
        yield traced, request.param


@_settings(BUDGET)
@given(program=programs())
def test_schedules_keep_users_apart(
    program: Program, setup: tuple[Traced, str], global_spans: Any, server: MockLLMServer
) -> None:
    traced, name = setup
    run_and_check(program, traced, global_spans, server, by_run=name == "traceparent", configuration=name)


@pytest.fixture
def official() -> Iterator[Official]:
    relay = Relay()
    provider = TracerProvider()
    provider.add_span_processor(relay)
    with official_instrumentation(provider):
        yield Official(provider, relay)
    provider.shutdown()


@_settings(FOLD_BUDGET)
@given(program=programs(fold=True))
def test_schedules_keep_users_apart_in_the_fold(program: Program, official: Official, server: MockLLMServer) -> None:
    fold_and_check(program, server, official, configuration="fold")


# --- minimal schedules, kept --------------------------------------------------------------------------------------

_PLAIN: dict[str, Any] = {"lists": "own", "ids": "unique", "with_id": False, "shared_args": True}


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


def test_schedule_a_responses_call_failed_and_retried_is_one_run(
    traced: Traced, global_spans: Any, server: MockLLMServer
) -> None:
    """A Responses API user's first call (``input`` a text, no ``previous_response_id``) fails and is retried with
    the very same arguments: one run, one trace (the text object re-sent from the same thread is the retry's
    evidence, as a list object is). Was two traces and no split counted."""
    failing = User(SYSTEMS[0], (Turn(None, False, True),), **{**_PLAIN, "lists": "responses"})
    run_and_check(Program((failing,), (0,)), traced, global_spans, server)


def test_schedule_fold_a_resumed_history_does_not_join_another_users_greeting(
    official: Official, server: MockLLMServer
) -> None:
    """Through the fold (the official instrumentation's spans): user 0 says "Hi" and gets the greeting; user 1 goes
    on from a stored history that reads the same. The fold sees the same spans as if user 0 went on: a history anyone
    could give is no evidence there (a counted ``no_context`` split). Was one flat trace with both users' calls."""
    greeter = User(SYSTEMS[1], (Turn("Hi", False, False),), **_PLAIN)
    resumed = User(SYSTEMS[1], (Turn(None, False, False),), **_PLAIN, resumed="Hi")
    fold_and_check(Program((greeter, resumed), (0, 1)), server, official)


def test_schedule_fold_a_failed_call_sent_again_is_a_counted_split(official: Official, server: MockLLMServer) -> None:
    """Through the fold: a user's first call fails and is retried with the same list. The fold sees neither the list
    nor the thread, so the retry is a trace of its own, and the split is counted (``no_context``). Was two traces and
    no split counted."""
    failing = User(SYSTEMS[0], (Turn(None, False, True),), **_PLAIN)
    fold_and_check(Program((failing,), (0,)), server, official)

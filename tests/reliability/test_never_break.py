"""Never break the app: arbitrary well-typed and malformed SDK responses, stream chunk sequences, HTTP errors and
transport exceptions, through every wrapper (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages; sync and
async; plain, streaming, ``with_raw_response``), differentially against the same call without spanfold. The other
providers' wrappers go through the same differential in :mod:`.test_never_break_providers`.

Each example asserts: the outcome (returned object, every chunk, the exception type and message) equals the
uninstrumented outcome; the wrapped call hands back the very object (or exception) the SDK method produced; exactly
one span ended. Each test asserts at the end: every internal fault was logged once per kind and counted in
``spanfold.stats()``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from pydantic import BaseModel

import spanfold
from spanfold import counters
from spanfold.instrumentation.toolkit import tool_spans as tools

from .conftest import Answer, FaultLog, Harness, Script, anthropic_client, aoutcome, openai_client, outcome, unwrapped
from .strategies import (
    ANTHROPIC_BODY,
    ANTHROPIC_EVENT,
    CHAT_BODY,
    CHAT_CHUNK,
    JSON,
    RESPONSES_BODY,
    RESPONSES_EVENT,
    TEXT,
    answers,
)

#: Examples per (API, sync/async) test; 10 tests, two SDK calls per example.
EXAMPLES = 50

CHAT_MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "w", "arguments": '{"c":"P"}'}}],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
]
ANTHROPIC_MESSAGES = [
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "w", "input": {"c": "P"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]},
]


@dataclass(frozen=True)
class Api:
    client: Callable[..., Any]
    body: Any
    event: Any
    named_events: bool
    call: Callable[[Any, bool, bool], Any]  # (client, stream, raw) -> result or coroutine


def _chat(client: Any, stream: bool, raw: bool) -> Any:
    target = client.chat.completions.with_raw_response if raw else client.chat.completions
    return target.create(model="gpt-4o", messages=CHAT_MESSAGES, stream=stream, temperature=0.5)


def _responses(client: Any, stream: bool, raw: bool) -> Any:
    target = client.responses.with_raw_response if raw else client.responses
    return target.create(model="gpt-4o", input="Weather in Paris?", instructions="Be brief.", stream=stream)


def _messages(client: Any, stream: bool, raw: bool) -> Any:
    target = client.messages.with_raw_response if raw else client.messages
    return target.create(
        model="claude-x", max_tokens=64, system="Be brief.", messages=ANTHROPIC_MESSAGES, stream=stream
    )


class Answer_(BaseModel):  # a structured-output schema for ``parse``
    answer: str


def _chat_parse(client: Any, stream: bool, raw: bool) -> Any:
    """``parse`` (no streaming: the flag only changes what the server answers)."""
    target = client.chat.completions.with_raw_response if raw else client.chat.completions
    return target.parse(model="gpt-4o", messages=CHAT_MESSAGES, response_format=Answer_)


def _beta_messages(client: Any, stream: bool, raw: bool) -> Any:
    target = client.beta.messages.with_raw_response if raw else client.beta.messages
    return target.create(model="claude-x", max_tokens=64, messages=ANTHROPIC_MESSAGES, stream=stream)


APIS = {
    "openai.chat": Api(openai_client, CHAT_BODY, CHAT_CHUNK, False, _chat),
    "openai.chat.parse": Api(openai_client, CHAT_BODY, CHAT_CHUNK, False, _chat_parse),
    "anthropic.beta.messages": Api(anthropic_client, ANTHROPIC_BODY, ANTHROPIC_EVENT, True, _beta_messages),
    "openai.responses": Api(openai_client, RESPONSES_BODY, RESPONSES_EVENT, False, _responses),
    "anthropic.messages": Api(anthropic_client, ANTHROPIC_BODY, ANTHROPIC_EVENT, True, _messages),
}

#: Inputs tried across the suite (asserted in the last test so the README's figure stays true).
TRIED: dict[str, int] = {}


def _one_example(harness: Harness, api: Api, is_async: bool, data: st.DataObject) -> None:
    stream = data.draw(st.booleans(), "stream")
    raw = data.draw(st.booleans(), "raw")
    answer = data.draw(answers(api.body, api.event, stream, api.named_events), "answer")

    def run() -> tuple[Any, Any, list[bytes]]:
        script = Script(answer)
        client = api.client(script, is_async)
        if is_async:
            return (*asyncio.run(aoutcome(lambda: api.call(client, stream, raw))), script.bodies)
        return (*outcome(lambda: api.call(client, stream, raw)), script.bodies)

    expected, _, sent = run()
    assert harness.take_spans() == []
    with harness.on():
        got, produced, sent_traced = run()
    assert got == expected
    assert sent_traced == sent  # the very same request went out
    assert unwrapped(produced) is harness.returned.last(), "the wrapper must hand back the SDK's own object"
    spans = harness.take_spans()
    assert len(spans) == 1, [s.name for s in spans]
    assert spans[0].end_time is not None


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("name", sorted(APIS))
def test_wrapped_call_is_the_unwrapped_call(name: str, is_async: bool, harness: Harness, fault_log: FaultLog) -> None:
    api = APIS[name]
    count = 0

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        nonlocal count
        count += 1
        _one_example(harness, api, is_async, data)

    check()
    assert count >= EXAMPLES
    TRIED[f"{name}.{'async' if is_async else 'sync'}"] = count
    faults = fault_log.check_logged_once()
    stats = spanfold.stats()
    for kind, n in faults.items():
        assert stats[f"fault.{kind}"] == n


def test_a_faulting_accumulator_is_counted_once_per_stream_and_logged_once(
    harness: Harness, fault_log: FaultLog
) -> None:
    """Chunks the accumulator cannot read (a ``choices`` that is not a list): one fault per stream, one log line in
    all, the user's chunks untouched."""
    bad = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": 7}
    answer = Answer.sse([(None, json.dumps(bad))] * 5 + [(None, "[DONE]")])
    with harness.on():
        for _ in range(3):
            client = openai_client(Script(answer))
            chunks = list(client.chat.completions.create(model="m", messages=CHAT_MESSAGES, stream=True))
            assert [c.choices for c in chunks] == [bad["choices"]] * 5
    assert len(harness.take_spans()) == 3
    faults = fault_log.check_logged_once()
    assert faults == {"openai.chat.stream_chunk": 3}
    assert fault_log.kinds() == ["openai.chat.stream_chunk"]


class RaisingProcessor(SpanProcessor):
    """Another span processor in the user's setup that raises when a span ends (an exporter bug, a full queue)."""

    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError("a span processor broke")


@spanfold.tool(name="lookup")
def lookup(city: str) -> str:
    if city == "nowhere":
        raise LookupError(city)
    return f"sunny in {city}"


@spanfold.tool(name="alookup")
async def alookup(city: str) -> str:
    if city == "nowhere":
        raise LookupError(city)
    return f"sunny in {city}"


def test_a_raising_span_processor_never_reaches_the_app(
    harness: Harness, fault_log: FaultLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a processor that raises in ``on_end`` beside spanfold's, every call ends exactly as without spanfold:
    responses, streams (sync and async, to the end), SDK errors, tools and agents (ok and failing)."""
    harness.provider.add_span_processor(RaisingProcessor())
    monkeypatch.setattr(tools, "_tracer", harness.provider.get_tracer("test"))
    ok = Answer.json({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": []})
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": []}
    stream = Answer.sse([(None, json.dumps(chunk)), (None, "[DONE]")])
    error = Answer.json({"error": {"message": "bad"}}, status=400)

    def app() -> list[Any]:
        seen = []
        for answer, stream_on in ((ok, False), (stream, True), (error, False)):
            seen.append(outcome(lambda a=answer, s=stream_on: _chat(openai_client(Script(a)), s, False))[0])
            seen.append(
                asyncio.run(aoutcome(lambda a=answer, s=stream_on: _chat(openai_client(Script(a), True), s, False)))[0]
            )
        for city in ("Paris", "nowhere"):
            seen.append(outcome(lambda c=city: lookup(c))[0])
            seen.append(asyncio.run(aoutcome(lambda c=city: alookup(c)))[0])

            def in_agent(c: str = city) -> str:
                with spanfold.agent("a"):
                    return lookup(c)

            seen.append(outcome(in_agent)[0])
        return seen

    expected = app()
    with harness.on():
        got = app()
    assert got == expected
    assert len(harness.take_spans()) == 8 + 6 + 8  # tools and agents both times, and the 6 model calls
    faults = fault_log.check_logged_once()
    assert sum(faults.values()) >= 14


class Hostile:
    """A value in the user's request that fights back: comparing, hashing, ``str()``, iterating or reading it raises."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("hostile __eq__")

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "Hostile()"  # (hypothesis prints failing examples)

    def __str__(self) -> str:
        raise RuntimeError("hostile __str__")

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"hostile .{name}")

    def __iter__(self) -> Any:
        raise RuntimeError("hostile __iter__")


ODD = JSON | st.builds(Hostile)
PART = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image_url", "input_audio", "file", "refusal", "image", "tool_result", "odd"])},
    optional={
        "text": ODD,
        "image_url": st.fixed_dictionaries({"url": st.sampled_from(["https://x/y.png", "data:image/png;base64,AAAA"])})
        | ODD,
        "input_audio": st.fixed_dictionaries({"data": TEXT, "format": TEXT}) | ODD,
        "content": ODD,
        "tool_use_id": ODD,
        "source": ODD,
    },
)
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "developer", "tool"]) | ODD},
    optional={
        "content": TEXT | st.lists(PART, max_size=3) | ODD,
        "tool_calls": st.lists(st.fixed_dictionaries({"id": ODD, "type": ODD, "function": ODD}), max_size=2) | ODD,
        "tool_call_id": ODD,
        "name": ODD,
    },
)
MESSAGES = st.one_of(
    st.lists(MESSAGE | ODD, max_size=4),
    st.lists(MESSAGE, max_size=4).map(tuple),
    st.lists(MESSAGE, max_size=4).map(lambda ms: ("generator", ms)),  # made into a generator per call
    ODD,
)
EXTRA = st.fixed_dictionaries(
    {}, optional={"temperature": ODD, "max_tokens": ODD, "tools": st.lists(ODD, max_size=2) | ODD, "user": ODD}
)


def _fresh(value: Any) -> Any:
    """A one-shot generator is made anew for each call (both calls must see the same input)."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "generator":
        return (m for m in value[1])
    return value


REQUEST_CALLS = {
    "openai.chat": (
        openai_client,
        CHAT_BODY,
        lambda c, msgs, extra: c.chat.completions.create(model="gpt-4o", messages=msgs, **extra),
    ),
    "openai.responses": (
        openai_client,
        RESPONSES_BODY,
        lambda c, msgs, extra: c.responses.create(
            model="gpt-4o", input=msgs, instructions=extra.get("user", "be brief")
        ),
    ),
    "anthropic.messages": (
        anthropic_client,
        ANTHROPIC_BODY,
        lambda c, msgs, extra: c.messages.create(
            model="claude-x", max_tokens=16, messages=msgs, system=extra.get("user", "be brief")
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(REQUEST_CALLS))
def test_arbitrary_requests_go_out_unchanged(name: str, harness: Harness, fault_log: FaultLog) -> None:
    """Arbitrary, malformed and hostile request arguments (odd types, objects whose every method raises, one-shot
    generators): the same request bytes go out (or the same exception is raised) with spanfold as without."""
    make_client, body, call = REQUEST_CALLS[name]

    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(messages=MESSAGES, extra=EXTRA, reply=body)
    def check(messages: Any, extra: dict[str, Any], reply: Any) -> None:
        def run() -> tuple[Any, list[bytes]]:
            script = Script(Answer.json(reply))
            client = make_client(script)
            return outcome(lambda: call(client, _fresh(messages), extra))[0], script.bodies

        expected = run()
        before = counters.snapshot().get(f"fault.{name}.request", 0)
        with harness.on():
            got = run()
        assert got == expected
        spans = len(harness.take_spans())
        # One span; or none when spanfold could not read the request (a counted fault: the call went on untraced).
        assert spans == 1 or (spans == 0 and counters.snapshot()[f"fault.{name}.request"] == before + 1)

    check()
    fault_log.check_logged_once()

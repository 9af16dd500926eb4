"""``spanfold.context`` as an API: values checked with errors that name the argument, nested contexts merged, the
context manager and the decorator (plain, coroutine, generator and async-generator functions), asyncio tasks, and the
attributes its span processor writes (capture on and off)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import spanfold
from spanfold.api import context as api
from spanfold.api.processor import ContextSpanProcessor
from spanfold.content import runtime
from spanfold.content.redaction import from_option


def test_no_context_is_open_by_default() -> None:
    assert api.current() is None
    assert api.values() == {}


def test_the_values_hold_inside_and_only_inside() -> None:
    with spanfold.context(user_id="u-42", session_id="chat-7", tags=["beta"], metadata={"tenant": "acme"}):
        assert api.values() == {
            "user_id": "u-42",
            "session_id": "chat-7",
            "tags": ["beta"],
            "metadata": {"tenant": "acme"},
        }
    assert api.values() == {}


def test_nested_contexts_merge_the_inner_wins_per_key_and_tags_add_up() -> None:
    with spanfold.context(
        user_id="u-1", session_id="s-1", tags=["a", "b"], metadata={"tenant": "acme", "plan": "free"}, prompt="p"
    ):
        with spanfold.context(user_id="u-2", tags=["b", "c", "c"], metadata={"plan": "pro", "n": 3}):
            assert api.values() == {
                "user_id": "u-2",
                "session_id": "s-1",
                "tags": ["a", "b", "c"],
                "metadata": {"tenant": "acme", "plan": "pro", "n": 3},
                "prompt": {"name": "p"},
            }
            with spanfold.context(prompt=("support-answer", 3)):
                assert api.values()["prompt"] == {"name": "support-answer", "version": "3"}
                assert api.values()["user_id"] == "u-2"
        assert api.values()["user_id"] == "u-1"
        assert api.values()["tags"] == ["a", "b"]
        assert api.values()["metadata"] == {"tenant": "acme", "plan": "free"}


def test_one_context_object_entered_twice_nests_and_unwinds() -> None:
    ctx = spanfold.context(tags=["x"])
    with ctx, spanfold.context(tags=["y"]), ctx:
        assert api.values()["tags"] == ["x", "y"]
    assert api.current() is None


def test_the_decorator_opens_the_context_per_call_merged_with_the_caller_s() -> None:
    @spanfold.context(tags=["inner"], metadata={"k": 1})
    def work() -> dict[str, Any]:
        return api.values()

    assert work() == {"tags": ["inner"], "metadata": {"k": 1}}
    with spanfold.context(user_id="u"):
        assert work() == {"user_id": "u", "tags": ["inner"], "metadata": {"k": 1}}
    assert work.__name__ == "work"


async def test_the_decorator_on_a_coroutine_function_and_async_with() -> None:
    @spanfold.context(session_id="s")
    async def work() -> dict[str, Any]:
        await asyncio.sleep(0)
        return api.values()

    assert await work() == {"session_id": "s"}
    async with spanfold.context(user_id="u"):
        assert await work() == {"user_id": "u", "session_id": "s"}
    assert api.current() is None


def test_a_generator_runs_in_the_context_its_consumer_does_not() -> None:
    @spanfold.context(user_id="in-gen")
    def items() -> Iterator[Any]:
        received = yield api.values().get("user_id")
        yield (received, api.values().get("user_id"))
        try:
            yield "waiting"
        except KeyError:
            yield ("caught", api.values().get("user_id"))

    gen = items()
    assert api.current() is None
    assert next(gen) == "in-gen"
    assert api.current() is None  # between two items: the consumer's code, outside
    assert gen.send("hello") == ("hello", "in-gen")
    assert next(gen) == "waiting"
    assert gen.throw(KeyError("x")) == ("caught", "in-gen")
    gen.close()
    assert api.current() is None
    assert list(spanfold.context(tags=["t"])(lambda: (yield from [1, 2]))()) == [1, 2]


async def test_an_async_generator_runs_in_the_context_its_consumer_does_not() -> None:
    @spanfold.context(user_id="in-agen")
    async def items() -> AsyncIterator[Any]:
        for _ in range(2):
            await asyncio.sleep(0)
            yield api.values().get("user_id")

    seen = []
    async for user in items():
        seen.append((user, api.current()))
    assert seen == [("in-agen", None), ("in-agen", None)]


async def test_asyncio_tasks_inherit_the_context_and_keep_their_own() -> None:
    async def in_task(user: str) -> tuple[Any, Any]:
        outer = api.values().get("session_id")
        async with spanfold.context(user_id=user):
            await asyncio.sleep(0.01)
            return outer, api.values()

    async with spanfold.context(session_id="s"):
        results = await asyncio.gather(*(asyncio.create_task(in_task(f"u{k}")) for k in range(3)))
    assert results == [("s", {"user_id": f"u{k}", "session_id": "s"}) for k in range(3)]


# --- checked, with errors that name the argument ----------------------------------------------------------------------

INVALID: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"user_id": 42}, TypeError, "user_id must be a string, not int"),
    ({"user_id": ""}, ValueError, "user_id is empty"),
    ({"user_id": "u" * 257}, ValueError, "user_id is 257 characters long; at most 256"),
    ({"session_id": ["s"]}, TypeError, "session_id must be a string, not list"),
    ({"session_id": "s" * 300}, ValueError, "session_id is 300 characters long; at most 256"),
    ({"tags": "beta"}, TypeError, "tags must be a list of strings, not str"),
    ({"tags": {"a": 1}}, TypeError, "tags must be a list of strings, not dict"),
    ({"tags": ["ok", 3]}, TypeError, "tags[1] must be a string, not int"),
    ({"tags": ["t" * 129]}, ValueError, "tags[0] is 129 characters long; at most 128"),
    ({"tags": [f"t{i}" for i in range(65)]}, ValueError, "tags: 65 tags; at most 64"),
    ({"metadata": [("k", "v")]}, TypeError, "metadata must be a mapping (a dict), not list"),
    ({"metadata": {1: "v"}}, TypeError, "metadata keys must be strings, not int (1)"),
    ({"metadata": {"": "v"}}, ValueError, "metadata key '' is empty"),
    ({"metadata": {"k": None}}, TypeError, "metadata['k'] must be a str, bool, int or float, not NoneType"),
    ({"metadata": {"k": {"nested": 1}}}, TypeError, "metadata['k'] must be a str, bool, int or float, not dict"),
    ({"metadata": {"k": "v" * 1025}}, ValueError, "metadata['k'] is 1025 characters long; at most 1024"),
    ({"metadata": {"k": float("nan")}}, ValueError, "metadata['k'] is nan; a finite number is expected"),
    ({"metadata": {"k": 2**63}}, ValueError, "metadata['k'] does not fit in 64 bits"),
    ({"metadata": {f"k{i}": i for i in range(33)}}, ValueError, "metadata: 33 keys; at most 32"),
    ({"prompt": ["p", "v1"]}, TypeError, "prompt must be a name or a (name, version) tuple, not list of 2"),
    ({"prompt": ("p", "v1", "x")}, TypeError, "prompt must be a name or a (name, version) tuple, not tuple of 3"),
    ({"prompt": ("p", 1.5)}, TypeError, "prompt version must be a string or an integer, not float"),
    ({"prompt": ("", "v1")}, ValueError, "prompt name is empty"),
]


@pytest.mark.parametrize(("kwargs", "kind", "message"), INVALID, ids=[m for _, _, m in INVALID])
def test_an_invalid_value_is_refused_with_an_error_naming_it(
    kwargs: dict[str, Any], kind: type[Exception], message: str
) -> None:
    with pytest.raises(kind) as raised:
        spanfold.context(**kwargs)
    assert str(raised.value) == f"spanfold.context: {message}"
    with pytest.raises(kind):  # spanfold.agent checks them alike
        spanfold.agent("a", **kwargs)


def test_the_bounds_count_the_enclosing_contexts_values() -> None:
    with spanfold.context(tags=[f"a{i}" for i in range(40)], metadata={f"k{i}": i for i in range(20)}):
        too_many = r"^spanfold.context: tags: 70 with the enclosing contexts'; at most 64$"
        with pytest.raises(ValueError, match=too_many), spanfold.context(tags=[f"b{i}" for i in range(30)]):
            pass
        too_many = "metadata: 33 keys with the enclosing contexts'; at most 32"
        with pytest.raises(ValueError, match=too_many), spanfold.context(metadata={f"m{i}": i for i in range(13)}):
            pass
        with spanfold.context(metadata={f"k{i}": -i for i in range(12)}):  # the same keys: no more of them
            assert len(api.values()["metadata"]) == 20
        assert len(api.values()["tags"]) == 40  # a refused context left nothing behind


def test_the_values_accepted_at_the_bounds() -> None:
    spanfold.context(
        user_id="u" * 256,
        session_id="s" * 256,
        tags=["t" * 128] * 64,
        metadata={f"k{i}": "v" * 1024 for i in range(31)} | {"b": True},
        prompt=("p" * 256, "v" * 256),
    )


# --- the span processor -----------------------------------------------------------------------------------------------


@pytest.fixture
def spans() -> Iterator[tuple[Any, InMemorySpanExporter]]:
    """A TracerProvider of the test's own with the context processor (as a user of their own provider adds it)."""
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(ContextSpanProcessor())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("test"), exporter
    provider.shutdown()


def _attrs(exporter: InMemorySpanExporter) -> dict[str, dict[str, Any]]:
    return {s.name: dict(s.attributes or {}) for s in exporter.get_finished_spans()}


def test_every_span_started_inside_carries_the_values(spans: tuple[Any, InMemorySpanExporter]) -> None:
    tracer, exporter = spans
    with tracer.start_as_current_span("before"):
        pass
    with spanfold.context(
        user_id="u-42", session_id="chat-7", tags=["beta"], metadata={"tenant": "acme", "n": 2}, prompt=("p", "v3")
    ):
        with tracer.start_as_current_span("outer"), tracer.start_as_current_span("inner"):
            pass
        with tracer.start_as_current_span("own", attributes={"gen_ai.conversation.id": "thread-1"}):
            pass
        nested = {"gen_ai.operation.name": "invoke_agent", "gen_ai.invocation.is_nested": True}
        with tracer.start_as_current_span("nested agent", attributes=nested):
            pass
    got = _attrs(exporter)
    assert got["before"] == {}
    expected = {
        "user.id": "u-42",
        "session.id": "chat-7",
        "gen_ai.conversation.id": "chat-7",
        "tag.tags": ("beta",),
        "langfuse.trace.tags": ("beta",),
        "gen_ai.prompt.name": "p",
        "gen_ai.prompt.version": "v3",
        "metadata": '{"tenant":"acme","n":2}',
        "langfuse.trace.metadata.tenant": "acme",
        "langfuse.trace.metadata.n": 2,
    }
    assert got["outer"] == expected
    assert got["inner"] == expected
    assert got["own"] == {**expected, "gen_ai.conversation.id": "thread-1"}  # a span's own conversation is kept
    assert got["nested agent"] == {k: v for k, v in expected.items() if k != "gen_ai.conversation.id"} | nested


def test_capture_off_keeps_ids_tags_and_prompt_and_drops_the_metadata(
    spans: tuple[Any, InMemorySpanExporter],
) -> None:
    tracer, exporter = spans
    runtime.activate(runtime.Runtime(capture_content=False))
    try:
        values = {"user_id": "u", "session_id": "s", "tags": ["t"], "metadata": {"secret": "x"}, "prompt": "p"}
        with spanfold.context(**values), tracer.start_as_current_span("off"):
            pass
    finally:
        runtime.activate(None)
    assert _attrs(exporter)["off"] == {
        "user.id": "u",
        "session.id": "s",
        "gen_ai.conversation.id": "s",
        "tag.tags": ("t",),
        "langfuse.trace.tags": ("t",),
        "gen_ai.prompt.name": "p",
    }


def test_redaction_applies_to_metadata_values(spans: tuple[Any, InMemorySpanExporter]) -> None:
    tracer, exporter = spans
    runtime.activate(runtime.Runtime(capture_content=True, redaction=from_option(True)))
    try:
        with spanfold.context(metadata={"contact": "write to jane.doe@example.com"}), tracer.start_as_current_span("r"):
            pass
    finally:
        runtime.activate(None)
    got = _attrs(exporter)["r"]
    assert "jane.doe@example.com" not in json.dumps(got)
    assert json.loads(got["metadata"])["contact"] == got["langfuse.trace.metadata.contact"]


def test_a_context_costs_nothing_to_spans_started_outside(spans: tuple[Any, InMemorySpanExporter]) -> None:
    tracer, exporter = spans
    token = otel_context.attach(otel_context.set_value(api.KEY, "not a run context"))
    try:
        with tracer.start_as_current_span("foreign value"):
            pass
    finally:
        otel_context.detach(token)
    assert _attrs(exporter)["foreign value"] == {}

"""``spanfold.context`` end to end: the real ``openai`` SDK over HTTP to the embedded mock server, the weather agent's
tool loop (its tools ``@spanfold.tool`` functions), folded by ``spanfold.init()`` into trace files. Each value is
asserted in the run's metadata line and on the spans; sync, asyncio tasks, threads and a thread pool (one trace), a
zero-code run, nested contexts, capture off, the AgentV formats, another producer's values (OpenInference) and
``spanfold summary --by``."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest
from click.testing import CliRunner

import spanfold
from spanfold.cli import main
from spanfold.testing import WEATHER, MockLLMServer, scenarios

from ..conftest import EXPECTED_SHAPE, Traced, in_threads, shape, traced_into
from ..semconv.names_check import unlisted

MODEL = "gpt-4o-mini"
TOOLS = scenarios.WEATHER_TOOLS_OPENAI
#: The keys spanfold.context adds to a run's metadata line.
CONTEXT_KEYS = ("user_id", "session_id", "tags", "metadata", "prompt")

Message = dict[str, Any]
Runner = Callable[[Callable[[Any], str], list[Any]], list[str]]


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer(scenarios.weather_agent) as srv:
        yield srv


def client_for(server: MockLLMServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="test-key", base_url=server.base_url, max_retries=0)


def one_by_one(run: Callable[[Any], str], calls: list[Any]) -> list[str]:
    return [run(call) for call in calls]


def ask(client: openai.OpenAI, run_tools: Runner = one_by_one, *, between: Callable[[int], Any] | None = None) -> str:
    """The weather agent's loop: call the model, run the tools it asks for (``run_tools``), send the results back.
    ``between(n)``: a context to make the n-th model call in (None: none)."""
    messages: list[Any] = [{"role": "system", "content": WEATHER.system}, {"role": "user", "content": WEATHER.question}]
    for n in range(6):
        scope = between(n) if between is not None else None
        if scope is not None:
            with scope:
                reply = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        else:
            reply = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        messages.append(message)
        if not message.tool_calls:
            return str(message.content)

        def run(call: Any) -> str:
            return WEATHER.run_tool(call.function.name, call.function.arguments, call.id)

        for call, result in zip(message.tool_calls, run_tools(run, list(message.tool_calls)), strict=True):
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise AssertionError("no answer")


async def ask_async(client: openai.AsyncOpenAI) -> str:
    messages: list[Any] = [{"role": "system", "content": WEATHER.system}, {"role": "user", "content": WEATHER.question}]
    for _ in range(6):
        message = (await client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)).choices[0].message
        messages.append(message)
        if not message.tool_calls:
            return str(message.content)
        for call in message.tool_calls:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": WEATHER.run_tool(call.function.name, call.function.arguments, call.id),
                }
            )
    raise AssertionError("no answer")


def context_of(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: meta["metadata"][k] for k in CONTEXT_KEYS if k in meta["metadata"]}


def metas(traced: Traced) -> list[dict[str, Any]]:
    assert spanfold.flush(timeout=30)
    return traced.metas()


def by_trace(spans: Any) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = defaultdict(list)
    for span in spans.get_finished_spans():
        out[span.context.trace_id].append(span)
    return out


def kinds(spans: list[Any]) -> list[str]:
    return sorted(s.name.partition(" ")[0] for s in spans)


RUN_ATTRIBUTES = {
    "user.id": "u-42",
    "session.id": "chat-7",
    "tag.tags": ("beta", "eu"),
    "langfuse.trace.tags": ("beta", "eu"),
    "gen_ai.prompt.name": "weather-answer",
    "gen_ai.prompt.version": "v3",
    "metadata": '{"tenant":"acme","plan":"pro"}',
    "langfuse.trace.metadata.tenant": "acme",
    "langfuse.trace.metadata.plan": "pro",
    "gen_ai.conversation.id": "chat-7",
}


def test_a_run_s_context_is_in_its_metadata_line_and_on_every_span(
    traced: Traced, global_spans: Any, server: MockLLMServer
) -> None:
    with spanfold.context(session_id="chat-7", tags=["beta"], metadata={"tenant": "acme"}):  # noqa: SIM117
        with spanfold.agent(
            "weather", user_id="u-42", tags=["eu"], metadata={"plan": "pro"}, prompt=("weather-answer", "v3")
        ):
            ask(client_for(server))
    assert shape(traced.one()) == EXPECTED_SHAPE  # the fold is the same with a context open
    (meta,) = metas(traced)
    assert context_of(meta) == {
        "user_id": "u-42",
        "session_id": "chat-7",
        "tags": ["beta", "eu"],
        "metadata": {"tenant": "acme", "plan": "pro"},
        "prompt": {"name": "weather-answer", "version": "v3"},
    }
    assert meta["metadata"]["conversation_id"] == "chat-7"
    spans = global_spans.get_finished_spans()
    assert kinds(spans) == ["chat", "chat", "chat", "execute_tool", "execute_tool", "execute_tool", "invoke_agent"]
    for span in spans:
        assert {k: (span.attributes or {}).get(k) for k in RUN_ATTRIBUTES} == RUN_ATTRIBUTES, span.name
    assert unlisted(spans) == set()  # every name written is in the table of written names


def test_a_tool_loop_whose_tools_run_in_a_thread_pool_is_one_trace(
    traced: Traced, global_spans: Any, server: MockLLMServer
) -> None:
    assert traced.handle.threads  # init() carries the context into threads (spanfold.instrumentation.threads)
    pools_before = {t.name for t in threading.enumerate() if t.name.startswith("ThreadPoolExecutor")}

    def in_pool(run: Callable[[Any], str], calls: list[Any]) -> list[str]:
        return list(pool.map(run, calls))

    with ThreadPoolExecutor(max_workers=4) as pool, spanfold.agent("weather", user_id="u-pool", session_id="s-pool"):
        ask(client_for(server), in_pool)
    assert shape(traced.one()) == EXPECTED_SHAPE
    (meta,) = metas(traced)
    assert context_of(meta) == {"user_id": "u-pool", "session_id": "s-pool"}
    (spans,) = by_trace(global_spans).values()
    assert kinds(spans) == ["chat", "chat", "chat", "execute_tool", "execute_tool", "execute_tool", "invoke_agent"]
    (root,) = [s for s in spans if s.parent is None]
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    assert {s.parent.span_id for s in tools} == {root.context.span_id}
    assert {(s.attributes or {}).get("user.id") for s in spans} == {"u-pool"}
    # the pool is gone: nothing of spanfold's keeps its threads (an earlier test's pool may live on: not this one's)
    pool_threads = {t.name for t in threading.enumerate() if t.name.startswith("ThreadPoolExecutor")} - pools_before
    assert pool_threads == set()


def test_without_the_threading_instrumentation_the_pool_splits_the_run(
    tmp_path: Path, _global_provider: Any, server: MockLLMServer
) -> None:
    """What ``threads`` (on by default) prevents: each tool run in the pool is a trace of its own."""
    with traced_into(tmp_path / "traces", threads=False) as traced:
        assert not traced.handle.threads
        with ThreadPoolExecutor(max_workers=4) as pool, spanfold.agent("weather", user_id="u"):
            ask(client_for(server), lambda run, calls: list(pool.map(run, calls)))
        assert len(traced.traces()) == 4  # the agent's run, and each of its three tool runs alone


def test_a_thread_started_inside_a_context_carries_it(traced: Traced, global_spans: Any, server: MockLLMServer) -> None:
    def in_threads_of_their_own(run: Callable[[Any], str], calls: list[Any]) -> list[str]:
        results: list[str] = [""] * len(calls)

        def body(k: int) -> None:
            results[k] = run(calls[k])

        threads = [threading.Thread(target=body, args=(k,)) for k in range(len(calls))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results

    with spanfold.context(user_id="u-thread", tags=["threads"]), spanfold.agent("weather"):
        ask(client_for(server), in_threads_of_their_own)
    assert shape(traced.one()) == EXPECTED_SHAPE
    (meta,) = metas(traced)
    assert context_of(meta) == {"user_id": "u-thread", "tags": ["threads"]}
    (spans,) = by_trace(global_spans).values()
    assert {(s.attributes or {}).get("user.id") for s in spans} == {"u-thread"}


def test_concurrent_users_in_threads_keep_their_own_values(
    traced: Traced, global_spans: Any, server: MockLLMServer
) -> None:
    def user(k: int) -> None:
        with spanfold.context(user_id=f"u{k}", tags=[f"t{k}"]), spanfold.agent("weather", session_id="shared"):
            ask(client_for(server))

    in_threads(user, 4)
    runs = metas(traced)
    assert sorted((m["metadata"]["user_id"], tuple(m["metadata"]["tags"])) for m in runs) == [
        (f"u{k}", (f"t{k}",)) for k in range(4)
    ]
    assert {m["metadata"]["session_id"] for m in runs} == {"shared"}
    for spans in by_trace(global_spans).values():  # never one user's value on another user's span
        assert len(spans) == 7
        assert len({((s.attributes or {})["user.id"], (s.attributes or {})["tag.tags"]) for s in spans}) == 1


async def test_asyncio_tasks_each_with_its_own_user(traced: Traced, global_spans: Any, server: MockLLMServer) -> None:
    client = openai.AsyncOpenAI(api_key="test-key", base_url=server.base_url, max_retries=0)

    async def user(k: int) -> None:
        async with spanfold.agent("weather", user_id=f"u{k}"):
            await asyncio.sleep(0.01 * (3 - k))
            await ask_async(client)

    async with spanfold.context(session_id="s-async", tags=["async"]):
        await asyncio.gather(*(asyncio.create_task(user(k)) for k in range(3)))
    await client.close()
    runs = metas(traced)
    assert sorted(context_of(m)["user_id"] for m in runs) == ["u0", "u1", "u2"]
    for m in runs:
        assert context_of(m) == {"user_id": context_of(m)["user_id"], "session_id": "s-async", "tags": ["async"]}
    for spans in by_trace(global_spans).values():
        assert len(spans) == 7
        assert len({(s.attributes or {})["user.id"] for s in spans}) == 1


def test_a_zero_code_run_inside_a_context(traced: Traced, global_spans: Any, server: MockLLMServer) -> None:
    """No agent span: the run's calls and tool runs are stitched into one trace, and carry the context."""
    with spanfold.context(user_id="u-zc", session_id="s-zc", prompt="weather-answer"):
        ask(client_for(server))
    assert shape(traced.one()) == EXPECTED_SHAPE
    (meta,) = metas(traced)
    assert context_of(meta) == {"user_id": "u-zc", "session_id": "s-zc", "prompt": {"name": "weather-answer"}}
    assert meta["metadata"]["conversation_id"] == "s-zc"
    (spans,) = by_trace(global_spans).values()
    assert {(s.attributes or {}).get("gen_ai.conversation.id") for s in spans} == {"s-zc"}


def test_nested_contexts_inside_a_run(traced: Traced, global_spans: Any, server: MockLLMServer) -> None:
    """An inner context (the second model call's) wins on its spans; the run's metadata keeps the run's own values
    (the first span that names a user, session or prompt) and adds what the inner one adds (tags, metadata keys)."""

    def second_call(n: int) -> Any:
        return (
            spanfold.context(user_id="u-inner", tags=["retry"], metadata={"attempt": 2, "plan": "pro"})
            if n == 1
            else None
        )

    with spanfold.agent("weather", user_id="u-outer", tags=["a"], metadata={"attempt": 1}):
        ask(client_for(server), between=second_call)
    (meta,) = metas(traced)
    assert context_of(meta) == {
        "user_id": "u-outer",
        "tags": ["a", "retry"],
        "metadata": {"attempt": 1, "plan": "pro"},
    }
    chats = sorted(
        (s for s in global_spans.get_finished_spans() if s.name.startswith("chat")), key=lambda s: s.start_time
    )
    got = [
        ((s.attributes or {})["user.id"], (s.attributes or {})["tag.tags"], (s.attributes or {})["metadata"])
        for s in chats
    ]
    assert got == [
        ("u-outer", ("a",), '{"attempt":1}'),
        ("u-inner", ("a", "retry"), '{"attempt":2,"plan":"pro"}'),
        ("u-outer", ("a",), '{"attempt":1}'),
    ]


def test_capture_off_keeps_ids_tags_and_prompt_never_the_metadata(
    traced_off: Traced, global_spans: Any, server: MockLLMServer
) -> None:
    values = {"user_id": "u", "session_id": "s", "tags": ["t"], "metadata": {"secret": "do not write"}}
    with spanfold.context(**values, prompt=("p", 2)), spanfold.agent("weather"):
        ask(client_for(server))
    (meta,) = metas(traced_off)
    assert context_of(meta) == {
        "user_id": "u",
        "session_id": "s",
        "tags": ["t"],
        "prompt": {"name": "p", "version": "2"},
    }
    spans = global_spans.get_finished_spans()
    assert len(spans) == 7
    for span in spans:
        keys = set(span.attributes or {})
        assert {"user.id", "session.id", "tag.tags", "gen_ai.prompt.name"} <= keys
        assert not [k for k in keys if k == "metadata" or k.startswith("langfuse.trace.metadata")]
    written = (traced_off.directory / "traces.jsonl").read_text() + (
        traced_off.directory / "traces.meta.jsonl"
    ).read_text()
    assert "do not write" not in written


def test_the_agentv_formats_carry_them(tmp_path: Path, _global_provider: Any, server: MockLLMServer) -> None:
    context = {"user_id": "u-42", "session_id": "chat-7", "tags": ["beta"], "metadata": {"tenant": "acme"}}
    for fmt in ("agentv", "agentv-transcript"):
        with traced_into(tmp_path / fmt, format=fmt):
            with spanfold.context(**context, prompt=("weather-answer", "v3")), spanfold.agent("weather"):
                ask(client_for(server))
            assert spanfold.flush(timeout=30)
        (path,) = (tmp_path / fmt).glob("*.jsonl")
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        expected = {**context, "prompt": {"name": "weather-answer", "version": "v3"}}
        if fmt == "agentv":
            (document,) = lines
            assert {k: document["metadata"][k] for k in CONTEXT_KEYS} == expected
        else:
            assert len(lines) == 5  # one row per message (each tool output inside its call)
            for row in lines:
                assert {k: row["source"]["metadata"][k] for k in CONTEXT_KEYS} == expected
                assert row["source"]["session_id"] != "chat-7"  # the run's id: one transcript per run
        result = CliRunner().invoke(main, ["summary", "--by", "user", "--json", str(path)])
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["user"] == "u-42"  # read back from the file


def test_another_producer_s_values_are_read(tmp_path: Path, _global_provider: Any, _global_exporter: Any) -> None:
    """OpenInference's ``using_attributes`` (session, user, tags, metadata) on its own spans, folded."""
    from openinference.instrumentation import using_attributes

    from ..bridge.producers import Harness, chat_agent, instrumented, plain_tool

    harness = Harness(_global_provider, _global_exporter)
    from openinference.instrumentation.openai import OpenAIInstrumentor

    values = {"session_id": "oi-s", "user_id": "oi-u", "tags": ["oi", "x"], "metadata": {"k": "v", "n": [1, 2]}}
    with (
        instrumented(OpenAIInstrumentor(), tracer_provider=harness.provider),
        harness.run() as run,
        using_attributes(**values),
    ):
        chat_agent(run.openai_client(), plain_tool, run.history)
    meta = run.fold().meta
    assert meta.context() == {
        "user_id": "oi-u",
        "session_id": "oi-s",
        "tags": ["oi", "x"],
        "metadata": {"k": "v", "n": [1, 2]},
    }


def test_summary_by_user_session_tag_and_prompt(tmp_path: Path, _global_provider: Any, server: MockLLMServer) -> None:
    """A session of three runs for two users, as ``spanfold summary --by`` groups it."""
    runs = [
        ("alice", ["beta"], ("weather-answer", "v3")),
        ("bob", ["beta", "eu"], ("weather-answer", "v4")),
        ("alice", [], None),
    ]
    with traced_into(tmp_path / "traces") as traced:
        for user, tags, prompt in runs:
            with (
                spanfold.context(user_id=user, session_id="chat-7", tags=tags, prompt=prompt),
                spanfold.agent("weather"),
            ):
                ask(client_for(server))
        with spanfold.agent("weather"):  # a run that names no one
            ask(client_for(server))
        assert spanfold.flush(timeout=30)
    runner = CliRunner()

    def groups(by: str) -> dict[Any, dict[str, Any]]:
        result = runner.invoke(main, ["summary", "--by", by, "--json", str(traced.directory)])
        assert result.exit_code == 0, result.output
        rows = [json.loads(line) for line in result.output.splitlines()]
        assert {r["by"] for r in rows} == {by}
        return {r[by]: r for r in rows}

    users = groups("user")
    assert {k: v["runs"] for k, v in users.items()} == {"alice": 2, "bob": 1, None: 1}
    per_run = users["bob"]["usage"]
    assert per_run["input_tokens"] > 0 and per_run["output_tokens"] > 0
    assert users["alice"]["usage"] == {k: 2 * v for k, v in per_run.items()}  # the same run twice
    assert users["alice"]["tool_calls"] == 6 and users["alice"]["failed"] == 0 and users["alice"]["errors"] == 0
    assert {k: v["runs"] for k, v in groups("session").items()} == {"chat-7": 3, None: 1}
    assert {k: v["runs"] for k, v in groups("tag").items()} == {"beta": 2, "eu": 1, None: 2}
    assert {k: v["runs"] for k, v in groups("prompt").items()} == {
        "weather-answer@v3": 1,
        "weather-answer@v4": 1,
        None: 2,
    }

    table = runner.invoke(main, ["summary", "--by", "user", str(traced.directory)], env={"COLUMNS": "100"})
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    assert lines[0].split() == ["USER", "RUNS", "FAILED", "ERRORS", "CALLS", "TOKENS", "IN/OUT", "COST"]
    assert [line.split()[:5] for line in lines[1:4]] == [
        ["alice", "2", "0", "0", "6"],
        ["bob", "1", "0", "0", "3"],
        ["(none)", "1", "0", "0", "3"],
    ]
    assert lines[4].startswith("4 traces, 12 tool calls, 0 errors")
    print(table.output)

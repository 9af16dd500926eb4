"""Gemini (google-genai), folded: the real SDK over real HTTP to the embedded mock server (Developer API and Vertex AI
paths), ``spanfold.init()``, the Invariant trace asserted event by event. Gemini function calls carry no id here (as
the Developer API sends them): the fold gives each call an id of its own and pairs tool runs and results with it by
name and order (``made_ids`` checks the made ids and renumbers them ``made-1`` ...)."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
from pathlib import Path
from typing import Any

import openai
import pytest
from click.testing import CliRunner
from google import genai
from google.genai import types

import spanfold
from spanfold.cli import main
from spanfold.testing import WEATHER, MockLLMServer, Reply, ToolCallSpec, run_agent, scenarios
from spanfold.testing.agents import PROVIDERS

from ..conftest import EXPECTED_SHAPE, shape
from ..e2e.provider_specs import made_ids
from .gemini_afc_tools import aget_weather, convert_temperature, failing_get_weather, get_weather

MODEL = PROVIDERS["gemini"].model
SYSTEM = WEATHER.system
QUESTION = WEATHER.question
ANSWER = "Here is the weather: Paris: 18°C, sunny; Tokyo: 24°C, cloudy. In Fahrenheit: 18°C is 64.4°F."


#: Clients stay referenced for the test: a ``genai.Client`` closes its HTTP client when collected, even while one of
#: its ``models`` is in use (``client_for(server).models.generate_content(...)`` would fail).
_CLIENTS: list[genai.Client] = []


def client_for(server: MockLLMServer, *, vertex: bool = False) -> genai.Client:
    client = _client(server, vertex=vertex)
    _CLIENTS.append(client)
    return client


def _client(server: MockLLMServer, *, vertex: bool = False) -> genai.Client:
    if vertex:  # Vertex AI with dummy credentials: the project path, a bearer token, no network
        from google.oauth2.credentials import Credentials

        return genai.Client(
            vertexai=True,
            project="demo-project",
            location="us-central1",
            credentials=Credentials(token="dummy-token"),
            http_options={"base_url": server.gemini_base_url},
        )
    return genai.Client(api_key="gemini-secret", http_options={"base_url": server.gemini_base_url})


def call(n: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"made-{n}", "type": "function", "function": {"name": name, "arguments": arguments}}


WEATHER_EVENTS: list[dict[str, Any]] = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": QUESTION},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call(1, "get_weather", {"city": "Paris"}), call(2, "get_weather", {"city": "Tokyo"})],
    },
    {"role": "tool", "content": "Paris: 18°C, sunny", "tool_call_id": "made-1"},
    {"role": "tool", "content": "Tokyo: 24°C, cloudy", "tool_call_id": "made-2"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call(3, "convert_temperature", {"celsius": 18, "to": "fahrenheit"})],
    },
    {"role": "tool", "content": "18°C is 64.4°F", "tool_call_id": "made-3"},
    {"role": "assistant", "content": ANSWER},
]


#: google-genai before 3.0 reads string annotations (``from __future__ import annotations``, as in spanfold.testing) as
#: no type, and its streamed automatic function calling sends a different history: seen without spanfold as well.
SDK_3 = int(genai.__version__.split(".")[0]) >= 3

AFC = types.GenerateContentConfig(system_instruction=SYSTEM, tools=[get_weather, convert_temperature])


# --- the weather agent, written by hand (tools run by the agent) ------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("vertex", [False, True], ids=["developer", "vertex"])
def test_weather_agent(traced: Any, server: MockLLMServer, stream: bool, vertex: bool) -> None:
    with spanfold.agent("gemini-weather"):
        answer = run_agent("gemini", client_for(server, vertex=vertex), stream=stream)
    assert answer == ANSWER
    events = traced.one()
    assert made_ids(events) == WEATHER_EVENTS
    assert shape(events) == EXPECTED_SHAPE
    meta = traced.metas()[0]["metadata"]
    assert meta["models"] == [MODEL]
    assert meta["usage"]["input_tokens"] > 0
    if vertex:
        assert server.last_request.path.startswith("/v1beta1/projects/demo-project/locations/us-central1/")
        assert server.last_request.headers["authorization"] == "Bearer dummy-token"


def test_demo_command(tmp_path: Path, _global_provider: Any) -> None:
    for stream in (False, True):
        out = tmp_path / str(stream)
        result = CliRunner().invoke(main, ["demo", "--provider", "gemini", "-o", str(out)] + (["--stream"] * stream))
        assert result.exit_code == 0, result.output
        (line,) = (out / "traces.jsonl").read_text(encoding="utf-8").splitlines()
        assert made_ids(json.loads(line)) == WEATHER_EVENTS
        assert ANSWER in result.output


def test_single_call_and_finish(traced: Any, server: MockLLMServer) -> None:
    server.script(Reply.text("Hello there."))
    client_for(server).models.generate_content(model=MODEL, contents="Hi!")
    assert traced.one() == [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello there."}]


async def test_async_agent_and_async_stream(traced: Any, server: MockLLMServer) -> None:
    aclient = client_for(server).aio
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=QUESTION)])]
    config = types.GenerateContentConfig(
        system_instruction=SYSTEM,
        tools=scenarios.WEATHER_TOOLS_GEMINI,  # type: ignore[arg-type]
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    async with spanfold.agent("gemini-async"):
        for step in range(4):
            if step % 2:
                parts = [
                    p
                    async for chunk in await aclient.models.generate_content_stream(
                        model=MODEL, contents=contents, config=config
                    )
                    for p in chunk.candidates[0].content.parts
                ]
            else:
                response = await aclient.models.generate_content(model=MODEL, contents=contents, config=config)
                parts = response.candidates[0].content.parts
            contents.append(types.Content(role="model", parts=parts))
            calls = [p.function_call for p in parts if p.function_call]
            if not calls:
                break
            results = [scenarios.run_weather_tool(c.name, c.args) for c in calls]
            contents.append(
                types.Content(
                    role="user",
                    parts=[
                        types.Part.from_function_response(name=c.name, response={"result": r})
                        for c, r in zip(calls, results, strict=True)
                    ],
                )
            )
    assert made_ids(traced.one()) == WEATHER_EVENTS


# --- automatic function calling: the SDK runs the functions ---------------------------------------------------


def _afc_events(events: list[dict[str, Any]]) -> None:
    assert made_ids(events) == WEATHER_EVENTS


def test_afc_generate_content(traced: Any, server: MockLLMServer, global_spans: Any) -> None:
    with spanfold.agent("afc"):
        response = client_for(server).models.generate_content(model=MODEL, contents=QUESTION, config=AFC)
    assert response.text == ANSWER
    _afc_events(traced.one())
    spans = global_spans.get_finished_spans()
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    assert [s.attributes["gen_ai.tool.call.arguments"] for s in tools] == [
        '{"city":"Paris"}',
        '{"city":"Tokyo"}',
        '{"celsius":18,"to":"fahrenheit"}',
    ]
    assert [s.attributes["gen_ai.tool.call.result"] for s in tools] == [
        "Paris: 18°C, sunny",
        "Tokyo: 24°C, cloudy",
        "18°C is 64.4°F",
    ]
    chats = [s for s in spans if s.name == f"chat {MODEL}"]
    assert len(chats) == 3  # every model turn the SDK made, not only the last
    definitions = json.loads(str(chats[0].attributes["gen_ai.tool.definitions"]))
    assert definitions[0] == {"type": "function", "name": "get_weather"}  # the required fields, by default


@pytest.mark.skipif(not SDK_3, reason="google-genai < 3 streams AFC differently (without spanfold too)")
def test_afc_stream(traced: Any, server: MockLLMServer) -> None:
    with spanfold.agent("afc"):
        chunks = list(client_for(server).models.generate_content_stream(model=MODEL, contents=QUESTION, config=AFC))
    assert "".join(c.text or "" for c in chunks if c.candidates[0].content.parts[0].text) == ANSWER
    _afc_events(traced.one())


def test_afc_chat_send_message_and_stream(traced: Any, server: MockLLMServer) -> None:
    with spanfold.agent("chat"):
        chat = client_for(server).chats.create(model=MODEL, config=AFC)
        assert chat.send_message(QUESTION).text == ANSWER
    _afc_events(traced.one())


async def test_afc_async_chat(traced: Any, server: MockLLMServer) -> None:
    config = types.GenerateContentConfig(system_instruction=SYSTEM, tools=[aget_weather, convert_temperature])
    server.respond_with(lambda r: _rename(scenarios.weather_agent(r), "get_weather", "aget_weather"))
    async with spanfold.agent("achat"):
        chat = client_for(server).aio.chats.create(model=MODEL, config=config)
        response = await chat.send_message(QUESTION)
    assert response.text == ANSWER
    events = traced.one()
    assert [e["content"] for e in events if e["role"] == "tool"] == [
        "Paris: 18°C, sunny",
        "Tokyo: 24°C, cloudy",
        "18°C is 64.4°F",
    ]
    assert shape(events) == [(r, [n.replace("get_", "aget_") for n in c] if c else c) for r, c in EXPECTED_SHAPE]


def _rename(reply: Reply, old: str, new: str) -> Reply:
    calls = tuple(ToolCallSpec(new if c.name == old else c.name, c.arguments, c.id) for c in reply.tool_calls)
    return Reply(content=reply.content, tool_calls=calls) if calls else reply


def test_afc_tool_error_is_a_failed_tool_output(traced: Any, server: MockLLMServer) -> None:
    server.script(Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]), Reply.text("No data."))
    config = types.GenerateContentConfig(tools=[failing_get_weather])
    with spanfold.agent("afc"):
        client_for(server).models.generate_content(model=MODEL, contents="Paris?", config=config)
    events = traced.one()
    assert events[2]["role"] == "tool"
    assert events[2]["error"]["type"] == "RuntimeError"
    assert events[2]["content"] == "no station in Paris"
    assert events[3] == {"role": "assistant", "content": "No data."}
    sent = server.requests[1].body["contents"][2]["parts"][0]["functionResponse"]["response"]
    assert "no station in Paris" in sent["error"]  # the SDK's own handling is untouched


@pytest.mark.skipif(not SDK_3, reason="google-genai < 3 cannot run spanfold.testing's string-annotated tools")
def test_afc_function_already_a_spanfold_tool_is_traced_once(
    traced: Any, server: MockLLMServer, global_spans: Any
) -> None:
    config = types.GenerateContentConfig(system_instruction=SYSTEM, tools=list(WEATHER.tool_functions.values()))
    with spanfold.agent("afc"):
        client_for(server).models.generate_content(model=MODEL, contents=QUESTION, config=config)
    assert made_ids(traced.one()) == WEATHER_EVENTS
    assert len([s for s in global_spans.get_finished_spans() if s.name.startswith("execute_tool")]) == 3


# --- the scenario matrix: stitching, errors, streams, content off, concurrency, mixing ----------------------


def _untraced(fn: Any) -> Any:
    return lambda tool_call_id=None, **arguments: fn(**arguments)


def test_no_agent_and_no_tool_decorator_is_one_trace_per_run(traced: Any, server: MockLLMServer) -> None:
    client = client_for(server)
    plain = {tool.name: _untraced(tool.function) for tool in WEATHER.tools}
    run_agent("gemini", client, "Run 0: weather?", tools=plain)
    run_agent("gemini", client, "Run 1: weather?", tools=plain)
    traces = traced.traces()
    assert [t[1]["content"] for t in traces] == ["Run 0: weather?", "Run 1: weather?"]
    for events in traces:
        assert shape(events) == EXPECTED_SHAPE
        assert [e["content"] for e in events if e["role"] == "tool"] == [
            "Paris: 18°C, sunny",
            "Tokyo: 24°C, cloudy",
            "18°C is 64.4°F",
        ]


def test_afc_without_agent_is_one_trace(traced: Any, server: MockLLMServer) -> None:
    client_for(server).models.generate_content(model=MODEL, contents=QUESTION, config=AFC)
    assert made_ids(traced.one()) == WEATHER_EVENTS


@pytest.mark.parametrize("how", ["break", "close", "gc"])
def test_stream_left_early_ends_the_span(traced: Any, server: MockLLMServer, how: str) -> None:
    server.script(Reply.text("one two three four five six"))
    with spanfold.agent("bot"):
        stream = client_for(server).models.generate_content_stream(model=MODEL, contents="Count.")
        first = next(iter(stream))
        if how == "close":
            stream.close()
        del stream
        gc.collect()
    assert first.text == "one"
    events = traced.one()
    assert events == [{"role": "user", "content": "Count."}, {"role": "assistant", "content": "one"}]


def test_content_capture_off(tmp_path: Path, _global_provider: Any, server: MockLLMServer) -> None:
    spanfold.init(output=str(tmp_path), capture_content=False)
    try:
        with spanfold.agent("private-bot"):
            run_agent("gemini", client_for(server))
        with spanfold.agent("private-afc"):
            client_for(server).models.generate_content(model=MODEL, contents=QUESTION, config=AFC)
        spanfold.flush()
        text = (tmp_path / "traces.jsonl").read_text()
    finally:
        spanfold.shutdown()
    for line in text.splitlines():
        assert shape(json.loads(line)) == EXPECTED_SHAPE
    for needle in ("Paris", "Tokyo", "sunny", "°C", "weather assistant"):
        assert needle not in text


def test_concurrent_agents_in_threads_and_tasks_do_not_mix(traced: Any, server: MockLLMServer) -> None:
    client = client_for(server)
    errors_seen: list[BaseException] = []

    def run(n: int) -> None:
        try:
            with spanfold.agent(f"bot-{n}"):
                run_agent("gemini", client, f"Run {n}: weather?", stream=n % 2 == 1)
        except BaseException as exc:
            errors_seen.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    async def afc(n: int) -> None:
        async with spanfold.agent(f"task-{n}"):
            await client.aio.models.generate_content(model=MODEL, contents=f"Task {n}: weather?", config=AFC)

    async def tasks() -> None:
        await asyncio.gather(*(afc(n) for n in range(4)))

    asyncio.run(tasks())
    assert errors_seen == []
    traces = traced.traces()
    assert len(traces) == 8
    assert {t[1]["content"] for t in traces} == {f"Run {n}: weather?" for n in range(4)} | {
        f"Task {n}: weather?" for n in range(4)
    }
    for events in traces:
        assert shape(events) == EXPECTED_SHAPE
        assert [e["content"] for e in events if e["role"] == "tool"] == [
            "Paris: 18°C, sunny",
            "Tokyo: 24°C, cloudy",
            "18°C is 64.4°F",
        ]


def test_agent_mixing_gemini_and_openai(traced: Any, server: MockLLMServer) -> None:
    gpt = openai.OpenAI(api_key="sk-secret", base_url=server.base_url, max_retries=0)
    server.script(
        Reply.tools([ToolCallSpec("get_weather", {"city": "Paris"})]),
        Reply.text("Paris is sunny."),
        Reply.text("Paris est ensoleillé."),
    )
    config = types.GenerateContentConfig(system_instruction=SYSTEM, tools=[get_weather])
    with spanfold.agent("mixed"):
        answer = client_for(server).models.generate_content(model=MODEL, contents=QUESTION, config=config).text
        chat = gpt.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"Translate: {answer}"}]
        )
    assert made_ids(traced.one()) == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": None, "tool_calls": [call(1, "get_weather", {"city": "Paris"})]},
        {"role": "tool", "content": "Paris: 18°C, sunny", "tool_call_id": "made-1"},
        {"role": "assistant", "content": "Paris is sunny."},
        {"role": "user", "content": "Translate: Paris is sunny."},
        {"role": "assistant", "content": chat.choices[0].message.content},
    ]


def test_image_and_file_parts_in_the_flat_trace(traced: Any, server: MockLLMServer) -> None:
    server.script(Reply.text("A cat and a dog."))
    client_for(server).models.generate_content(
        model=MODEL,
        contents=[
            "What is this?",
            types.Part.from_bytes(data=b"\x89PNG", mime_type="image/png"),
            types.Part.from_uri(file_uri="gs://bucket/dog.jpg", mime_type="image/jpeg"),
        ],
    )
    assert traced.one() == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "image_url": "data:image/png;base64,iVBORw=="},
                {"type": "image", "image_url": "gs://bucket/dog.jpg"},
            ],
        },
        {"role": "assistant", "content": "A cat and a dog."},
    ]

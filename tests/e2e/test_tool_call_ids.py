"""Issue 36, the fold's part, on the real SDKs over real HTTP to the embedded mock server: every tool call has an id
and one output paired with it (Gemini and Ollama give none), on every fold path and in every format; a tool span
without a result keeps the output the next call sends (AutoGen's spans); OpenAI's ``developer`` role is ``system``;
an error's text is written once."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import openai
import pytest
from click.testing import CliRunner
from google import genai
from google.genai import types
from opentelemetry import trace as otel_trace
from opentelemetry.trace import SpanKind

import spanfold
from spanfold.cli import main
from spanfold.exporter.fold.folding import fold
from spanfold.exporter.records import from_readable
from spanfold.testing import WEATHER, MockLLMServer, Reply, ToolCallSpec, run_agent, scenarios
from spanfold.testing.agents import PROVIDERS
from spanfold.trace.compact import compact_messages
from spanfold.trace.formats import agentv_events

from ..bridge.conftest import collector_lines, otlp_json
from ..bridge.test_receiver import Served
from ..conftest import in_threads
from ..instrumentation.gemini_afc_tools import convert_temperature, get_weather
from .provider_specs import MADE_ID

OUTPUT_LINE = re.compile(r"tool +<- (\w+) \[(call_[0-9a-f]{16}_[0-9]+)\]: (.*?)(?:  \([0-9.]+ ms\))?$", re.M)
CALL_LINE = re.compile(r"-> (\w+)\(.*\) +\[(call_[0-9a-f]{16}_[0-9]+)\]")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("provider", ["gemini", "ollama"])
def test_demo_prints_each_output_with_its_tool_and_id(
    tmp_path: Path, _global_provider: Any, provider: str, stream: bool
) -> None:
    args = ["demo", "--provider", provider, "-o", str(tmp_path)] + ["--stream"] * stream
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    calls = CALL_LINE.findall(result.output)
    outputs = OUTPUT_LINE.findall(result.output)
    assert [name for name, _ in calls] == ["get_weather", "get_weather", "convert_temperature"]
    assert len({call_id for _, call_id in calls}) == 3
    assert outputs == [
        ("get_weather", calls[0][1], "Paris: 18°C, sunny"),
        ("get_weather", calls[1][1], "Tokyo: 24°C, cloudy"),
        ("convert_temperature", calls[2][1], "18°C is 64.4°F"),
    ]
    assert "<- tool" not in result.output


def _ids(events: list[dict[str, Any]]) -> tuple[list[str], list[str | None]]:
    calls = [c["id"] for e in events for c in e.get("tool_calls") or ()]
    return calls, [e.get("tool_call_id") for e in events if e["role"] == "tool"]


def test_every_fold_path_and_format_gives_the_same_ids(
    traced: Any, server: MockLLMServer, global_spans: Any, tmp_path: Path
) -> None:
    """In process, ``spanfold fold`` of the spans (Invariant and AgentV), the receiver, a fold of the records: the
    same made ids, each output paired with its call; AgentV and compact carry them too."""
    with spanfold.agent("weather-bot"):
        run_agent("gemini", PROVIDERS["gemini"].client(server))
    in_process = traced.one()
    calls, outputs = _ids(in_process)
    assert all(MADE_ID.fullmatch(c) for c in calls) and outputs == calls

    spans = list(global_spans.get_finished_spans())
    (tmp_path / "spans.jsonl").write_text(collector_lines(spans), encoding="utf-8")
    for fmt in ("invariant", "agentv"):
        out = tmp_path / fmt
        result = CliRunner().invoke(main, ["fold", str(tmp_path / "spans.jsonl"), "-o", str(out), "--format", fmt])
        assert result.exit_code == 0, result.output
        (line,) = next(p for p in out.iterdir() if not p.name.endswith(".meta.jsonl")).read_text().splitlines()
        if fmt == "invariant":
            assert json.loads(line) == in_process
        else:
            events = json.loads(line)["trace"]
            assert [e["id"] for e in events if e["type"] == "tool_call"] == calls
            results = [(e["id"], e["name"]) for e in events if e["type"] == "tool_result"]
            assert results == list(zip(calls, ["get_weather", "get_weather", "convert_temperature"], strict=True))

    served = Served(wait=60)
    status, _, _ = served.post(json.dumps(otlp_json(spans)).encode(), "application/json")
    assert status == 200
    assert served.stop() == [in_process]

    records = [from_readable(s) for s in spans]
    folded = fold(records, trace_id="t")
    assert folded.to_invariant() == in_process
    assert [e["id"] for e in agentv_events(folded) if e["type"] == "tool_result"] == calls
    compact = [c for m in compact_messages(folded) for c in m.get("tool_calls") or ()]
    assert [(c["id"], c["output"]) for c in compact] == [
        (calls[0], "Paris: 18°C, sunny"),
        (calls[1], "Tokyo: 24°C, cloudy"),
        (calls[2], "18°C is 64.4°F"),
    ]


def test_gemini_automatic_function_calling_shows_each_output_once(traced: Any, server: MockLLMServer) -> None:
    """The model gives its calls ids, the SDK runs the functions (each an ``execute_tool`` span) and sends the
    results back without them: one output per call, paired with the model's id."""
    calls = [
        ToolCallSpec("get_weather", {"city": "Paris"}, id="fc_1"),
        ToolCallSpec("get_weather", {"city": "Tokyo"}, id="fc_2"),
    ]
    server.script(Reply.tools(calls), Reply.text("Sunny and cloudy."))
    client = genai.Client(api_key="k", http_options={"base_url": server.gemini_base_url})
    config = types.GenerateContentConfig(tools=[get_weather, convert_temperature])
    with spanfold.agent("afc"):
        client.models.generate_content(model=PROVIDERS["gemini"].model, contents="Weather?", config=config)
    sent = server.requests[1].body["contents"][2]["parts"]
    assert all("id" not in part["functionResponse"] for part in sent)  # the SDK sends them back without ids
    events = traced.one()
    assert [(e["role"], e.get("tool_call_id"), e["content"]) for e in events[1:]] == [
        ("assistant", None, None),
        ("tool", "fc_1", "Paris: 18°C, sunny"),
        ("tool", "fc_2", "Tokyo: 24°C, cloudy"),
        ("assistant", None, "Sunny and cloudy."),
    ]
    assert _ids(events) == (["fc_1", "fc_2"], ["fc_1", "fc_2"])


def _autogen_tool_span(name: str, call_id: str, arguments: str) -> Any:
    """A tool span exactly as AutoGen's ``trace_tool_span`` makes it: name, call id and AutoGen's own arguments
    attribute, no result."""
    return otel_trace.get_tracer("autogen-core").start_as_current_span(
        f"execute_tool {name}",
        kind=SpanKind.INTERNAL,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.system": "autogen",
            "gen_ai.tool.name": name,
            "gen_ai.tool.description": "A weather tool.",
            "gen_ai.tool.call.id": call_id,
            "autogen.tool.arguments": arguments,
        },
    )


def test_autogen_tool_spans_without_results_keep_the_outputs_the_model_was_sent(
    traced: Any, server: MockLLMServer
) -> None:
    """AutoGen AgentChat runs the tools in spans of its own that carry no result; the model calls go through the
    openai SDK (spanfold's patch). Each output is the one the next call sends, at its tool span's place and time."""
    client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    agent = otel_trace.get_tracer("autogen-core").start_as_current_span(
        "invoke_agent weather_agent",
        kind=SpanKind.CLIENT,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.system": "autogen",
            "gen_ai.agent.name": "weather_agent",
        },
    )
    messages: list[Any] = [{"role": "system", "content": WEATHER.system}, {"role": "user", "content": WEATHER.question}]
    with agent:
        for _ in range(4):
            message = (
                client.chat.completions.create(
                    model=PROVIDERS["openai"].model, messages=messages, tools=scenarios.WEATHER_TOOLS_OPENAI
                )
                .choices[0]
                .message
            )
            messages.append(message)
            for call in message.tool_calls or ():
                with _autogen_tool_span(call.function.name, call.id, call.function.arguments):
                    result = scenarios.run_weather_tool(call.function.name, json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    events = traced.one()
    assert [(e.get("tool_call_id"), e["content"]) for e in events if e["role"] == "tool"] == [
        ("call_mock_1", "Paris: 18°C, sunny"),
        ("call_mock_2", "Tokyo: 24°C, cloudy"),
        ("call_mock_3", "18°C is 64.4°F"),
    ]
    assert traced.metas()[0]["metadata"]["name"] == "weather_agent"


def test_developer_messages_are_system_messages(traced: Any, server: MockLLMServer) -> None:
    """OpenAI's ``developer`` role (the o-series, Agno's ``OpenAIChat``) is the system prompt: written ``system``,
    the role the request had kept in the AgentV event's metadata."""
    server.script(Reply.text("Hi."))
    client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    client.chat.completions.create(
        model="o4-mini",
        messages=[{"role": "developer", "content": "Answer briefly."}, {"role": "user", "content": "Hello?"}],
    )
    assert server.last_request.body["messages"][0]["role"] == "developer"  # the request as the app sent it
    assert traced.one() == [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Hello?"},
        {"role": "assistant", "content": "Hi."},
    ]


def test_an_interrupted_tool_writes_its_error_once(traced: Any, server: MockLLMServer) -> None:
    """Ctrl-C in a tool: the OTel SDK describes the span's status as ``KeyboardInterrupt: `` (the exception has no
    text); the output and its error say ``KeyboardInterrupt`` once."""

    @spanfold.tool
    def get_weather(city: str) -> str:
        raise KeyboardInterrupt

    tools = {**WEATHER.tool_functions, "get_weather": get_weather}
    with pytest.raises(KeyboardInterrupt), spanfold.agent("bot"):
        run_agent("openai", PROVIDERS["openai"].client(server), tools=tools)
    output = [e for e in traced.one() if e["role"] == "tool"]
    assert output == [
        {
            "role": "tool",
            "content": "KeyboardInterrupt",
            "tool_call_id": "call_mock_1",
            "error": {"type": "KeyboardInterrupt", "message": None},
        }
    ]


def test_concurrent_id_less_runs_pair_within_their_own_run(traced: Any, server: MockLLMServer) -> None:
    """Ollama runs in threads: the same calls and outputs in every run, no ids anywhere; each run's outputs answer
    its own calls (made ids are per model step, never shared)."""
    client = PROVIDERS["ollama"].client(server)

    def run(n: int) -> None:
        with spanfold.agent(f"bot-{n}"):
            run_agent("ollama", client, f"Run {n}: weather?", stream=n % 2 == 1)

    in_threads(run, 4)
    traces = traced.traces()
    assert len(traces) == 4
    every = [c for events in traces for c in _ids(events)[0]]
    assert len(set(every)) == len(every) == 12
    for events in traces:
        calls, outputs = _ids(events)
        assert outputs == calls

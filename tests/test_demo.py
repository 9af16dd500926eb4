"""``spanfold demo``: the README's first command, on each API, streamed or not, folds the same flat trace; and the
scenarios and agent loops it runs (``spanfold.testing``), which tests and users' own tests share."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import spanfold
from spanfold.cli import main
from spanfold.testing import MockLLMServer, MockRequest, Reply, Scenario, Tool, ToolCallSpec, run_agent
from spanfold.testing.agents import PROVIDERS

SYSTEM = "You are a weather assistant. Use the tools, then answer in one sentence."
QUESTION = "What's the weather in Paris and Tokyo? And Paris's temperature in fahrenheit, please."
ANSWER = "Here is the weather: Paris: 18°C, sunny; Tokyo: 24°C, cloudy. In Fahrenheit: 18°C is 64.4°F."
CALL_PREFIX: dict[str, str | None] = {"openai": "call_mock_", "openai-responses": "call_mock_"}
CALL_PREFIX.update({"anthropic": "toolu_mock_", "groq": "call_mock_", "mistral": "mockcall", "ollama": None})
CALL_PREFIX.update({"cohere": "toolcall_mock_", "litellm": "call_mock_", "gemini": None, "bedrock": "tooluse_mock_"})


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def expected_events(prefix: str) -> list[dict[str, Any]]:
    ids = [f"{prefix}{n}" for n in (1, 2, 3)]
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                call(ids[0], "get_weather", {"city": "Paris"}),
                call(ids[1], "get_weather", {"city": "Tokyo"}),
            ],
        },
        {"role": "tool", "content": "Paris: 18°C, sunny", "tool_call_id": ids[0]},
        {"role": "tool", "content": "Tokyo: 24°C, cloudy", "tool_call_id": ids[1]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call(ids[2], "convert_temperature", {"celsius": 18, "to": "fahrenheit"})],
        },
        {"role": "tool", "content": "18°C is 64.4°F", "tool_call_id": ids[2]},
        {"role": "assistant", "content": ANSWER},
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("provider", list(CALL_PREFIX))
def test_demo_folds_one_trace_per_provider(tmp_path: Path, _global_provider: Any, provider: str, stream: bool) -> None:
    args = ["demo", "--provider", provider, "-o", str(tmp_path)] + (["--stream"] if stream else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    (line,) = (tmp_path / "traces.jsonl").read_text(encoding="utf-8").splitlines()
    events = json.loads(line)
    if CALL_PREFIX[provider] is None:  # ollama, gemini: tool calls have no ids, the fold makes them
        from .e2e.provider_specs import made_ids

        events = made_ids(events)
    assert events == expected_events(CALL_PREFIX[provider] or "made-")
    (meta_line,) = (tmp_path / "traces.meta.jsonl").read_text(encoding="utf-8").splitlines()
    meta = json.loads(meta_line)
    assert meta["metadata"]["name"] == "weather-bot"
    assert meta["metadata"]["status"] == "complete"
    # A Chat Completions stream reports usage only when asked (stream_options); spanfold never changes requests.
    # Unknown is not zero: such a run's usage says its calls reported none.
    usage = meta["metadata"]["usage"]
    if provider in ("openai", "litellm") and stream:
        assert "input_tokens" not in usage and usage["unreported_steps"] == 3
    else:
        assert usage["input_tokens"] > 0 and "unreported_steps" not in usage
    assert meta["summary"]["toolCallsByName"] == {"convert_temperature": 1, "get_weather": 2}
    assert ANSWER in result.output
    assert str(tmp_path / "traces.jsonl") in result.output


def test_demo_command_in_a_fresh_process(tmp_path: Path) -> None:
    """The README's command, as a user runs it: the console script, no API key in the environment."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("SPANFOLD_")}
    script = Path(sys.executable).with_name("spanfold")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "spanfold"]
    done = subprocess.run(
        [*command, "demo", "-o", str(tmp_path / "new")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = (tmp_path / "new" / "traces.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(line) == expected_events("call_mock_")
    assert oct((tmp_path / "new" / "traces.jsonl").stat().st_mode & 0o777) == oct(0o600)
    assert oct((tmp_path / "new").stat().st_mode & 0o777) == oct(0o700)  # traces hold prompts: the user's only


def test_demo_help_names_every_provider() -> None:
    result = CliRunner().invoke(main, ["demo", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert [p for p in PROVIDERS if p not in text] == []


def test_demo_into_a_directory_that_cannot_be_made(_global_provider: Any) -> None:
    result = CliRunner().invoke(main, ["demo", "-o", "/proc/spanfold-demo/x"])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == ["/proc/spanfold-demo/x: cannot write traces (No such file or directory)"]
    assert "Traceback" not in result.output


def test_demo_whose_traces_cannot_be_written(tmp_path: Path, _global_provider: Any) -> None:
    (tmp_path / "traces.jsonl").mkdir()  # the writer's warning comes first; the demo's own line last, exit 2
    result = CliRunner().invoke(main, ["demo", "-o", str(tmp_path)])
    assert result.exit_code == 2, result.output
    last = result.stderr.splitlines()[-1]
    assert last == f"{tmp_path}: the trace was not written (see the warning above)"


# --- the scenarios and loops the demo runs, as users' own tests run them ----------------------------------------


def add(a: int, b: int) -> str:
    return str(a + b)


def sum_replies(request: MockRequest) -> Reply:
    """The scripted model of :data:`SUMS`: asks for ``add(2, 3)`` (``add(2)`` when the question says "broken"), then
    answers with what the tool returned."""
    results = request.tool_results()
    if results:
        return Reply.text(f"The tool said: {results[-1].text}")
    arguments = {"a": 2} if "broken" in (request.last_user_text() or "") else {"a": 2, "b": 3}
    return Reply.tools([ToolCallSpec("add", arguments)])


ADD_SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a"]}
SUMS = Scenario(
    name="sum-bot",
    system="You add numbers with the tool.",
    question="What is 2 + 3?",
    tools=(Tool("add", "Add two integers.", ADD_SCHEMA, add),),
    replies=sum_replies,
)


#: The tool's result as each API's second request carries it back (its last message, item or content).
SENT_BACK: dict[str, dict[str, Any]] = {
    "openai": {"role": "tool", "tool_call_id": "call_mock_1", "content": "5"},
    "openai-responses": {"type": "function_call_output", "call_id": "call_mock_1", "output": "5"},
    "anthropic": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_mock_1", "content": "5"}]},
    "groq": {"role": "tool", "tool_call_id": "call_mock_1", "content": "5", "name": "add"},
    "mistral": {"role": "tool", "tool_call_id": "mockcall1", "content": "5", "name": "add"},
    "ollama": {"role": "tool", "content": "5", "tool_name": "add"},
    "cohere": {"role": "tool", "tool_call_id": "toolcall_mock_1", "content": "5"},
    "litellm": {"role": "tool", "tool_call_id": "call_mock_1", "content": "5", "name": "add"},
    "gemini": {"role": "user", "parts": [{"functionResponse": {"name": "add", "response": {"result": "5"}}}]},
    "bedrock": {
        "role": "user",
        "content": [{"toolResult": {"toolUseId": "tooluse_mock_1", "content": [{"text": "5"}]}}],
    },
}


def sum_events(prefix: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You add numbers with the tool."},
        {"role": "user", "content": "What is 2 + 3?"},
        {"role": "assistant", "content": None, "tool_calls": [call(f"{prefix}1", "add", {"a": 2, "b": 3})]},
        {"role": "tool", "content": "5", "tool_call_id": f"{prefix}1"},
        {"role": "assistant", "content": "The tool said: 5"},
    ]


@pytest.mark.parametrize("provider", list(CALL_PREFIX))
def test_a_scenario_of_your_own_runs_on_every_api(traced: Any, global_spans: Any, provider: str) -> None:
    """A user's scenario (its prompt, its tool and the server's scripted replies, as data) played by the demo's
    loops: each API's request declares the scenario's tool, the tool runs as a ``@spanfold.tool`` with the
    scenario's name and description, and every API folds the same events."""
    chosen = PROVIDERS[provider]
    with MockLLMServer(SUMS.replies) as server, spanfold.agent(SUMS.name):
        answer = chosen.run(chosen.client(server), scenario=SUMS)
    assert answer == "The tool said: 5"
    assert len(server.requests) == 2
    assert "Add two integers." in json.dumps(server.requests[0].body)  # the tool, in this API's shape
    second = server.requests[1].body
    assert (second.get("messages") or second.get("input") or second["contents"])[-1] == SENT_BACK[provider]
    events = traced.one()
    if CALL_PREFIX[provider] is None:
        from .e2e.provider_specs import made_ids

        events = made_ids(events)
    assert events == sum_events(CALL_PREFIX[provider] or "made-")
    (tool_span,) = [s for s in global_spans.get_finished_spans() if s.name == "execute_tool add"]
    assert tool_span.attributes["gen_ai.tool.description"] == "Add two integers."
    assert tool_span.attributes["gen_ai.tool.call.arguments"] == '{"a":2,"b":3}'


def test_a_failing_tool_answers_the_model_with_its_error(traced: Any) -> None:
    """A tool call the tool cannot run is not the end of the run: the model is sent the error, as agents do."""
    with MockLLMServer(SUMS.replies) as server, spanfold.agent(SUMS.name):
        answer = run_agent("anthropic", PROVIDERS["anthropic"].client(server), "broken: 2 + ?", scenario=SUMS)
    error = "error: TypeError: add() missing 1 required positional argument: 'b'"
    assert [turn.text for turn in server.requests[1].tool_results()] == [error]
    assert answer == f"The tool said: {error}"
    assert [e["role"] for e in traced.one()] == ["system", "user", "assistant", "tool", "assistant"]


def test_tools_of_your_own_replace_the_scenarios(traced: Any, global_spans: Any) -> None:
    """``tools=``: the loop runs the functions given (here plain ones: no tool span; the fold takes each result from
    the next call's request) instead of the scenario's ``@spanfold.tool`` ones."""
    plain = {"add": lambda a, b, tool_call_id=None: f"{a}+{b}"}
    with MockLLMServer(SUMS.replies) as server, spanfold.agent(SUMS.name):
        assert PROVIDERS["openai"].run(PROVIDERS["openai"].client(server), scenario=SUMS, tools=plain) == (
            "The tool said: 2+3"
        )
    assert [s.name for s in global_spans.get_finished_spans() if s.name.startswith("execute_tool")] == []
    assert traced.one()[3] == {"role": "tool", "content": "2+3", "tool_call_id": "call_mock_1"}


def test_the_testing_package_imports_no_client_library() -> None:
    """The client libraries are optional extras: ``spanfold.testing`` (its scenarios and loops too) and the demo
    import none of them until a client is made."""
    code = (
        "import sys, spanfold.testing, spanfold.testing.agents, spanfold.demo\n"
        "roots = {'openai', 'anthropic', 'google.genai', 'boto3', 'botocore', 'groq', 'mistralai', 'ollama', 'cohere',"
        " 'litellm'}\n"
        "print(sorted(m for m in sys.modules if m in roots or m.split('.')[0] in roots - {'google.genai'}"
        " or m.startswith('google.genai')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_prices_the_demo_says_how_to_get_the_cost(
    tmp_path: Path, _global_provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spanfold.pricing import table

    monkeypatch.setattr(table, "available", lambda: False)
    result = CliRunner().invoke(main, ["demo", "-o", str(tmp_path)])
    assert result.exit_code == 0 and "pip install 'spanfold[cost]'" in result.output
    monkeypatch.undo()  # the real table (the test environment has the cost extra): the cost, no hint
    priced = CliRunner().invoke(main, ["demo", "-o", str(tmp_path / "real")])
    assert priced.exit_code == 0 and "spanfold[cost]" not in priced.output and "$" in priced.output

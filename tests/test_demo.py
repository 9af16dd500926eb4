"""``spanfold demo``: the README's first command, on each API, streamed or not, folds the same flat trace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanfold import demo
from spanfold.cli import main

SYSTEM = "You are a weather assistant. Use the tools, then answer in one sentence."
QUESTION = "What's the weather in Paris and Tokyo? And Paris's temperature in fahrenheit, please."
ANSWER = "Here is the weather: Paris: 18°C, sunny; Tokyo: 24°C, cloudy. In Fahrenheit: 18°C is 64.4°F."
CALL_PREFIX: dict[str, str | None] = {"openai": "call_mock_", "openai-responses": "call_mock_"}
CALL_PREFIX.update({"anthropic": "toolu_mock_", "groq": "call_mock_", "mistral": "mockcall", "ollama": None})
CALL_PREFIX.update({"cohere": "toolcall_mock_", "litellm": "call_mock_"})


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
    if CALL_PREFIX[provider] is None:  # ollama: tool calls have no ids, the fold makes them
        from .e2e.provider_specs import made_ids

        events = made_ids(events)
    assert events == expected_events(CALL_PREFIX[provider] or "made-")
    (meta_line,) = (tmp_path / "traces.meta.jsonl").read_text(encoding="utf-8").splitlines()
    meta = json.loads(meta_line)
    assert meta["metadata"]["name"] == "weather-bot"
    assert meta["metadata"]["status"] == "complete"
    # A Chat Completions stream reports usage only when asked (stream_options); spanfold never changes requests.
    assert (meta["metadata"]["usage"]["input_tokens"] > 0) is not (provider in ("openai", "litellm") and stream)
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
    assert [p for p in demo.PROVIDERS if p not in text] == []


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

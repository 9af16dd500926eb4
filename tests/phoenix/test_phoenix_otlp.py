"""What Arize Phoenix shows of a spanfold run, read back from a real Phoenix server.

The server (``phoenix serve``, SQLite in a temporary working directory, telemetry off, loopback ports) is started by
the test; the app (the weather agent in ``spanfold.agent``, over the embedded mock server) exports its spans to it over
OTLP/HTTP (``SPANFOLD_OTLP``). Phoenix reads the GenAI attributes (its span kinds: LLM, TOOL, AGENT) and fills its
trace list and Input / Output columns from ``input.value`` / ``output.value``: the run's root shows the question and
the final answer, each model call its messages, each tool run its arguments and result. With content capture off no
content reaches it.

Phoenix is heavy (hundreds of MB): it is installed only in the venv ``.ci/phoenix`` builds; this module is skipped
elsewhere.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("phoenix") is None:  # not in the test extra: .ci/phoenix installs it in a venv of its own
    pytest.skip("Arize Phoenix is tested by .ci/phoenix, in its own venv", allow_module_level=True)

BIN = Path(sys.executable).parent
QUESTION = "Weather in Paris and Tokyo, please?"
APP = textwrap.dedent(
    """
    import sys
    import openai
    import spanfold
    from spanfold.testing import MockLLMServer, scenarios
    from spanfold.testing.agents import run_agent

    spanfold.init(output=sys.argv[1], capture_content=sys.argv[2] == "on")
    with MockLLMServer(scenarios.weather_agent) as server, spanfold.agent("weather"):
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        print(run_agent("openai", client, sys.argv[3]))
    spanfold.shutdown()
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: Any) -> Iterator[str]:
    """A running Phoenix server; its URL."""
    home = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))},
        "PHOENIX_WORKING_DIR": str(home),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (home / "server.log").open("w")
    server = subprocess.Popen([str(BIN / "phoenix"), "serve"], cwd=home, env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("phoenix did not start:\n" + (home / "server.log").read_text()[-3000:])
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def _run(phoenix: str, tmp_path: Path, capture: str, question: str) -> str:
    app = tmp_path / "app.py"
    app.write_text(APP)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SPANFOLD_", "TRACEPARENT"))}
    environ["SPANFOLD_OTLP"] = f"{phoenix}/v1/traces"
    done = subprocess.run(
        [sys.executable, str(app), str(tmp_path / "traces"), capture, question],
        env=environ, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _spans(phoenix: str, trace_id: str | None = None, want: int = 7) -> list[dict[str, Any]]:
    """The default project's spans (of one trace, when given), once ``want`` of them are in."""
    deadline = time.monotonic() + 60
    while True:
        query = urllib.parse.urlencode({"limit": 1000})
        with urllib.request.urlopen(f"{phoenix}/v1/projects/default/spans?{query}", timeout=10) as response:
            spans = json.loads(response.read())["data"]
        if trace_id is not None:
            spans = [s for s in spans if s["context"]["trace_id"] == trace_id]
        if len(spans) >= want or time.monotonic() > deadline:
            return spans
        time.sleep(1)


def _trace_of(spans: list[dict[str, Any]], name: str) -> str:
    roots = [s for s in spans if s["name"] == name and not s.get("parent_id")]
    assert roots, [s["name"] for s in spans]
    return str(roots[-1]["context"]["trace_id"])


def test_phoenix_shows_the_run_s_question_answer_and_steps(phoenix: str, tmp_path: Path) -> None:
    answer = _run(phoenix, tmp_path, "on", QUESTION)
    spans = _spans(phoenix)
    trace_id = _trace_of(spans, "invoke_agent weather")
    spans = _spans(phoenix, trace_id)
    assert sorted(s["name"] for s in spans) == sorted(
        ["invoke_agent weather"]
        + ["chat gpt-4o-mini"] * 3
        + ["execute_tool get_weather"] * 2
        + ["execute_tool convert_temperature"]
    )
    root = next(s for s in spans if s["name"] == "invoke_agent weather")
    attrs = root["attributes"]
    assert attrs["input.value"] == QUESTION and attrs["output.value"] == answer
    assert attrs["input.mime_type"] == attrs["output.mime_type"] == "text/plain"
    kinds = {s["name"]: s["span_kind"] for s in spans}
    # Phoenix's own reading of the GenAI attributes (the kinds it files each span under)
    assert kinds["chat gpt-4o-mini"] == "LLM" and kinds["execute_tool get_weather"] == "TOOL"
    assert kinds["invoke_agent weather"] == "AGENT"
    tool = next(s for s in spans if s["name"] == "execute_tool convert_temperature")
    assert tool["attributes"]["input.value"] == tool["attributes"]["gen_ai.tool.call.arguments"]
    assert tool["attributes"]["output.value"] == "18°C is 64.4°F"
    for call in (s for s in spans if s["name"].startswith("chat ")):
        assert json.loads(call["attributes"]["input.value"])[0]["role"] == "system"


def test_capture_off_shows_no_input_or_output(phoenix: str, tmp_path: Path) -> None:
    question = "Capture off: weather in Paris and Tokyo?"
    _run(phoenix, tmp_path, "off", question)
    spans = _spans(phoenix, want=14)
    roots = [s for s in spans if s["name"] == "invoke_agent weather" and not s.get("parent_id")]
    assert len(roots) >= 2
    trace_id = str(max(roots, key=lambda s: s["start_time"])["context"]["trace_id"])
    ours = _spans(phoenix, trace_id)
    assert len(ours) == 7
    root = next(s for s in ours if s["name"] == "invoke_agent weather")
    assert "input.value" not in root["attributes"] and "output.value" not in root["attributes"]
    shown = json.dumps(ours, ensure_ascii=False)  # what Phoenix derives itself from the messages' structure aside
    assert question not in shown and "Paris: 18" not in shown

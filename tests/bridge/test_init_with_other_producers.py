"""``spanfold.init(instrument="none")`` beside another instrumentation: spanfold patches nothing and folds that
producer's spans, including the official instrumentation's per-message log events (spanfold puts its event
processor on the user's SDK LoggerProvider). Run in a fresh process: providers are process-wide."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spanfold import config
from spanfold.setup import start

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from opentelemetry import trace, _logs
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    import openai
    import spanfold
    from spanfold.testing import WEATHER, MockLLMServer, run_agent, scenarios

    trace.set_tracer_provider(TracerProvider())
    _logs.set_logger_provider(LoggerProvider())
    handle = spanfold.init(output=sys.argv[1], instrument="none")
    OpenAIInstrumentor().instrument()
    def plain(fn):  # the peer does not trace tools: the plain functions, called as the demo calls its tools
        return lambda tool_call_id=None, **arguments: fn(**arguments)

    tools = {tool.name: plain(tool.function) for tool in WEATHER.tools}
    with MockLLMServer(scenarios.weather_agent) as server:
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        with trace.get_tracer("app").start_as_current_span("run"):
            run_agent("openai", client, tools=tools)
    assert spanfold.flush(timeout=30)
    print(json.dumps({"instrumented": handle.instrumented, "stats": spanfold.stats()}))
    """
)


def test_init_folds_the_official_instrumentations_log_events(tmp_path: Path) -> None:
    env = dict(os.environ)
    env.update(OTEL_SEMCONV_STABILITY_OPT_IN="", OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["instrumented"] == []  # spanfold patched nothing: one model step per call, the peer's
    assert report["stats"].get("faults", 0) == 0
    (line,) = (tmp_path / "traces.jsonl").read_text(encoding="utf-8").splitlines()
    events = json.loads(line)
    assert [(e["role"], [c["function"]["name"] for c in e.get("tool_calls", [])]) for e in events] == [
        ("system", []),
        ("user", []),
        ("assistant", ["get_weather", "get_weather"]),
        ("tool", []),
        ("tool", []),
        ("assistant", ["convert_temperature"]),
        ("tool", []),
        ("assistant", []),
    ]
    assert events[3] == {"role": "tool", "content": "Paris: 18°C, sunny", "tool_call_id": "call_mock_1"}
    assert events[-1]["content"].startswith("Here is the weather: Paris: 18°C, sunny")


def test_unknown_instrumentation_name_is_a_clear_error() -> None:
    with pytest.raises(config.ConfigError, match="instrument: unknown opnai; expected all, none or openai"):
        start({"instrument": "opnai"})


@pytest.mark.parametrize(
    ("raw", "parsed"), [("all", None), ("", None), ("none", ()), (" openai , anthropic", ("openai", "anthropic"))]
)
def test_instrument_option_from_the_environment(raw: str, parsed: tuple[str, ...] | None) -> None:
    assert config.load({}, {"SPANFOLD_INSTRUMENT": raw}).instrument == parsed


@pytest.mark.parametrize("raw", ["nan", "inf", "-1", "0"])
def test_a_window_that_is_not_a_positive_finite_number_is_a_clear_error(raw: str) -> None:
    """A NaN window would never close a conversation (every comparison with it is false): refused, from the
    environment and from init() alike."""
    with pytest.raises(config.ConfigError, match=f"SPANFOLD_STITCH_IDLE='{raw}': expected a positive, finite number"):
        config.load({}, {"SPANFOLD_STITCH_IDLE": raw})
    with pytest.raises(config.ConfigError, match=r"stitch_idle=.*: expected a positive, finite number"):
        config.load({"stitch_idle": float(raw)}, {})

"""Zero-code: ``opentelemetry-instrument python app.py`` with ``OTEL_TRACES_EXPORTER=spanfold``. An app that never
imports spanfold's tracing gets flat traces: the SDK's configurator builds the FoldingSpanExporter from its entry
point, ``opentelemetry-instrument`` turns on spanfold's instrumentors from theirs, and the un-parented calls of each
agent loop are stitched into one conversation."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import WEATHER_ROLES

INSTRUMENT = shutil.which("opentelemetry-instrument", path=str(Path(sys.executable).parent)) or shutil.which(
    "opentelemetry-instrument"
)

# The app: plain openai and anthropic clients; the tools are the demo's (spans of their own, no parent).
APP = textwrap.dedent(
    """
    import anthropic, openai
    from spanfold.testing import MockLLMServer, run_agent, scenarios

    with MockLLMServer(scenarios.weather_agent) as server:
        run_agent("openai", openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0))
        run_agent(
            "anthropic", anthropic.Anthropic(api_key="sk-test", base_url=server.anthropic_base_url, max_retries=0)
        )
    print("done")
    """
)


@pytest.mark.skipif(INSTRUMENT is None, reason="opentelemetry-instrument is not installed")
def test_opentelemetry_instrument_with_the_spanfold_exporter(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text(APP)
    env = {
        **os.environ,
        "OTEL_TRACES_EXPORTER": "spanfold",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_SERVICE_NAME": "zero-code-app",
        "SPANFOLD_OUTPUT": str(tmp_path / "traces"),
        # other producers' instrumentors installed beside spanfold's (the dialect tests use them) stay off
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "openai,anthropic,openai_v2",
    }
    assert INSTRUMENT is not None
    done = subprocess.run([INSTRUMENT, sys.executable, str(app)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert "Traceback" not in done.stderr and "spanfold" not in done.stderr, done.stderr
    out = tmp_path / "traces"
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    metas = [json.loads(line)["metadata"] for line in (out / "traces.meta.jsonl").read_text().splitlines()]
    assert len(traces) == 2, [[e["role"] for e in t] for t in traces]
    for events, meta in zip(traces, metas, strict=True):
        assert [e["role"] for e in events] == WEATHER_ROLES
        assert meta["service"] == "zero-code-app" and meta["status"] == "complete"
        assert len(meta.get("otel_trace_ids", [meta["trace_id"]])) == 1  # one trace id: stitched at the source
        calls = [c["function"] for e in events for c in e.get("tool_calls") or []]
        assert [c["name"] for c in calls] == ["get_weather", "get_weather", "convert_temperature"]
        assert calls[0]["arguments"] == {"city": "Paris"}
    assert metas[0]["models"] == ["gpt-4o-mini"] and metas[1]["models"][0].startswith("claude")


@pytest.mark.skipif(INSTRUMENT is None, reason="opentelemetry-instrument is not installed")
def test_opentelemetry_instrument_imports_no_sdk_the_program_does_not(tmp_path: Path) -> None:
    """opentelemetry-instrument instruments every installed library at start-up: spanfold's wait for the program to
    import theirs (importing every SDK costs seconds; litellm reaches for the network when imported)."""
    app = tmp_path / "app.py"
    app.write_text(
        "import sys, openai\n"
        "sdks = ('anthropic', 'litellm', 'google.genai', 'cohere', 'mistralai')\n"
        "print(sorted(m for m in sdks if m in sys.modules))\n"
        "print(type(openai.resources.chat.completions.Completions.create).__name__)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SPANFOLD_"))}
    env.update(OTEL_TRACES_EXPORTER="spanfold", SPANFOLD_OUTPUT=str(tmp_path / "traces"))
    assert INSTRUMENT is not None
    done = subprocess.run([INSTRUMENT, sys.executable, str(app)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[]", "BoundFunctionWrapper"], done.stdout


@pytest.mark.skipif(INSTRUMENT is None, reason="opentelemetry-instrument is not installed")
def test_the_obvious_way_to_feed_spanfold_serve(tmp_path: Path) -> None:
    """``OTEL_TRACES_EXPORTER=otlp opentelemetry-instrument python app.py`` with only the OTLP/HTTP exporter
    installed (the ``otlp`` extra): the distro picks it (the SDK alone asks for gRPC, fails and leaves the app
    untraced), and ``spanfold serve`` folds the runs."""
    from .test_multi_tenant_serve import Serve

    app = tmp_path / "app.py"
    app.write_text(APP)
    serve = Serve(tmp_path / "served")
    try:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SPANFOLD_"))},
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_ENDPOINT": serve.endpoint.removesuffix("/v1/traces"),
            "OTEL_SERVICE_NAME": "zero-code-app",
            "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "openai,anthropic,openai_v2",
        }
        assert INSTRUMENT is not None
        done = subprocess.run(
            [INSTRUMENT, sys.executable, str(app)], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        assert done.stdout.strip() == "done"
        traces = serve.stop()
    finally:
        serve.stop()
    assert [[e["role"] for e in t] for t in traces] == [WEATHER_ROLES, WEATHER_ROLES]


def test_otlp_means_the_exporter_that_is_installed() -> None:
    from spanfold.zero_code import otlp_exporter

    def only(*names: str) -> object:
        return lambda name: name in names

    env = {"OTEL_TRACES_EXPORTER": "otlp"}
    assert otlp_exporter(env, only("otlp_proto_http")) is None
    assert env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] == "http/protobuf"
    env = {"OTEL_TRACES_EXPORTER": "otlp"}
    assert otlp_exporter(env, only("otlp_proto_grpc", "otlp_proto_http")) is None and len(env) == 1  # gRPC as asked
    env = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    assert otlp_exporter(env, only()) is None and env["OTEL_TRACES_EXPORTER"] == "otlp"  # the user's choice stands
    env = {"OTEL_TRACES_EXPORTER": "spanfold,otlp"}
    line = otlp_exporter(env, only())
    assert line is not None and "pip install 'spanfold[otlp]'" in line
    assert env["OTEL_TRACES_EXPORTER"] == "spanfold"

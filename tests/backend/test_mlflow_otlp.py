"""A zero-code run, exported over OTLP to a real OpenTelemetry backend, is ONE trace there.

The backend is the MLflow tracking server's OTLP ingest (``POST /v1/traces``), started by the test on loopback with a
SQLite store. The app never imports spanfold's tracing and opens no agent span: ``spanfold run`` traces it, with the
spans also exported to MLflow (``SPANFOLD_OTLP``; the experiment named by the ``x-mlflow-experiment-id`` header). Each
run of the weather agent must be one MLflow trace holding its three model calls and three tool runs; the same with
content capture off; under ``TRACEPARENT`` the trace is the caller's.

MLflow is heavy (hundreds of MB): it is installed only in the venv ``.ci/backend`` builds, and this module is skipped
elsewhere.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("mlflow") is None:  # not in the test extra: .ci/backend installs it in a venv of its own
    pytest.skip("MLflow is tested by .ci/backend, in its own venv", allow_module_level=True)
mlflow = importlib.import_module("mlflow")

BIN = Path(sys.executable).parent
APP = textwrap.dedent(
    """
    import sys
    import openai
    from spanfold.testing import MockLLMServer, run_agent, scenarios

    with MockLLMServer(scenarios.weather_agent) as server:
        for question in sys.argv[1:]:
            run_agent("openai", openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0), question)
    print("done")
    """
)
QUESTIONS = ["Run 1: weather in Paris and Tokyo?", "Run 2: weather in Paris and Tokyo?"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def backend(tmp_path_factory: Any) -> Iterator[str]:
    """A running MLflow tracking server; its URL."""
    home = tmp_path_factory.mktemp("mlflow")
    port = _free_port()
    server = subprocess.Popen(
        [str(BIN / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{home / 'mlflow.db'}", "--default-artifact-root", str(home / "art")],
        cwd=home, stdout=subprocess.DEVNULL, stderr=(home / "server.log").open("w"),
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},  # no job runner: the OTLP ingest is enough
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("mlflow server did not start:\n" + (home / "server.log").read_text()[-3000:])
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def _run(backend: str, tmp_path: Path, *flags: str, **env: str) -> tuple[str, list[Any]]:
    """``spanfold run`` the app into a new experiment; that experiment's traces."""
    client = mlflow.MlflowClient(backend)
    experiment = client.create_experiment(f"zero-code-{tmp_path.name}")
    app = tmp_path / "app.py"
    app.write_text(APP)
    spanfold = shutil.which("spanfold", path=str(BIN))
    assert spanfold is not None
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SPANFOLD_", "TRACEPARENT"))}
    environ.update(
        SPANFOLD_OTLP=f"{backend}/v1/traces", OTEL_EXPORTER_OTLP_HEADERS=f"x-mlflow-experiment-id={experiment}", **env
    )
    done = subprocess.run(
        [spanfold, "run", "-o", str(tmp_path / "traces"), *flags, "--", sys.executable, str(app), *QUESTIONS],
        env=environ, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
    deadline = time.monotonic() + 60
    while True:
        traces = client.search_traces(locations=[experiment])
        complete = [t for t in traces if len(t.data.spans) >= 6]
        if len(complete) >= len(QUESTIONS) or time.monotonic() > deadline:
            return experiment, traces
        time.sleep(1)


def _names(trace: Any) -> list[str]:
    return sorted(span.name for span in trace.data.spans)


EXPECTED = sorted(["chat gpt-4o-mini"] * 3 + ["execute_tool get_weather"] * 2 + ["execute_tool convert_temperature"])


def test_each_zero_code_run_is_one_trace_in_mlflow(backend: str, tmp_path: Path) -> None:
    _, traces = _run(backend, tmp_path)
    assert len(traces) == len(QUESTIONS), [_names(t) for t in traces]
    assert all(_names(t) == EXPECTED for t in traces), [_names(t) for t in traces]
    previews = sorted(str(t.info.request_preview or "") for t in traces)
    assert all(q in "".join(previews) for q in QUESTIONS) or previews  # MLflow's preview, when it makes one


def test_capture_off_still_one_trace_per_run(backend: str, tmp_path: Path) -> None:
    _, traces = _run(backend, tmp_path, "--no-capture-content")
    assert len(traces) == len(QUESTIONS)
    assert all(_names(t) == EXPECTED for t in traces)
    recorded = " ".join(str(s.attributes) for t in traces for s in t.data.spans)
    assert "Paris" not in recorded


def test_traceparent_puts_the_runs_in_the_callers_trace(backend: str, tmp_path: Path) -> None:
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    _, traces = _run(backend, tmp_path, TRACEPARENT=f"00-{trace_id}-00f067aa0ba902b7-01")
    assert len(traces) == 1  # both runs under the one parent the harness gave
    assert trace_id in traces[0].info.trace_id
    assert len(traces[0].data.spans) == 2 * len(EXPECTED)

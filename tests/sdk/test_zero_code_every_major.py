"""Zero-code (``opentelemetry-instrument`` with ``OTEL_TRACES_EXPORTER=spanfold``): the weather agent folds to the same
trace as through ``init()``, on every installed SDK major. The app (``agents.py`` run as a script) never imports
spanfold's tracing; each scenario asks its own question, so the stitcher tells the runs apart."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from . import agents

INSTRUMENT = shutil.which("opentelemetry-instrument", path=str(Path(sys.executable).parent)) or shutil.which(
    "opentelemetry-instrument"
)


def zero_code_env(out: Path) -> dict[str, str]:
    return {
        **os.environ,
        "OTEL_TRACES_EXPORTER": "spanfold",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_SERVICE_NAME": "zero-code-app",
        "SPANFOLD_OUTPUT": str(out),
        # other producers' instrumentors installed beside spanfold's (the dialect tests use them) stay off
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "openai,anthropic,openai_v2",
    }


@pytest.mark.skipif(INSTRUMENT is None, reason="opentelemetry-instrument is not installed")
def test_every_scenario_folds_alike_under_opentelemetry_instrument(tmp_path: Path) -> None:
    names = agents.available()
    out = tmp_path / "traces"
    assert INSTRUMENT is not None
    done = subprocess.run(
        [INSTRUMENT, sys.executable, agents.__file__, *names],
        env=zero_code_env(out),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert "Traceback" not in done.stderr and "spanfold" not in done.stderr, done.stderr
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text(encoding="utf-8").splitlines()]
    by_question = {next(e["content"] for e in t if e["role"] == "user"): t for t in traces}
    assert len(traces) == len(names) == len(by_question)
    for name in names:
        assert by_question[agents.question(name)] == agents.expected(name), name
    metas = [json.loads(line)["metadata"] for line in (out / "traces.meta.jsonl").read_text().splitlines()]
    assert all(m["status"] == "complete" and m["service"] == "zero-code-app" for m in metas)

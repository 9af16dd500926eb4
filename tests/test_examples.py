"""The examples stay working: the example agent test suite passes under pytest, and its golden spec passes
``spanfold check`` over the trace ``spanfold demo`` writes (the record-a-golden-run workflow of the README)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from spanfold.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "agent_tests"


def test_example_agent_suite_passes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLES)],
        capture_output=True,
        text=True,
        cwd=EXAMPLES,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout.splitlines()[-1]
    assert "failed" not in done.stdout.splitlines()[-1]


def test_golden_spec_checks_the_demo_run(tmp_path: Path, _global_provider: Any) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["demo", "-o", str(tmp_path)]).exit_code == 0
    result = runner.invoke(main, ["check", str(tmp_path / "traces.jsonl"), "--spec", str(EXAMPLES / "golden.yaml")])
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1].startswith("4 passed, 0 failed")

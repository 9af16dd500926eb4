"""The browser tests never skip silently in CI (issue 36, item 10): without chromium a browser test skips, saying
why, on a developer's machine, and fails under ``CI=true`` (``.ci/run`` sets it, and stops when chromium cannot be
installed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: A browser test whose other fixtures start nothing (the browser is the first thing it needs).
BROWSER_TEST = "tests/ui/test_browser.py::test_filter_sort_compare_and_live_update"


def _run(ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["SPANFOLD_CHROMIUM"] = "/nonexistent/chromium"
    if ci is not None:
        env["CI"] = ci
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", BROWSER_TEST]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_without_chromium_a_browser_test_skips_saying_why() -> None:
    done = _run(None)
    assert done.returncode == 0 and "1 skipped" in done.stdout, done.stdout
    assert "no chromium at /nonexistent/chromium" in done.stdout


@pytest.mark.parametrize("ci", ["true", "1"])
def test_in_ci_without_chromium_a_browser_test_fails(ci: str) -> None:
    done = _run(ci)
    assert done.returncode == 1 and "1 error" in done.stdout and "skipped" not in done.stdout, done.stdout
    assert "in CI the browser tests must run" in done.stdout


def _chromium_block(tmp_path: Path, *, installs: bool) -> subprocess.CompletedProcess[str]:
    """The chromium part of ``.ci/run`` (before it makes its venv), run with an ``apt-get`` that installs chromium or
    fails, and no chromium on the PATH before it."""
    script = (ROOT / ".ci" / "run").read_text()
    block = script[script.index("# tests/ui drive") : script.index("python3 -m venv")]
    stubs = tmp_path / "bin"
    stubs.mkdir()
    chromium = f"printf '#!/bin/sh\\n' > {stubs}/chromium && chmod +x {stubs}/chromium" if installs else "exit 100"
    apt = stubs / "apt-get"
    apt.write_text(f'#!/bin/sh\nif [ "$1" = install ]; then {chromium}; fi\n')
    apt.chmod(0o755)
    block += 'echo "CI=$CI"\n'
    env = {"PATH": str(stubs), "HOME": str(tmp_path)}
    return subprocess.run(["/bin/bash", "-c", "set -euo pipefail\n" + block], env=env, capture_output=True, text=True)


def test_ci_run_stops_when_chromium_cannot_be_installed(tmp_path: Path) -> None:
    done = _chromium_block(tmp_path, installs=False)
    assert done.returncode == 1 and "chromium could not be installed" in done.stderr, done


def test_ci_run_goes_on_with_chromium_installed_and_says_it_is_ci(tmp_path: Path) -> None:
    done = _chromium_block(tmp_path, installs=True)
    assert done.returncode == 0 and done.stdout == "CI=true\n", done

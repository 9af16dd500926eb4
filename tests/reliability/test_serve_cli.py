"""``spanfold serve`` as a command: what it leaves behind when it cannot start, and what ``--help`` tells."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("aiohttp")


def spanfold(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("SPANFOLD_SERVE_TOKEN", None)
    return subprocess.run(
        [sys.executable, "-m", "spanfold", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_a_port_in_use_leaves_no_output_directory(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = tmp_path / "traces"
        done = spanfold("serve", "--port", str(port), "--output", str(out))
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"spanfold serve: cannot listen on 127.0.0.1:{port}: ") and "in use" in line
    assert not out.exists()


def test_help_describes_every_option_and_names_the_environment() -> None:
    done = spanfold("serve", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "-o, --output DIRECTORY Directory the trace files are appended to" in text
    assert "SPANFOLD_SERVE_TOKEN" in text
    assert "SPANFOLD_MAX_BUFFERED_BYTES" in text
    assert "--read-timeout" in text

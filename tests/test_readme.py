"""The README works as written: after `spanfold demo`, every line of its ```bash blocks runs as a user pastes it
(in a fresh working directory, the `spanfold` console script on PATH) and exits 0 without a traceback; its agent
test snippet passes under pytest. Lines that install packages, start servers or need the user's own files say
``skipped by tests/test_readme.py`` in the README itself."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SKIP = "skipped by tests/test_readme.py"
BLOCK = re.compile(r"```(bash|python)\n(.*?)```", re.S)


def _blocks(kind: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(README.read_text(encoding="utf-8")) if lang == kind]


def _shell_lines() -> list[str]:
    return [line for body in _blocks("bash") for line in body.splitlines() if line.strip() and SKIP not in line]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPANFOLD_", "OTEL_")) and k != "COLUMNS"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_the_readme_marks_what_it_skips() -> None:
    skipped = [line for body in _blocks("bash") for line in body.splitlines() if SKIP in line]
    assert any("pip install" in line for line in skipped) and any("spanfold serve" in line for line in skipped)
    assert all(SKIP not in line for line in _shell_lines())
    assert not [line for line in _shell_lines() if re.search(r"\[--[a-z-]+\]", line)]  # no optional-flag brackets


def test_every_shell_line_works_after_the_demo(tmp_path: Path) -> None:
    env = _env()
    demo = subprocess.run(
        ["spanfold", "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert demo.returncode == 0, demo.stderr
    assert "written to traces/traces.jsonl" in demo.stdout
    lines = _shell_lines()
    assert len(lines) >= 8
    for line in lines:
        done = subprocess.run(
            ["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, f"{line}\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}"
        assert "Traceback" not in done.stderr, line
    assert (tmp_path / "out" / "golden.yaml").is_file() and (tmp_path / "out" / "report.xml").is_file()
    leftovers = sorted(p.name for p in tmp_path.iterdir())
    assert leftovers == ["out", "traces"], leftovers  # traces under traces/, what the README derives under out/
    assert sorted(p.name for p in (tmp_path / "traces").iterdir()) == ["traces.jsonl", "traces.meta.jsonl"]


def test_the_agent_test_snippet_passes(tmp_path: Path) -> None:
    (snippet,) = [body for body in _blocks("python") if body.startswith("# test_my_agent.py")]
    extras = re.search(r"pip install 'spanfold\[([\w,-]+)\]'", snippet.splitlines()[0])
    assert extras is not None, "the snippet says what to install"
    from importlib.metadata import metadata, requires

    from packaging.requirements import Requirement

    wanted = extras.group(1).split(",")
    assert set(wanted) <= set(metadata("spanfold").get_all("Provides-Extra") or []), wanted
    brought = {  # what those extras install: pytest, and the SDK the snippet imports
        Requirement(r).name for r in requires("spanfold") or [] for e in wanted if f'extra == "{e}"' in r
    }
    assert {"pytest", "openai"} <= brought, brought
    (tmp_path / "test_my_agent.py").write_text(snippet, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_agent.py"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout


@pytest.mark.parametrize("path", ["docs/architecture.md", "docs/deployment.md"])
def test_linked_documents_exist(path: str) -> None:
    assert f"({path})" in README.read_text(encoding="utf-8")
    assert (README.parent / path).is_file()

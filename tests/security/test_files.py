"""Output files are user-only (0600) in a user-only (0700) directory, whatever the umask; their names come from trace
ids only, never from span data."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

import spanfold
from spanfold.exporter.files.writers import file_name
from spanfold.testing import MockLLMServer, Reply

from .conftest import OPENAI_KEY


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0)  # the most permissive: every mode below is spanfold's own choice
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("fmt", ["invariant", "agentv"])
def test_files_are_0600_in_a_0700_directory(
    tmp_path: Path, server: MockLLMServer, open_umask: None, fmt: str, _global_provider: Any
) -> None:
    out = tmp_path / "runs" / "traces"
    spanfold.init(output=str(out), format=fmt, file_per_trace=True)
    try:
        client = openai.OpenAI(api_key=OPENAI_KEY, base_url=server.base_url, max_retries=0)
        server.script(Reply.text("hi"))
        with spanfold.agent("modes"):
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hello"}])
        assert spanfold.flush(timeout=30)
    finally:
        spanfold.shutdown()
    files = sorted(p.name for p in out.iterdir())
    assert len(files) == (3 if fmt == "invariant" else 2)  # events (+ metadata) JSONL and one <trace_id>.json
    assert _mode(out) == 0o700
    assert {name: _mode(out / name) for name in files} == dict.fromkeys(files, 0o600)


MALICIOUS = ["../../../escaped", "/tmp/absolute", "..", "a/b\\c", "name\x00nul", "~root", "$(touch pwned)"]


def test_file_names_come_from_trace_ids_only(tmp_path: Path, server: MockLLMServer, _global_provider: Any) -> None:
    out = tmp_path / "traces"
    spanfold.init(output=str(out), file_per_trace=True)
    try:
        client = openai.OpenAI(api_key=OPENAI_KEY, base_url=server.base_url, max_retries=0)
        for evil in MALICIOUS:
            server.script(Reply.text(evil))

            @spanfold.tool(name=evil)
            def tool(x: str) -> str:
                return x

            with spanfold.agent(evil, conversation_id=evil):
                client.chat.completions.create(model=evil, messages=[{"role": "user", "content": evil}], user=evil)
                tool(evil)
        assert spanfold.flush(timeout=30)
    finally:
        spanfold.shutdown()
    names = sorted(p.name for p in out.iterdir())
    per_trace = [n for n in names if n not in ("traces.jsonl", "traces.meta.jsonl")]
    assert len(per_trace) == len(MALICIOUS)
    assert all(re.fullmatch(r"[0-9a-f]{32}\.json", n) for n in per_trace), per_trace
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces"]  # nothing written beside or above it
    assert not Path("pwned").exists()


@pytest.mark.parametrize(
    "trace_id", ["../../etc/passwd", "/abs", ".hidden", "", "a" * 500, "x/../../y", "nul\x00byte", "éé"]
)
def test_file_name_of_any_trace_id_stays_in_the_directory(trace_id: str) -> None:
    name = file_name(trace_id)
    assert "/" not in name and "\\" not in name and "\x00" not in name
    assert not name.startswith(".")
    assert name.endswith(".json") and len(name) <= 128 + len(".json")
    assert re.fullmatch(r"[A-Za-z0-9_.-]+", name)

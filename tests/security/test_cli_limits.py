"""Hostile inputs cannot crash the CLI or grow its memory without bound: a NaN or infinite number in metadata, an
input without newlines (a link to /dev/zero, a huge line), a billion-laughs YAML document. Each is a one-line
``FILE:LINE: problem`` (or read as absent), exit 2 or 0, never a traceback."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanfold.cli import main

EVENTS = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
LAUGHS = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{c}: &{c} [{','.join(['*' + p] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)]
)
#: Address space for a child: far below what the unbounded reads reached (3.5 GB and more).
MEMORY_LIMIT = 1024 * 1024 * 1024


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("spanfold")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "spanfold"]

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
        preexec_fn=limit,
    )


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999", "9" * 5000])
def test_non_finite_duration_in_metadata(tmp_path: Path, number: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(EVENTS) + "\n")
    meta = '{"metadata": {"trace_id": "t1", "duration_ms": NUMBER, "usage": {"input_tokens": 1e999}}}\n'
    meta = meta.replace("NUMBER", number)
    (tmp_path / "t.meta.jsonl").write_text(meta)
    runner = CliRunner()
    for args in (["summary", str(path)], ["show", str(path)], ["summary", "--json", str(path)]):
        result = runner.invoke(main, args)
        assert result.exception is None or isinstance(result.exception, SystemExit), (args, result.exception)
        assert "Traceback" not in result.output
        if len(number) > 100:  # a number Python will not convert: a bad metadata line, named
            assert result.exit_code == 2 and "t.meta.jsonl:1: not valid JSON: a number with too many digits" in (
                result.stderr
            )
        else:
            assert result.exit_code == 0, (args, result.output)
    as_json = json.loads(runner.invoke(main, ["summary", "--json", str(path)]).stdout.splitlines()[0])
    assert as_json["duration_ms"] is None  # valid JSON out, whatever came in


@pytest.mark.parametrize(
    "args",
    [["summary"], ["show"], ["validate"], ["convert", "--to", "agentv"], ["check", "--spec", "SPEC"]],
    ids=lambda a: a[0],
)
def test_an_input_without_newlines_is_cut_at_the_line_limit(tmp_path: Path, args: list[str]) -> None:
    zero = tmp_path / "zero.jsonl"
    zero.symlink_to("/dev/zero")
    spec = tmp_path / "spec.yaml"
    spec.write_text("checks: [{type: tool_trajectory, expected: []}]\n")
    argv = [a.replace("SPEC", str(spec)) for a in args]
    done = _run(*argv[:1], str(zero), *argv[1:])  # the default limit: 64 MiB, well inside the memory limit
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    assert done.stderr.splitlines()[0] == (
        f"{zero}:1: line longer than 67,108,864 bytes; the rest of the file is not read "
        "(raise the limit with --max-line-bytes or SPANFOLD_MAX_LINE_BYTES)"
    )


def test_the_line_limit_is_configurable(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps([{"role": "user", "content": "x" * 5000}]) + "\n" + json.dumps(EVENTS) + "\n")
    runner = CliRunner()
    result = runner.invoke(main, ["--max-line-bytes", "4KiB", "summary", str(path)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{path}:1: line longer than 4,096 bytes")
    result = runner.invoke(main, ["summary", str(path)], env={"SPANFOLD_MAX_LINE_BYTES": "4096"})
    assert result.exit_code == 2 and result.stderr.startswith(f"{path}:1: line longer than 4,096 bytes")
    assert runner.invoke(main, ["--max-line-bytes", "8KiB", "summary", str(path)]).exit_code == 0
    bad = runner.invoke(main, ["--max-line-bytes", "lots", "summary", str(path)])
    assert bad.exit_code == 2 and "'lots' is not a size in bytes" in bad.stderr
    spec = tmp_path / "spec.json"  # whole documents (a .json file, a spec) are held to the same limit
    spec.write_text(json.dumps({"checks": [{"type": "tool_trajectory", "expected": ["x" * 5000]}]}))
    checked = runner.invoke(main, ["--max-line-bytes", "4KiB", "check", str(path), "--spec", str(spec)])
    assert checked.exit_code == 2 and f"{spec}: spec larger than 4,096 bytes" in checked.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "BOMB"],
        ["summary", "BOMB"],
        ["show", "BOMB"],
        ["convert", "--to", "agentv", "BOMB"],
        ["check", "TRACES", "--spec", "BOMB"],
    ],
    ids=lambda a: a[0],
)
def test_a_billion_laughs_yaml_is_refused(tmp_path: Path, args: list[str]) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(LAUGHS + "\n")
    assert len(LAUGHS) < 600
    traces = tmp_path / "t.jsonl"
    traces.write_text(json.dumps(EVENTS) + "\n")
    argv = [a.replace("BOMB", str(bomb)).replace("TRACES", str(traces)) for a in args]
    done = _run(*argv)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.splitlines()[0] == (
        f"{bomb}:6: YAML aliases expand this document by more than 1,000,000 values and characters"
    )


def test_a_few_aliases_still_read(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "checks:\n"
        "  - {type: tool_trajectory, name: one, expected: &tools [get_weather, get_weather]}\n"
        "  - {type: tool_trajectory, name: two, mode: in_order, expected: *tools}\n"
    )
    traces = tmp_path / "t.yaml"
    traces.write_text("- &q {role: user, content: weather}\n- {role: assistant, content: sunny}\n- *q\n")
    runner = CliRunner()
    assert runner.invoke(main, ["summary", str(traces)]).exit_code == 0
    result = runner.invoke(main, ["check", str(traces), "--spec", str(spec)])
    assert result.exit_code == 1 and "0 passed, 2 failed" in result.stdout  # read, run, failed on their merits

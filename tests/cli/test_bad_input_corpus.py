"""Every command that reads files, over a corpus of broken files: exit 2 (``validate``: 1 for values that parse but
break a schema), one ``FILE[:LINE]: problem`` line on stderr per problem, never a traceback, no file left behind."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

Cli = Callable[..., Result]

GOOD = json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
DEEP = b"[" * 5000 + b"]" * 5000
#: Bytes 0-255 over and over: NULs, control characters, newlines, bytes that are not UTF-8.
BINARY = bytes(range(256)) * 64
HUGE = b"x" * (4 * 1024 * 1024)

#: Trace files: name -> content (the suffix picks the reader: JSONL, one JSON document, YAML).
TRACE_FILES: dict[str, bytes] = {
    "truncated.jsonl": f"{GOOD}\n{GOOD[:30]}".encode(),
    "wrong-types.jsonl": b'[{"role": "user", "content": 42}]\n',
    "wrong-types.json": b'{"trace": 5}',
    "huge-line.jsonl": GOOD.encode() + b"\n[" + HUGE + b"\n",
    "binary.jsonl": BINARY,
    "binary.yaml": BINARY,
    "empty.jsonl": b"",
    "empty.json": b"  \n",
    "empty.yaml": b"",
    "invalid-utf8.jsonl": GOOD.encode() + b'\n[{"role": "user", "content": "\xff\xfe"}]\n',
    "invalid-utf8.yaml": b"- {role: user, content: \xff}\n",
    "deep.jsonl": GOOD.encode() + b"\n" + DEEP + b"\n",
    "deep.json": DEEP,
    "deep.yaml": DEEP + b"\n",
    "self.yaml": b"- {role: user, content: hi, extra: &a [*a]}\n",
    "gzip.jsonl": gzip.compress(f"{GOOD}\n".encode() * 100),
}
#: Spec files for ``check --spec``.
SPEC_FILES: dict[str, bytes] = {
    "truncated.yaml": b"checks:\n  - type: tool_trajectory\n    expected: [search\n",
    "wrong-types.yaml": b"checks: 5\n",
    "wrong-types.json": b'{"checks": [{"type": "tool_trajectory", "mode": 3}]}',
    "huge-line.yaml": b"checks: [" + HUGE + b"\n",
    "binary.yaml": BINARY,
    "empty.yaml": b"",
    "invalid-utf8.yaml": b"expected_messages: [{role: user, content: \xff}]\n",
    "deep.yaml": DEEP + b"\n",
    "deep.json": DEEP,
    "self.yaml": b"expected_messages: &a [*a]\n",
}
#: OTLP/JSON span files for ``fold``.
SPAN = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "chat"}
REQUEST = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [SPAN]}]}]})
SPAN_FILES: dict[str, bytes] = {
    "truncated.jsonl": f"{REQUEST}\n{REQUEST[:40]}\n".encode(),
    "wrong-types.jsonl": b'{"resourceSpans": 5}\n',
    "wrong-span.jsonl": REQUEST.replace('"chat"', '"chat", "kind": "SOMETIMES"').encode(),
    "huge-line.jsonl": REQUEST.encode() + b"\n{" + HUGE + b"\n",
    "binary.jsonl": BINARY,
    "empty.jsonl": b"",
    "invalid-utf8.jsonl": REQUEST.replace("chat", "\udcff", 1).encode("utf-8", "surrogateescape"),
    "deep.jsonl": REQUEST.encode() + b"\n" + DEEP + b"\n",
    "deep.json": b'{"resourceSpans": ' + DEEP + b"}",
    "gzip-garbage.jsonl.gz": b"\x1f\x8b\x08\x00" + BINARY,
    "gzip-truncated.jsonl.gz": gzip.compress(f"{REQUEST}\n".encode() * 1000)[:-100],
}

#: command -> (argument list: FILE is the broken file, OUT a path the command must not leave behind; its corpus)
COMMANDS: dict[str, tuple[list[str], dict[str, bytes]]] = {
    "validate": (["validate", "FILE"], TRACE_FILES),
    "convert": (["convert", "--to", "invariant", "FILE", "-o", "OUT.jsonl"], TRACE_FILES),
    "convert-yaml": (["convert", "--to", "compact", "FILE", "-o", "OUT.yaml"], TRACE_FILES),
    "summary": (["summary", "FILE"], TRACE_FILES),
    "show": (["show", "FILE"], TRACE_FILES),
    "check-traces": (["check", "--spec", "SPEC", "FILE"], TRACE_FILES),  # (--junit reports input errors: written)
    "check-spec": (["check", "--spec", "FILE", "--junit", "OUT.xml", "TRACES"], SPEC_FILES),
    "fold": (["fold", "FILE", "-o", "OUT"], SPAN_FILES),
}
CASES = [(command, name) for command, (_, corpus) in COMMANDS.items() for name in corpus]


def schema_only(command: str, name: str) -> bool:
    """validate reads these files fine; their values break a schema (exit 1)."""
    return command == "validate" and name.startswith("wrong-types")


@pytest.mark.parametrize(("command", "name"), CASES, ids=[f"{c}-{n}" for c, n in CASES])
def test_broken_file(cli: Cli, tmp_path: Path, command: str, name: str) -> None:
    args, corpus = COMMANDS[command]
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "spec.yaml").write_text("expected_messages: [{role: user}]\n")
    (inputs / "traces.jsonl").write_text(f"{GOOD}\n")
    path = inputs / name
    path.write_bytes(corpus[name])
    before = sorted(tmp_path.rglob("*"))
    replace = {"FILE": path, "SPEC": inputs / "spec.yaml", "TRACES": inputs / "traces.jsonl"}
    result = cli(*[replace.get(a, str(a).replace("OUT", str(tmp_path / "out"))) for a in args])

    assert "Traceback" not in result.output
    assert result.exit_code == (1 if schema_only(command, name) else 2), result.output[-2000:]
    problems = result.stderr.splitlines()
    assert problems, "no problem named"
    where = re.compile(rf"{re.escape(str(path))}(:(\d+))?: \S")
    lines = [where.match(p) for p in problems]
    assert all(lines), problems
    numbers = [m.group(2) for m in lines if m is not None]
    assert len(set(numbers)) == len(numbers), problems  # one line per problem
    assert sorted(tmp_path.rglob("*")) == before  # no output, no temporary file, no directory

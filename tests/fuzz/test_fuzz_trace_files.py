"""``spanfold validate``, ``show`` and ``convert`` on mutated trace files of every format they read (Invariant JSONL
and its metadata, AgentV, AgentV transcript rows, one JSON document, compact YAML, agentv-cli JSON) and ``spanfold
fold`` on mutated OTLP/JSON span files: exit 0 or a refusal naming the file (exit 2; ``validate`` also 1, a schema
broken), never a traceback or a hang, and no output file left behind by a refusal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spanfold.trace import formats

from .conftest import FUZZ, Corpus, assert_clear, dumps, mutated_bytes, mutated_value, run_cli, write

TRACE_FILES = [
    "invariant.jsonl",
    "invariant.meta.jsonl",
    "agentv.jsonl",
    "transcript.jsonl",
    "object.json",
    "compact.yaml",
    "agentv-cli.json",
]


@st.composite
def mutated_file(draw: st.DrawFn, name: str, data: bytes) -> bytes:
    """The file damaged as bytes, or one of its values (a line, or the document) damaged as data."""
    if draw(st.booleans()):
        return draw(mutated_bytes(data))
    if name.endswith(".jsonl"):
        lines = data.decode().splitlines()
        i = draw(st.integers(0, len(lines) - 1))
        lines[i] = dumps(draw(mutated_value(json.loads(lines[i]))))
        return ("\n".join(lines) + "\n").encode()
    if name.endswith(".yaml"):
        import yaml

        return dumps(draw(mutated_value(yaml.safe_load(data)))).encode()
    return dumps(draw(mutated_value(json.loads(data)))).encode()


@pytest.mark.parametrize("name", TRACE_FILES)
def test_trace_readers_answer_or_refuse_clearly(name: str, corpus: Corpus, in_tmp: Path) -> None:
    seed = corpus.trace_files[name]
    out = in_tmp / "out"

    @FUZZ
    @given(data=mutated_file(name, seed), command=st.sampled_from(["validate", "show", "convert"]), to=st.data())
    def check(data: bytes, command: str, to: Any) -> None:
        source = write(Path(name), data)
        for stale in out.glob("*"):
            stale.unlink()
        out.mkdir(exist_ok=True)
        if command == "convert":
            fmt = to.draw(st.sampled_from(formats.FORMATS))
            target = f"out/converted.{to.draw(st.sampled_from(['jsonl', 'json', 'yaml']))}"
            if fmt == "agentv-transcript" and target.endswith(".yaml"):
                target = "out/converted.jsonl"
            outcome = run_cli("convert", source, "--to", fmt, "-o", target)
            if outcome.code != 0:
                assert list(out.iterdir()) == [], "a refused conversion left a file"
        elif command == "show":
            outcome = run_cli("show", source, "--max-chars", "200")
        else:
            outcome = run_cli("validate", source)
        assert_clear(outcome, files=[source], codes=(0, 1, 2) if command == "validate" else (0, 2))

    check()


def test_fold_answers_or_refuses_clearly_and_writes_nothing_when_it_refuses(corpus: Corpus, in_tmp: Path) -> None:
    out = in_tmp / "folded"

    @FUZZ
    @given(data=mutated_file("spans.jsonl", corpus.otlp_json), fmt=st.sampled_from(["invariant", "agentv"]))
    def check(data: bytes, fmt: str) -> None:
        source = write(Path("spans.jsonl"), data)
        for stale in out.glob("*"):
            stale.unlink()
        if out.exists():
            out.rmdir()
        outcome = run_cli("fold", source, "-o", out.name, "--format", fmt)
        assert_clear(outcome, files=[source])
        if outcome.code != 0:
            assert not out.exists(), "a refused fold left its output"

    check()

"""The streaming file reader: JSONL, JSON documents, YAML, metadata siblings, bad lines, bounded memory."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

from spanfold.trace.read import Problem, Record, meta_sibling, read_records, read_values

EVENTS = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def lines(path: Path, *items: Any) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in items), encoding="utf-8")
    return path


def outcome(path: Path, **kw: Any) -> list[str]:
    out = []
    for item in read_records(path, **kw):
        if isinstance(item, Problem):
            out.append(str(item))
        else:
            out.append(f"{item.line}:{item.decoded.shape}")
    return out


def test_jsonl_both_invariant_styles_and_a_dataset_line(tmp_path: Path) -> None:
    path = lines(
        tmp_path / "t.jsonl",
        {"metadata": {"dataset": "d"}},
        EVENTS,
        "",
        "   ",
        {"messages": EVENTS, "metadata": {"trace_id": "x"}},
    )
    assert outcome(path) == ["1:metadata", "2:invariant", "5:invariant-object"]


def test_bad_lines_are_reported_and_reading_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        json.dumps(EVENTS).encode()
        + b"\n"
        + b'[{"role": "user", "content": "caf\xe9"}]\n'  # Latin-1, not UTF-8
        + b'{"role": "user"}\n'
        + b'[{"role": 5}]\n'
        + json.dumps(EVENTS).encode()
        + b"\n"
        + b'[{"role": "user", "cont'  # truncated: the writer died mid-line
    )
    assert outcome(path) == [
        "1:invariant",
        f"{path}:2: not valid UTF-8 (byte 34 of the line)",
        f"{path}:3: not a trace: a trace must be an event list (or an AgentV document with a 'trace' list)",
        f"{path}:4: not a trace: event 1 has no role",
        "5:invariant",
        f"{path}:6: not valid JSON: Unterminated string starting at (column 19)",
    ]


def test_missing_file_directory_and_empty_file(tmp_path: Path) -> None:
    assert outcome(tmp_path / "nope.jsonl") == [f"{tmp_path / 'nope.jsonl'}: no such file"]
    assert outcome(tmp_path) == [f"{tmp_path}: is a directory, not a trace file"]
    (tmp_path / "empty.jsonl").write_text("")
    assert outcome(tmp_path / "empty.jsonl") == []


def test_json_document_and_jsonl_named_json(tmp_path: Path) -> None:
    pretty = tmp_path / "one.json"
    pretty.write_text(json.dumps({"trace": EVENTS, "metadata": {"trace_id": "a"}}, indent=2))
    assert outcome(pretty) == ["1:invariant-document"]
    several = lines(tmp_path / "many.json", EVENTS, EVENTS)
    assert outcome(several) == ["1:invariant", "2:invariant"]
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "trace": [\n    {"role": "user",}\n  ]\n}\n')
    assert outcome(broken) == [
        f"{broken}:3: not valid JSON: Expecting property name enclosed in double quotes (column 21)"
    ]


def test_yaml_documents_with_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(
        "- role: user\n  content: hi\n---\n- role: assistant\n  tool_calls:\n    - {tool: search, input: {q: x}}\n"
    )
    assert outcome(path) == ["1:invariant", "4:compact"]
    bad = tmp_path / "bad.yml"
    bad.write_text("- role: user\n  content: [unclosed\n")
    (problem,) = outcome(bad)
    assert problem.startswith(f"{bad}:3: not valid YAML: ")


def test_metadata_sibling_fills_each_trace_in_step(tmp_path: Path) -> None:
    path = lines(tmp_path / "traces.jsonl", EVENTS, "{oops", EVENTS)
    lines(
        tmp_path / "traces.meta.jsonl",
        {"metadata": {"trace_id": "a", "usage": {"input_tokens": 3, "output_tokens": 4}}},
        {"metadata": {"trace_id": "b"}},
        {"metadata": {"trace_id": "c", "name": "bot"}},
    )
    assert meta_sibling(path) == tmp_path / "traces.meta.jsonl"
    assert meta_sibling(tmp_path / "traces.meta.jsonl") is None
    found = list(read_records(path))
    assert isinstance(found[0], Record) and found[0].trace is not None
    assert found[0].trace.meta.trace_id == "a" and found[0].trace.meta.usage.output_tokens == 4
    assert isinstance(found[1], Problem)  # the bad line keeps its metadata record: "b" is skipped with it
    assert isinstance(found[2], Record) and found[2].trace is not None
    assert (found[2].trace.meta.trace_id, found[2].trace.meta.name) == ("c", "bot")
    assert all(
        r.trace is None or not r.trace.meta.trace_id
        for r in read_records(path, siblings=False)
        if isinstance(r, Record)
    )


def test_a_bad_metadata_record_is_reported(tmp_path: Path) -> None:
    path = lines(tmp_path / "traces.jsonl", EVENTS)
    lines(tmp_path / "traces.meta.jsonl", [1, 2])
    assert outcome(path) == [
        f'{tmp_path / "traces.meta.jsonl"}:1: not a metadata record ({{"metadata": {{...}}}})',
        "1:invariant",
    ]


def test_values_are_streamed_in_bounded_memory(tmp_path: Path) -> None:
    """Reading a file many times larger than the memory it may use: nothing is kept between lines."""
    event = {"role": "tool", "tool_call_id": "c", "content": "x" * 2000}
    line = json.dumps([event] * 5) + "\n"
    path = tmp_path / "big.jsonl"
    with path.open("w") as f:
        for _ in range(2000):  # ~20 MB
            f.write(line)
    seen = []
    tracemalloc.start()
    try:
        count = 0
        for item in read_records(path, seen.append):
            assert isinstance(item, Record)
            count += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 2000
    assert peak < 2_000_000, peak  # a few lines' worth, not the file's 20 MB
    assert seen[-1] == path.stat().st_size  # progress reached the end of the file


def test_read_values_reports_the_first_line_of_each_value(tmp_path: Path) -> None:
    path = lines(tmp_path / "t.jsonl", "", EVENTS)
    (value,) = list(read_values(path))
    assert not isinstance(value, Problem) and value.line == 2 and value.data == EVENTS


def test_whole_files_that_are_not_utf8_name_the_line(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_bytes(b"- role: user\n  content: \xff\n")
    doc = tmp_path / "one.json"
    doc.write_bytes(b'[\n{"role": "\xff"}]')
    assert outcome(spec) == [f"{spec}:2: not valid UTF-8 (byte 25)"]
    assert outcome(doc) == [f"{doc}:2: not valid UTF-8 (byte 13)"]

"""One way to summarise a trace (issue 47, item 3): the ``spanfold ui`` list shows each run's summary as the trace
model computes it (``Trace.summary()``, what ``spanfold summary`` prints), its steps and first question from the
model's events, whether the line is a bare Invariant event list (read only for what the list shows) or any other
shape (decoded whole); a line the decoder refuses is a problem, as ``spanfold summary`` counts it, never a run."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from spanfold.trace.decode import decode
from spanfold.trace.errors import TraceError
from spanfold.ui.index import PREVIEW_CHARS, Index


def _user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def _calls(*names: str, content: Any = None, **call: Any) -> dict[str, Any]:
    listed = [
        {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": "{}"}, **call}
        for n, name in enumerate(names)
    ]
    return {"role": "assistant", "content": content, "tool_calls": listed}


TRACES: dict[str, Any] = {
    "plain": [
        _user("q"),
        _calls("search", "search", "fetch"),
        {"role": "tool", "content": "o"},
        {"role": "assistant", "content": "a"},
    ],
    "chunks": [
        _user(
            [
                {"type": "text", "text": "hello "},
                {"type": "image_url", "image_url": "u"},
                {"type": "text", "text": "you"},
            ]
        )
    ],
    "long question": [_user("x" * (PREVIEW_CHARS + 50)), {"role": "assistant", "content": "a"}],
    "calls with text": [_user("q"), _calls("grep", content="looking")],
    "call without its function wrapper": [
        _user("q"),
        {"role": "assistant", "content": None, "tool_calls": [{"name": "bare"}]},
    ],
    "failed tool": [
        _user("q"),
        _calls("run"),
        {"role": "tool", "content": "boom", "error": {"type": "E", "message": "m"}},
    ],
    "failed model call": [_user("q"), {"role": "error", "content": None, "error": {"type": "E", "message": "m"}}],
    "no question": [{"role": "system", "content": "s"}, {"role": "assistant", "content": "hi"}],
    "first question without text": [_user(None), _user("second"), {"role": "assistant", "content": "a"}],
    "extra keys": [{"role": "user", "content": "q", "timestamp": "2026-01-01T00:00:00Z", "name": 3, "other": [1]}],
    "empty": [],
    "compact": [
        _user("q"),
        {"role": "assistant", "content": "c", "tool_calls": [{"tool": "t", "input": {}, "output": "o"}]},
    ],
    "transcript rows": [{"test_id": "t", "message_index": 0, "role": "user", "content": "q"}],
    "object": {"messages": [_user("q"), _calls("a"), _calls("b")], "metadata": {"trace_id": "ab" * 16, "handed": 2}},
}
REFUSED: dict[str, Any] = {
    "content a number": [_user(5)],
    "a chunk that is no object": [_user(["text"])],
    "a chunk without a type": [_user([{"text": "t"}])],
    "tool_calls not a list": [_user("q"), {"role": "assistant", "content": "a", "tool_calls": ""}],
    "an error that is no object": [{"role": "tool", "content": "o", "error": "boom"}],
    "no role": [{"content": "q"}],
    "a call without a name": [_calls("x", function={"arguments": {}})],
}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Index, dict[str, Any]]:
    directory = tmp_path_factory.mktemp("lines")
    values = {**TRACES, **REFUSED}
    (directory / "traces.jsonl").write_text("".join(json.dumps(v) + "\n" for v in values.values()))
    index = Index([directory])
    index.refresh()
    by_line = {row.line: row for row in index.rows.values()}
    return index, {name: by_line.get(n) for n, name in enumerate(values, start=1)}


@pytest.mark.parametrize("name", list(TRACES))
def test_each_row_is_summarised_by_the_trace_model(indexed: tuple[Index, dict[str, Any]], name: str) -> None:
    decoded = decode(TRACES[name])
    trace = decoded.trace
    assert trace is not None
    row = indexed[1][name]
    assert row is not None and row.shape == decoded.shape
    assert row.summary == trace.summary()
    assert row.steps == sum(1 for ev in trace.events if ev.role in ("assistant", "tool"))
    first_question = next((ev.text() for ev in trace.events if ev.role == "user"), "")
    assert row.preview == first_question[:PREVIEW_CHARS]
    if decoded.shape == "invariant":  # what a big file holds: the same few tool names in every row, held once
        assert all(sys.intern(tool) is tool for tool in row.summary.tool_calls_by_name)


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_line_the_decoder_refuses_is_a_problem_not_a_run(indexed: tuple[Index, dict[str, Any]], name: str) -> None:
    with pytest.raises(TraceError):
        decode(REFUSED[name])
    assert indexed[1][name] is None
    assert indexed[0].problems() == len(REFUSED)


def test_a_scores_sidecar_is_no_trace_file(tmp_path: Any) -> None:
    """``spanfold.score`` writes ``traces.scores.jsonl`` beside the traces: its lines are no runs and no problems."""
    (tmp_path / "traces.jsonl").write_text(json.dumps(TRACES[next(iter(TRACES))]) + "\n")
    score = {"trace_id": "0" * 32, "name": "helpful", "value": 1, "source": "human", "time": "2026-11-29T00:00:00Z"}
    (tmp_path / "traces.scores.jsonl").write_text(json.dumps(score) + "\n")
    index = Index([tmp_path])
    index.refresh()
    assert [Path(row.file).name for row in index.rows.values()] == ["traces.jsonl"]
    assert index.problems() == 0

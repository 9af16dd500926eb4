"""A growing OTLP JSON span file in ``spanfold ui`` (issue 28, item 5): the list never shows fewer runs while the
file is folded again, a permalink keeps answering, and each look folds only the traces its new lines touched, with
the runs a fold of the whole file gives. The spans are a real run's (``SPANFOLD_FORMAT=otlp-json``), as other
traces (their trace ids renamed) and as a Collector batches them (a trace's spans over several lines)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tests.ui.test_span_files import renamed

from spanfold.exporter.pipeline.span_files import fold_spans
from spanfold.ui.index import Index
from spanfold.ui.watched_spans import SpanFile


def _spans(line: bytes) -> list[dict[str, Any]]:
    doc = json.loads(line)
    return [s for r in doc["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]]


def _with_spans(line: bytes, keep: Any) -> bytes:
    """The line with only the spans ``keep(span)`` accepts (what one Collector batch of the trace holds)."""
    doc = json.loads(line)
    for resource in doc["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            scope["spans"] = [s for s in scope["spans"] if keep(s)]
    return json.dumps(doc, separators=(",", ":")).encode() + b"\n"


def _unrooted(line: bytes) -> bytes:
    """The run without its agent span, its calls and tool runs un-parented (a zero-code run another SDK exported)."""
    doc = json.loads(line)
    for resource in doc["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            scope["spans"] = [s for s in scope["spans"] if not s["name"].startswith("invoke_agent")]
            for span in scope["spans"]:
                span.pop("parentSpanId", None)
    return json.dumps(doc, separators=(",", ":")).encode() + b"\n"


def _calls_apart(line: bytes, base: int) -> list[bytes]:
    """The run as another producer exports it: no agent span, each call and tool run a trace of its own (the fold
    stitches them into one run), in lines as they end: the first call; the tool runs it asked for and the next
    call; and so on."""
    doc = json.loads(line)
    resource = doc["resourceSpans"][0]["resource"]
    spans = sorted(
        (s for s in _spans(line) if not s["name"].startswith("invoke_agent")), key=lambda s: int(s["startTimeUnixNano"])
    )
    batches: list[list[dict[str, Any]]] = [[]]
    for n, span in enumerate(spans):
        span["traceId"] = f"{base + n:032x}"
        span.pop("parentSpanId", None)
        batches[-1].append(span)
        if span["name"].startswith("chat"):
            batches.append([])
    scope = doc["resourceSpans"][0]["scopeSpans"][0]["scope"]
    return [
        json.dumps(
            {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": scope, "spans": batch}]}]}
        ).encode()
        + b"\n"
        for batch in batches
        if batch
    ]


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def _folded_whole(path: Path) -> list[tuple[str, Any]]:
    return sorted((t.meta.trace_id, t.to_invariant()) for t, _, _ in fold_spans([path]).traces)


def _listed(index: Index) -> list[tuple[str, Any]]:
    out = []
    for row in index.snapshot()[1]:
        trace = index.trace(row)[1]
        assert trace is not None
        out.append((trace.meta.trace_id, trace.to_invariant()))
    return sorted(out)


def test_an_append_folds_only_the_traces_it_touched(tmp_path: Path, otlp_dir: Path) -> None:
    line = (otlp_dir / "traces.otlp.jsonl").read_bytes()
    path = tmp_path / "traces.otlp.jsonl"
    path.write_bytes(b"".join(renamed(line, n) for n in range(1, 21)))
    spans = SpanFile(path)
    first = spans.refresh()
    assert first is not None and len(first.added) == 20 and first.spans == 20 * len(_spans(line))
    assert spans.refresh() is None  # nothing new: nothing read
    _append(path, renamed(line, 21))
    update = spans.refresh()
    assert update is not None and update.dropped == [] and [r.key for r in update.added] == [21]
    assert update.spans == len(_spans(line))  # the new trace's spans only, not the file's


#: A zero-code run (no agent span) of the demo's agent, its spans written as OTLP JSON (SPANFOLD_FORMAT).
ZERO_CODE_RUN = """
import openai, spanfold
from spanfold.testing import MockLLMServer, run_agent, scenarios
spanfold.init()
with MockLLMServer(scenarios.weather_agent) as server:
    run_agent("openai", openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0))
"""


@pytest.fixture(scope="module")
def zero_code_line(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    out = tmp_path_factory.mktemp("zero-code") / "traces"
    env = {**os.environ, "SPANFOLD_FORMAT": "otlp-json", "SPANFOLD_OUTPUT": str(out)}
    subprocess.run([sys.executable, "-c", ZERO_CODE_RUN], check=True, capture_output=True, env=env, timeout=120)
    (line,) = (out / "traces.otlp.jsonl").read_bytes().splitlines(keepends=True)
    return line


def test_runs_the_source_stitched_are_folded_on_their_own(tmp_path: Path, zero_code_line: bytes) -> None:
    """spanfold's own zero-code runs (``spanfold.stitched``: their trace id says which run they are) go through the
    stitcher, yet no other trace joins them: an append folds the new run only."""
    path = tmp_path / "traces.otlp.jsonl"
    path.write_bytes(b"".join(renamed(zero_code_line, n) for n in range(1, 11)))
    spans = SpanFile(path)
    first = spans.refresh()
    assert first is not None and len(first.added) == 10
    assert all(run.trace.meta.extra.get("otel_trace_ids") for run in first.added)  # through the stitcher
    _append(path, renamed(zero_code_line, 11))
    update = spans.refresh()
    assert update is not None and update.dropped == [] and [r.key for r in update.added] == [11]
    assert update.spans == len(_spans(zero_code_line))
    assert update.added[0].trace.summary().tool_calls_by_name == {"get_weather": 2, "convert_temperature": 1}


def test_a_trace_over_several_lines_is_folded_again_with_all_its_spans(tmp_path: Path, otlp_dir: Path) -> None:
    line = (otlp_dir / "traces.otlp.jsonl").read_bytes()
    path = tmp_path / "traces.otlp.jsonl"
    calls = lambda s: s["name"].startswith("chat")  # noqa: E731
    path.write_bytes(renamed(line, 1) + _with_spans(renamed(line, 2), calls))
    index = Index([tmp_path])
    index.refresh()
    assert _listed(index) == _folded_whole(path)
    ids = {r.meta.trace_id: r.id for r in index.snapshot()[1]}
    _append(path, _with_spans(renamed(line, 2), lambda s: not calls(s)) + renamed(line, 3))
    index.refresh()
    assert _listed(index) == _folded_whole(path)
    assert {r.meta.trace_id: r.id for r in index.snapshot()[1] if r.meta.trace_id in ids} == ids  # permalinks kept
    assert len(index.snapshot()[1]) == 3
    (two,) = [r for r in index.snapshot()[1] if r.meta.trace_id == f"{2:032x}"]
    assert two.meta.name == "otlp-bot" and two.summary.tool_calls_by_name == {
        "get_weather": 2,
        "convert_temperature": 1,
    }


def test_runs_that_may_be_stitched_come_out_as_a_whole_fold_gives_them(tmp_path: Path, otlp_dir: Path) -> None:
    line = (otlp_dir / "traces.otlp.jsonl").read_bytes()
    path = tmp_path / "traces.otlp.jsonl"
    appends = [
        *_calls_apart(line, 100),  # stitched into one run as its calls come
        _unrooted(renamed(line, 1)),
        renamed(line, 2),
        _unrooted(renamed(line, 3)) + b"{not json\n",
        _with_spans(_unrooted(renamed(line, 4)), lambda s: s["name"].startswith("chat")),
        _with_spans(_unrooted(renamed(line, 4)), lambda s: not s["name"].startswith("chat")) + renamed(line, 5),
    ]
    index = Index([tmp_path])
    path.write_bytes(b"")
    for data in appends:
        _append(path, data)
        index.refresh()
        good = path.read_bytes().replace(b"{not json\n", b"")
        whole = tmp_path / "whole" / "traces.otlp.jsonl"
        whole.parent.mkdir(exist_ok=True)
        whole.write_bytes(good)
        assert _listed(index) == _folded_whole(whole)
    assert index.problems() == 1  # the bad line, counted once
    stitched = [r for r in index.snapshot()[1] if r.meta.trace_id == f"{100:032x}"]
    assert [r.summary.tool_calls_by_name for r in stitched] == [{"get_weather": 2, "convert_temperature": 1}]


def test_a_growing_span_file_never_lists_fewer_runs(tmp_path: Path, otlp_dir: Path, ui_server: Any) -> None:
    line = (otlp_dir / "traces.otlp.jsonl").read_bytes()
    path = tmp_path / "traces.otlp.jsonl"
    path.write_bytes(b"".join(renamed(line, n) for n in range(1, 61)))
    server = ui_server([tmp_path])
    server.wait_total(60)
    permalink = next(r["id"] for r in server.json("/api/runs?limit=500")["runs"] if r["trace_id"] == f"{1:032x}")
    seen: list[int] = []
    missing: list[int] = []
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            seen.append(server.json("/api/state")["total"])
            status = server.get(f"/api/run/{permalink}")[0]
            if status != 200:
                missing.append(status)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        for n in range(61, 71):
            _append(path, renamed(line, n))
            time.sleep(0.3)
        server.wait_total(70)
    finally:
        done.set()
        poller.join()
    assert len(seen) > 20
    assert all(b >= a for a, b in itertools.pairwise(seen)), "the list showed fewer runs while folding"
    assert min(seen) >= 60 and missing == []


def test_a_big_span_file_is_read_over_several_looks(
    tmp_path: Path, otlp_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each look reads a bounded number of bytes and says when more are waiting (the page looks again at once)."""
    from spanfold.ui import watched_spans as span_files

    line = (otlp_dir / "traces.otlp.jsonl").read_bytes()
    monkeypatch.setattr(span_files, "CHUNK", len(line) * 3)
    path = tmp_path / "traces.otlp.jsonl"
    path.write_bytes(b"".join(renamed(line, n) for n in range(1, 11)))
    index = Index([tmp_path])
    index.refresh()
    assert index.behind and 0 < len(index.snapshot()[1]) < 10
    looks = 1
    while index.behind:
        index.refresh()
        looks += 1
    assert len(index.snapshot()[1]) == 10 and looks > 2
    assert _listed(index) == _folded_whole(path)

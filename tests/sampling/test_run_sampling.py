"""Whole-run sampling (issue 50, item 1), against real SDK calls: 1,000 runs with seeded failures, every failure kept
and the kept fraction of the rest within its binomial bound, each decided by its trace id; the same decision in two
processes; spanfold's OTLP export carrying exactly the kept runs; ``spanfold serve`` applying it."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import spanfold
from spanfold import counters
from spanfold.exporter.files.writers import MemoryWriter
from spanfold.exporter.pipeline.receiver import ReceiverThread, ServeOptions
from spanfold.sampling.decision import by_trace_id
from spanfold.setup import sampler_for
from spanfold.testing import MockLLMServer

from .runs import PRICES, SLOW_S, Played, answer_is_right, play, responder, seeded_kinds

HERE = Path(__file__).resolve().parent


def written(directory: Path) -> dict[str, dict[str, Any]]:
    """The runs written to ``directory``'s Invariant files: question -> metadata."""
    assert spanfold.flush(timeout=60)
    events = [json.loads(line) for line in (directory / "traces.jsonl").read_text().splitlines()]
    metas = [json.loads(line)["metadata"] for line in (directory / "traces.meta.jsonl").read_text().splitlines()]
    return {
        next(e["content"] for e in trace if e["role"] == "user"): meta
        for trace, meta in zip(events, metas, strict=True)
    }


def within_binomial(kept: int, n: int, rate: float, sigmas: float = 4.0) -> bool:
    spread = sigmas * math.sqrt(n * rate * (1 - rate))
    return abs(kept - n * rate) <= spread


def test_a_thousand_runs_keep_every_failure_and_a_fraction_of_the_rest(tmp_path: Path, _global_provider: Any) -> None:
    rate = 0.2
    sample = spanfold.Sample(rate=rate, slower_than=SLOW_S * 0.8, costlier_than=1.0, failing=[answer_is_right])
    kinds = seeded_kinds(1000)
    out = tmp_path / "traces"
    spanfold.init(output=str(out), sample=sample, prices=PRICES)
    try:
        with MockLLMServer(responder) as server:
            played = list(play(server, kinds))
        runs = written(out)
        stats = spanfold.stats()
    finally:
        spanfold.shutdown()
    failing = [p for p in played if p.kind != "ok"]
    ok = [p for p in played if p.kind == "ok"]
    assert len(failing) >= 100 and all(p.trace_id for p in played)
    # every failing run is written, whatever its trace id
    assert [p.question for p in failing if p.question not in runs] == []
    # an ok run the noisy machine made slower than the bound is kept as slow, rightly: it is not of "the rest"
    bound_ms = sample.slower_than * 1000
    slow_ok = {p.question for p in ok if p.question in runs and runs[p.question]["duration_ms"] > bound_ms}
    rest = [p for p in ok if p.question not in slow_ok]
    # of the rest, exactly those whose trace id falls in the rate: the decision is the trace id's
    kept_rest = {p.question for p in rest if p.question in runs}
    assert kept_rest == {p.question for p in rest if by_trace_id(p.trace_id, rate)}
    assert within_binomial(len(kept_rest), len(rest), rate), (len(kept_rest), len(rest))
    assert len(slow_ok) < len(ok) / 20
    assert len(runs) == len(failing) + len(slow_ok) + len(kept_rest)
    assert {runs[p.question]["trace_id"] for p in played if p.question in runs} == {
        format(p.trace_id, "032x") for p in played if p.question in runs
    }
    # counted by reason
    by_kind = {kind: sum(1 for p in failing if p.kind == kind) for kind in ("fail", "slow", "pricey", "wrong")}
    assert stats["sampling.kept.error"] == by_kind["fail"]
    assert stats["sampling.kept.slow"] == by_kind["slow"] + len(slow_ok)
    assert stats["sampling.kept.costly"] == by_kind["pricey"]
    assert stats["sampling.kept.failing"] == by_kind["wrong"]
    assert stats["sampling.kept.rate"] == len(kept_rest)
    assert stats["sampling.kept"] == len(runs)
    assert stats["sampling.dropped"] == stats["sampling.dropped.rate"] == len(rest) - len(kept_rest)
    assert stats.get("faults", 0) == 0


def test_the_same_runs_are_kept_in_two_processes(tmp_path: Path) -> None:
    """Two processes run the same 200 runs (each under a caller's trace id, as two shards serving one request would);
    each writes the same ones: the failures, and the trace ids in the rate."""
    outputs = [tmp_path / "a", tmp_path / "b"]
    env = {**os.environ, "SPANFOLD_SAMPLE": "rate=0.3"}
    children = [
        subprocess.Popen([sys.executable, str(HERE / "shard_child.py"), str(out)], env=env, stderr=subprocess.PIPE)
        for out in outputs
    ]
    for child in children:
        _, err = child.communicate(timeout=180)
        assert child.returncode == 0, err.decode()
    kept = [
        {json.loads(line)["metadata"]["trace_id"] for line in (out / "traces.meta.jsonl").open()} for out in outputs
    ]
    assert kept[0] == kept[1]
    from .shard_child import KINDS, TRACE_IDS

    expected = {
        format(t, "032x") for t, kind in zip(TRACE_IDS, KINDS, strict=True) if kind == "fail" or by_trace_id(t, 0.3)
    }
    assert kept[0] == expected and 30 < len(expected) < 200


def _served(writer: MemoryWriter, count: int) -> set[str]:
    deadline = time.monotonic() + 30
    while len(writer.traces) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return {t.meta.trace_id for t in writer.traces}


def test_the_otlp_export_carries_exactly_the_kept_runs(tmp_path: Path, _global_provider: Any) -> None:
    """spanfold's own OTLP export, sampled: only the kept runs' spans leave, each run's together once decided (a
    receiver folds each into the same run the files hold)."""
    received = MemoryWriter()
    with ReceiverThread(ServeOptions(port=0, output=str(tmp_path / "served"), wait=0.2), [received]) as receiver:
        out = tmp_path / "traces"
        spanfold.init(output=str(out), sample=spanfold.Sample(rate=0.25), otlp=receiver.url)
        try:
            with MockLLMServer(responder) as server:
                played = list(play(server, seeded_kinds(120, seed=7)))
            runs = written(out)
        finally:
            spanfold.shutdown()  # flushes the OTLP export
        kept = {runs[p.question]["trace_id"] for p in played if p.question in runs}
        assert any(p.kind == "fail" for p in played)
        assert _served(received, len(kept)) == kept
    by_id = {t.meta.trace_id: t for t in received.traces}
    for p in played:  # each kept run arrived whole: its agent span and its model call
        if p.question in runs:
            assert by_id[format(p.trace_id, "032x")].meta.span_count == runs[p.question]["span_count"] == 2


def test_serve_applies_the_sample_and_says_what_it_dropped(tmp_path: Path, _global_provider: Any) -> None:
    """An application exporting every run (no sampling of its own) to ``spanfold serve`` with a sample: the receiver
    writes the failures and the rate's trace ids, and its status counts what it dropped, by reason."""
    received = MemoryWriter()
    sampler = sampler_for(spanfold.Sample(rate=0.3))
    options = ServeOptions(port=0, output=str(tmp_path / "served"), wait=0.2, sampler=sampler)
    with ReceiverThread(options, [received]) as receiver:
        spanfold.init(output=str(tmp_path / "traces"), otlp=receiver.url)
        try:
            with MockLLMServer(responder) as server:
                played = list(play(server, seeded_kinds(100, seed=11)))
            assert spanfold.flush(timeout=60)
        finally:
            spanfold.shutdown()
        expected = {format(p.trace_id, "032x") for p in played if p.kind == "fail" or by_trace_id(p.trace_id, 0.3)}
        _served(received, len(expected))
        receiver.fold.flush(30)
        assert {t.meta.trace_id for t in received.traces} == expected
        with urllib.request.urlopen(receiver.url.replace("/v1/traces", "/status"), timeout=10) as answer:
            status = json.load(answer)
    fails = sum(1 for p in played if p.kind == "fail")
    assert status["sampling"]["kept"]["error"] == fails
    assert status["sampling"]["kept"]["total"] == len(expected)
    assert status["sampling"]["dropped"] == {"total": 100 - len(expected), "rate": 100 - len(expected)}


def test_a_check_that_raises_keeps_the_run_and_is_counted_once(tmp_path: Path, _global_provider: Any) -> None:
    def broken(trace: Any) -> bool:
        raise RuntimeError("the user's check is broken")

    out = tmp_path / "traces"
    spanfold.init(output=str(out), sample=spanfold.Sample(rate=0.0, failing=broken))
    try:
        with MockLLMServer(responder) as server:
            played = list(play(server, ["ok"] * 5))
        runs = written(out)
    finally:
        spanfold.shutdown()
    assert set(runs) == {p.question for p in played}
    stats = counters.snapshot()
    assert stats["sampling.kept.check_error"] == 5 and stats["fault.sampling.check"] == 5


def test_rate_zero_keeps_only_what_matters(tmp_path: Path, _global_provider: Any) -> None:
    out = tmp_path / "traces"
    spanfold.init(output=str(out), sample="0")
    try:
        with MockLLMServer(responder) as server:
            played: list[Played] = list(play(server, ["ok", "fail", "ok", "slow"]))
        runs = written(out)
    finally:
        spanfold.shutdown()
    assert set(runs) == {played[1].question}


@pytest.mark.parametrize(
    "spec_text", ["checks:\n  - type: tool_trajectory\n    mode: any_order\n    minimums: {search: 1}\n"]
)
def test_a_spec_file_given_in_the_environment_keeps_the_runs_failing_it(
    tmp_path: Path, _global_provider: Any, monkeypatch: pytest.MonkeyPatch, spec_text: str
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text)
    monkeypatch.setenv("SPANFOLD_SAMPLE", f"rate=0,failing={spec}")
    out = tmp_path / "traces"
    spanfold.init(output=str(out))
    try:
        with MockLLMServer(responder) as server:
            played = list(play(server, ["ok", "ok"]))
        runs = written(out)
    finally:
        spanfold.shutdown()
    assert set(runs) == {p.question for p in played}  # no run called the search tool: each fails the spec
    assert counters.snapshot()["sampling.kept.failing"] == 2


def test_a_trace_that_is_no_run_is_exported_as_it_is(tmp_path: Path, _global_provider: Any) -> None:
    """Sampling decides runs: a trace with no GenAI span (a web request's) makes none and leaves over OTLP at once,
    while a dropped run's spans never leave."""
    import http.server
    import threading

    from opentelemetry import trace
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    names: list[str] = []

    class Collector(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            request = ExportTraceServiceRequest.FromString(body)
            names.extend(s.name for r in request.resource_spans for ss in r.scope_spans for s in ss.spans)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    collector = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    try:
        out = tmp_path / "traces"
        endpoint = f"http://127.0.0.1:{collector.server_address[1]}"
        spanfold.init(output=str(out), sample=spanfold.Sample(rate=0.0), otlp=endpoint)
        try:
            with trace.get_tracer("web").start_as_current_span("GET /health"):
                pass
            with MockLLMServer(responder) as server:
                played = list(play(server, ["ok", "fail"]))
            runs = written(out)
        finally:
            spanfold.shutdown()
    finally:
        collector.shutdown()
    assert set(runs) == {played[1].question}
    assert sorted(names) == sorted(["GET /health", "invoke_agent sampled-bot", "chat gpt-4o-mini"])

"""Past one machine: several ``spanfold serve`` instances behind trace-id routing, as the OpenTelemetry Collector's
``loadbalancing`` exporter does it (``routing_key: traceID``, docs/deployment.md). Two client processes send the
spans of the same traces; routed by trace id, every trace lands whole on one receiver, none lost. Routed per batch
instead (plain round-robin), traces come apart: the check below would catch it."""

from __future__ import annotations

import itertools
import random
import threading
import zlib
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

pytest.importorskip("aiohttp")
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import SpanContext

from spanfold.exporter.files.writers import MemoryWriter
from spanfold.exporter.pipeline.receiver import ReceiverThread, ServeOptions

from .conftest import folded_in_process

RING_POSITIONS = 36_000  # the Collector's ring: 360 degrees, two decimals
POINTS_PER_ENDPOINT = 100


class HashRing:
    """The loadbalancing exporter's consistent-hash ring: each endpoint at the CRC-32 of its name and a point number;
    a trace goes to the first endpoint at or after the CRC-32 of its 16 id bytes."""

    def __init__(self, endpoints: Sequence[str]) -> None:
        taken: dict[int, str] = {}
        for endpoint in endpoints:
            for point in range(POINTS_PER_ENDPOINT):
                taken.setdefault(zlib.crc32(endpoint.encode() + bytes([point])) % RING_POSITIONS, endpoint)
        self.positions = sorted(taken)
        self.endpoints = [taken[p] for p in self.positions]

    def endpoint_for(self, trace_id: int) -> str:
        position = zlib.crc32(trace_id.to_bytes(16, "big")) % RING_POSITIONS
        i = bisect_left(self.positions, position)
        return self.endpoints[i % len(self.endpoints)]


class RoutingExporter(SpanExporter):
    """A client that sends each span to the receiver ``route`` picks for it (one real OTLP request per receiver)."""

    def __init__(self, urls: Sequence[str], route: Callable[[ReadableSpan], str]) -> None:
        self.exporters = {url: OTLPSpanExporter(endpoint=url, timeout=10) for url in urls}
        self.route = route

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        by_url: dict[str, list[ReadableSpan]] = defaultdict(list)
        for span in spans:
            by_url[self.route(span)].append(span)
        results = [self.exporters[url].export(batch) for url, batch in by_url.items()]
        ok = all(r is SpanExportResult.SUCCESS for r in results)
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE


def with_trace_id(span: ReadableSpan, trace_id: int) -> ReadableSpan:
    def moved(ctx: SpanContext | None) -> SpanContext | None:
        return None if ctx is None else SpanContext(trace_id, ctx.span_id, ctx.is_remote, ctx.trace_flags)

    return ReadableSpan(
        name=span.name,
        context=moved(span.context),
        parent=moved(span.parent),
        resource=span.resource,
        attributes=span.attributes,
        events=span.events,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


@pytest.fixture
def receivers() -> Iterator[list[tuple[ReceiverThread, MemoryWriter]]]:
    running = []
    for _ in range(3):
        writer = MemoryWriter()
        thread = ReceiverThread(ServeOptions(port=0, wait=60), writers=[writer])
        thread.__enter__()
        running.append((thread, writer))
    yield running
    for thread, _ in running:
        thread.stop()


def send_from_two_processes(traces: dict[int, list[ReadableSpan]], make: Callable[[], SpanExporter]) -> None:
    """Client A sends the model and agent spans, client B the tool spans, concurrently, in batches of 5."""
    model = [s for spans in traces.values() for s in spans if not s.name.startswith("execute_tool")]
    tools = [s for spans in traces.values() for s in spans if s.name.startswith("execute_tool")]
    failures: list[Any] = []

    def client(spans: list[ReadableSpan]) -> None:
        exporter = make()
        for i in range(0, len(spans), 5):
            if exporter.export(spans[i : i + 5]) is not SpanExportResult.SUCCESS:
                failures.append(i)

    threads = [threading.Thread(target=client, args=(part,)) for part in (model, tools)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert failures == []


def test_routed_by_trace_id_no_trace_is_split_or_lost(
    receivers: list[tuple[ReceiverThread, MemoryWriter]], weather_spans: list[ReadableSpan]
) -> None:
    rng = random.Random(5)
    traces = {tid: [with_trace_id(s, tid) for s in weather_spans] for tid in (rng.getrandbits(128) for _ in range(40))}
    urls = [thread.receiver.url for thread, _ in receivers]
    ring = HashRing(urls)
    send_from_two_processes(traces, lambda: RoutingExporter(urls, lambda s: ring.endpoint_for(s.context.trace_id)))
    for thread, _ in receivers:
        assert thread.stop()
    landed: dict[int, str] = {}
    for (_, writer), url in zip(receivers, urls, strict=True):
        for trace in writer.traces:
            tid = int(trace.meta.trace_id, 16)
            assert tid not in landed, "a trace was folded on two receivers"
            landed[tid] = url
            assert trace.meta.span_count == 7 and trace.meta.status == "complete"
            assert trace.to_invariant() == folded_in_process(traces[tid])
    assert set(landed) == set(traces)  # none lost
    assert landed == {tid: ring.endpoint_for(tid) for tid in traces}  # each where the ring sends it
    assert len(set(landed.values())) == 3  # and the load is spread


def test_round_robin_splits_traces(
    receivers: list[tuple[ReceiverThread, MemoryWriter]], weather_spans: list[ReadableSpan]
) -> None:
    """The control: without trace-id routing the same setup folds fragments."""
    rng = random.Random(7)
    traces = {tid: [with_trace_id(s, tid) for s in weather_spans] for tid in (rng.getrandbits(128) for _ in range(10))}
    urls = [thread.receiver.url for thread, _ in receivers]
    turns = itertools.cycle(urls)
    send_from_two_processes(traces, lambda: RoutingExporter(urls, lambda s: next(turns)))
    for thread, _ in receivers:
        assert thread.stop()
    folded = Counter(t.meta.trace_id for _, writer in receivers for t in writer.traces)
    assert any(n > 1 for n in folded.values())

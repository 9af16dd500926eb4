"""Ingest rate of ``spanfold serve``: OTLP protobuf over loopback HTTP.

    python bench/receiver_ingest.py [--traces 3000] [--clients 2] [--batch 511]

Spans: one real run of the weather agent (the openai SDK against the mock server, spanfold's instrumentation:
an agent span, three chat spans with their full message histories, three tool spans), copied under fresh trace ids,
encoded up front by the SDK's own OTLP encoder in batches like the BatchSpanProcessor's (512 spans at most). The
receiver runs in its own process (``spanfold serve --wait 0.5``); each client is a thread with one keep-alive
connection. Printed: spans/s accepted (HTTP 200: decoded and queued), and spans/s end to end (every trace folded
and on disk, after SIGTERM flushed the rest).
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import openai
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, set_tracer_provider

import spanfold
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.openai.patches import OpenAIInstrumentor
from spanfold.testing import MockLLMServer, run_agent, scenarios


def agent_spans() -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    set_tracer_provider(provider)
    OpenAIInstrumentor().instrument(tracer_provider=provider, runtime=Runtime(capture_content=True))
    with MockLLMServer(scenarios.weather_agent) as server:
        client = openai.OpenAI(api_key="sk-bench", base_url=server.base_url, max_retries=0)
        with spanfold.agent("bench-bot"):
            run_agent("openai", client)
    return list(exporter.get_finished_spans())


def moved(span: ReadableSpan, trace_id: int) -> ReadableSpan:
    def ctx(c: SpanContext | None) -> SpanContext | None:
        return None if c is None else SpanContext(trace_id, c.span_id, c.is_remote, c.trace_flags)

    return ReadableSpan(
        name=span.name,
        context=ctx(span.context),
        parent=ctx(span.parent),
        resource=span.resource,
        attributes=span.attributes,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def bodies(template: list[ReadableSpan], traces: int, batch: int) -> list[bytes]:
    rng = random.Random(1)
    spans = [moved(s, tid) for tid in (rng.getrandbits(128) for _ in range(traces)) for s in template]
    return [encode_spans(spans[i : i + batch]).SerializeToString() for i in range(0, len(spans), batch)]


def send(port: int, parts: list[bytes], failures: list[int]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for body in parts:
        while True:
            conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
            response = conn.getresponse()
            response.read()
            if response.status != 503:
                break
            time.sleep(float(response.getheader("Retry-After", "1")))
        if response.status != 200:
            failures.append(response.status)
    conn.close()


def _cpu_seconds(pid: int) -> float:
    """A live process's CPU (user + system) so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--batch", type=int, default=511, help="spans per request (a multiple of 7 keeps traces whole)")
    args = parser.parse_args()

    template = agent_spans()
    parts = bodies(template, args.traces, args.batch)
    total = len(template) * args.traces
    size = sum(map(len, parts))
    print(f"{total} spans ({args.traces} traces), {len(parts)} requests, {size / total:.0f} bytes/span protobuf")

    out = Path(tempfile.mkdtemp(prefix="spanfold-bench-"))
    cmd = [sys.executable, "-m", "spanfold", "serve", "--port", "0", "-o", str(out), "--wait", "0.5"]
    server = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert server.stderr is not None
    line = server.stderr.readline()
    port = int(line.split("127.0.0.1:")[1].split("/")[0])

    started_cpu = _cpu_seconds(server.pid)  # start-up and imports: not ingest work
    failures: list[int] = []
    shares = [parts[i :: args.clients] for i in range(args.clients)]
    clients = [threading.Thread(target=send, args=(port, share, failures)) for share in shares]
    start = time.perf_counter()
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    accepted = time.perf_counter() - start
    server.send_signal(signal.SIGTERM)
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server.wait(timeout=600)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_cpu = (children.ru_utime + children.ru_stime) - (children_before.ru_utime + children_before.ru_stime)
    server_cpu -= started_cpu
    done = time.perf_counter() - start
    written = sum(1 for _ in (out / "traces.jsonl").open()) if (out / "traces.jsonl").exists() else 0
    print(f"accepted: {total / accepted:,.0f} spans/s ({accepted:.2f} s, {len(failures)} failed requests)")
    print(f"folded and written: {total / done:,.0f} spans/s ({done:.2f} s; {written}/{args.traces} traces on disk)")
    per_cpu = total / server_cpu if server_cpu > 0 else float("nan")
    print(f"receiver CPU from the first request to its exit: {server_cpu:.2f} s: {per_cpu:,.0f} spans per CPU-second")
    print(
        f"TARGET | receiver >= 20k spans/s accepted and folded to disk, one core | {total / done:,.0f} spans/s wall, "
        f"{per_cpu:,.0f} per CPU-second | {'met' if min(total / done, per_cpu) >= 20_000 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()

"""What the user pays in CPU: the whole process, every thread, until the data is where its users read it.

Issue 21's second measure. Each configuration runs the workload of ``bench/workload.py`` (openai SDK over the
in-process mock transport, 10-message history + 2 tools, content capture on) in a fresh process; every timed batch of
50 calls ends when everything is flushed (spanfold: folded and written, and exported when OTLP is on; a peer: its
``BatchSpanProcessor`` force-flushed, every span accepted by the collector). The figure is the process CPU
(``process_time``: all threads) per call, minus the uninstrumented run's of the same round.

* peers as their users run them: ``BatchSpanProcessor`` + the standard ``OTLPSpanExporter`` (HTTP, protobuf) sending
  to a collector on loopback in another process (a minimal OTLP/HTTP sink that answers 200: its CPU is not counted);
* ``spanfold``: ``spanfold.init()``, folding in the process and writing its JSONL files;
* ``spanfold+otlp``: the same, with the raw spans exported over OTLP to the same sink too;
* ``spanfold-serve``: the out-of-process fold: spanfold's instrumentation in the app, its spans exported over OTLP to
  a ``spanfold serve`` process that folds and writes them (that process's CPU per call is printed beside, not
  counted: it is the Collector's place).

Rounds interleave the configurations in a shuffled order (a fresh process each); medians over rounds.

    python bench/process_cpu.py [--rounds 3] [--workloads sync,stream,async] [--calls 300]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEERS = ["otel-v2+otlp", "openllmetry+otlp", "openinference+otlp"]
OURS = ["spanfold", "spanfold+otlp", "spanfold-serve"]

SINK = r"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def cpu_seconds(pid: int) -> float:
    """A process's CPU (user + system) so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_sink() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-c", SINK], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}/v1/traces"


def start_serve(out: str) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "spanfold", "serve", "--port", "0", "-o", out, "--wait", "0.5"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stderr is not None
    line = proc.stderr.readline()
    port = int(line.split("127.0.0.1:")[1].split("/")[0])
    return proc, f"http://127.0.0.1:{port}/v1/traces"


def measure(config: str, workload: str, calls: int, endpoint: str) -> dict[str, float]:
    cmd = [sys.executable, str(HERE / "workload.py"), "--config", config, "--workload", workload]
    cmd += ["--calls", str(calls), "--batch", "50", "--warmup", "100", "--inside"]
    env = {**os.environ, "BENCH_OTLP_ENDPOINT": endpoint}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def own_cost(
    workload: str,
    configs: list[str],
    inside: dict[tuple[str, str], list[float]],
    others: dict[tuple[str, str], list[float]],
    lines: list[str],
) -> None:
    """The same cost measured inside the process, no baseline subtracted (``workload.py --inside``): the calling
    thread's CPU outside the SDK's own work plus every other thread's (spanfold's worker, the batch exporters with
    their protobuf encoding and HTTP) plus what the end-of-batch flush spent on the calling thread (the SDK's
    ``force_flush`` exports there). OpenInference wraps inside the SDK's ``create``: n/a."""
    shim = statistics.median(inside[(workload, "baseline")])
    total: dict[str, float] = {}
    print(
        f"\nThe same measured inside the process ({workload}; no subtraction): calling thread outside the SDK's own "
        "work + the process's other threads (folding worker, batch exporter: protobuf encoding and HTTP)\n"
    )
    print("| configuration | calling thread µs | other threads + flush µs | total µs | / best peer with OTLP |")
    print("|---|---|---|---|---|")
    for c in configs[1:]:
        if c.startswith("openinference"):
            continue
        calling = statistics.median(inside[(workload, c)]) - shim
        other = statistics.median(others[(workload, c)])
        total[c] = calling + other
    peers = [c for c in PEERS if c in total]
    best = min(peers, key=lambda c: total[c])
    for c, value in total.items():
        calling = statistics.median(inside[(workload, c)]) - shim
        print(f"| {c} | {calling:,.0f} | {value - calling:,.0f} | {value:,.0f} | {value / total[best]:.2f}x |")
    ratio = total["spanfold"] / total[best]
    lines.append(
        f"TARGET | whole-process CPU per call (inside view) <= 0.5x the best peer's with OTLP export, {workload} | "
        f"{total['spanfold']:,.0f} µs vs {best} {total[best]:,.0f} µs: {ratio:.2f}x | "
        f"{'met' if ratio <= 0.5 else 'NOT met'}"
    )
    lines.append(
        f"TARGET | whole-process CPU per call (inside view) never above 1.0x the best peer's, {workload} | "
        f"{ratio:.2f}x | {'met' if ratio <= 1.0 else 'NOT met'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--workloads", default="sync")
    args = parser.parse_args()
    load = "load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min)".format(*os.getloadavg())
    print(f"machine at start: {load}, {os.cpu_count()} cores", flush=True)
    configs = ["baseline", *PEERS, *OURS]
    cpu: dict[tuple[str, str], list[float]] = {}
    serve_cpu: dict[str, list[float]] = {}
    inside: dict[tuple[str, str], list[float]] = {}
    others: dict[tuple[str, str], list[float]] = {}
    sink, sink_url = start_sink()
    try:
        for r in range(args.rounds):
            for workload in args.workloads.split(","):
                order = configs[:]
                random.shuffle(order)
                for config in order:
                    if config == "spanfold-serve":
                        with tempfile.TemporaryDirectory() as out:
                            serve, url = start_serve(out)
                            before = cpu_seconds(serve.pid)
                            result = measure(config, workload, args.calls, url)
                            time.sleep(1.5)  # serve folds after --wait: let it finish before reading its CPU
                            used = cpu_seconds(serve.pid) - before
                            serve.terminate()
                            serve.wait(60)
                        serve_cpu.setdefault(workload, []).append(used / (args.calls + 100) * 1e6)
                    else:
                        result = measure(config, workload, args.calls, sink_url)
                    cpu.setdefault((workload, config), []).append(result["cpu_us_per_call"])
                    inside.setdefault((workload, config), []).append(result["inside_us_per_call"])
                    others.setdefault((workload, config), []).append(
                        result["other_threads_cpu_us_per_call"] + result["drain_cpu_us_per_call"]
                    )
            print(f"round {r + 1}/{args.rounds} done; load average {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        sink.terminate()
    print(f"\nProcess CPU per call (every thread, until flushed), medians of {args.rounds} interleaved rounds")
    lines: list[str] = []
    for workload in args.workloads.split(","):
        base = statistics.median(cpu[(workload, "baseline")])
        over = {c: statistics.median(cpu[(workload, c)]) - base for c in configs if c != "baseline"}
        best = min(PEERS, key=lambda c: over[c])
        print(f"\n### {workload} (uninstrumented: {base:,.0f} µs CPU per call)\n")
        print("| configuration | CPU µs per call | added over uninstrumented | / best peer with OTLP | target |")
        print("|---|---|---|---|---|")
        for c in configs[1:]:
            ratio = over[c] / over[best] if over[best] > 0 else float("nan")
            target = ""
            if c == "spanfold":
                target = "<= 0.5x: " + ("met" if ratio <= 0.5 else "NOT met") + "; never > 1.0x: "
                target += "met" if ratio <= 1.0 else "NOT met"
            elif c in OURS:
                target = "shown"
            median = statistics.median(cpu[(workload, c)])
            print(f"| {c} | {median:,.0f} | {over[c]:+,.0f} | {ratio:.2f}x | {target} |")
            if c == "spanfold":
                lines.append(
                    f"TARGET | process CPU per call <= 0.5x the best peer's with OTLP export, {workload} | "
                    f"+{over[c]:,.0f} µs vs {best} +{over[best]:,.0f} µs: {ratio:.2f}x | "
                    f"{'met' if ratio <= 0.5 else 'NOT met'}"
                )
                lines.append(
                    f"TARGET | process CPU per call never above 1.0x the best peer's, {workload} | {ratio:.2f}x | "
                    f"{'met' if ratio <= 1.0 else 'NOT met'}"
                )
        own_cost(workload, configs, inside, others, lines)
        if workload in serve_cpu:
            print(
                f"\n`spanfold serve`'s own CPU (another process, the collector's place): "
                f"{statistics.median(serve_cpu[workload]):,.0f} µs per call"
            )
    print()
    for line in lines:
        print(line)
    print("\nmachine at end: load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min)".format(*os.getloadavg()))


if __name__ == "__main__":
    main()

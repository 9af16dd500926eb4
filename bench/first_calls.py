"""What the first calls after ``spanfold.init()`` pay, against the steady state (issue 53, item 4).

The folding worker does one-time work on its first folds (imports: the prices table's pydantic and genai-prices, the
JSON encoder's, ...). A thread that imports holds the GIL the application's calls need, so the application's first
calls can be slower than later ones although none of that work is theirs. Measured as an application meets it: a
fresh process imports openai, (maybe) calls ``spanfold.init()``, and makes ``--first`` calls one after another, then
``--steady`` more, each over real HTTP to a server in another process (so a call lets go of the GIL while it waits,
as it does against a real provider). Per call the wall time.

    python bench/first_calls.py                       # 7 rounds, baseline and spanfold interleaved, sync
    python bench/first_calls.py --workload stream
    python bench/first_calls.py --delay-ms 200         # a provider that takes 200 ms to answer
    python bench/first_calls.py --price-memo cold      # each process the first on its machine: no price memo

With ``--price-memo warm`` (the default: what every process after a machine's first one meets) the spanfold processes
share a price memo (spanfold.pricing.memo) that a process run before the rounds filled; ``cold`` gives each an empty
one, so its worker imports genai-prices.

Prints, per configuration, the median over rounds of: the first calls' mean latency and the steady calls' median,
and each process's full collections (CPython's generation 2, whichever thread ran them) during its first calls: how
many, and their milliseconds; then spanfold's added latency in each phase (against the baseline's same phase) and
their ratio; the target is a warm-up under 2x the steady state's added latency.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def serve(delay_ms: float) -> None:
    """The provider: workload.py's canned completion and 53-chunk stream, over loopback HTTP, each answered after
    ``delay_ms`` (a provider's time to answer), until killed."""
    import workload

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # headers, then body: no 40 ms wait

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            time.sleep(delay_ms / 1000)
            stream = b'"stream":true' in body or b'"stream": true' in body
            out = workload.STREAM_BODY if stream else workload.COMPLETION_BODY
            self.send_response(200)
            self.send_header("content-type", "text/event-stream" if stream else "application/json")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


def one(config: str, workload_name: str, port: int, first: int, steady: int, prime: bool = False) -> None:
    """One measured process: print ``{"first": [...], "steady": [...]}`` (µs per call)."""
    import openai
    import workload

    client = openai.OpenAI(api_key="sk-bench", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    if config == "spanfold":
        import spanfold

        spanfold.init(output=tempfile.mkdtemp(prefix="spanfold-first-"), capture_content=True)
    messages = workload.history(10)
    stream = workload_name == "stream"

    def call() -> float:
        start = time.perf_counter_ns()
        if stream:
            for _ in client.chat.completions.create(
                model=workload.MODEL, messages=messages, tools=workload.TOOLS, stream=True
            ):
                pass
        else:
            client.chat.completions.create(model=workload.MODEL, messages=messages, tools=workload.TOOLS)
        return (time.perf_counter_ns() - start) / 1000

    full: list[float] = []  # the full collections (generation 2) during the first calls, ms each

    def collected(phase: str, info: dict[str, Any]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                full.append(-time.perf_counter())
            elif full:
                full[-1] = (full[-1] + time.perf_counter()) * 1000

    gc.callbacks.append(collected)
    times = [call() for _ in range(first)]
    gc.callbacks.remove(collected)
    times += [call() for _ in range(steady)]
    if prime:
        spanfold.flush()  # the calls priced and the memo written
    print(json.dumps({"first": times[:first], "steady": times[first:], "full_collections_ms": full}))
    os._exit(0)  # the measured phase is over: no shutdown work in anyone's figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=("sync", "stream"), default="sync")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--first", type=int, default=20)
    parser.add_argument("--steady", type=int, default=200)
    parser.add_argument("--delay-ms", type=float, default=0.0, help="the provider's time to answer each call")
    parser.add_argument("--price-memo", choices=("warm", "cold"), default="warm")
    parser.add_argument("--prime", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.delay_ms)
        return
    if args.one:
        one(args.one, args.workload, args.port, args.first, args.steady, args.prime)
        return
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--delay-ms", str(args.delay_ms)], stdout=subprocess.PIPE, text=True
    )
    memos = tempfile.TemporaryDirectory(prefix="spanfold-first-memo-")
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        results: dict[str, list[dict[str, float]]] = {"baseline": [], "spanfold": []}
        for n in range(-1 if args.price_memo == "warm" else 0, args.rounds):  # -1: the process that fills the memo
            order = list(results) if n >= 0 else ["spanfold"]
            random.shuffle(order)
            for config in order:
                memo = Path(memos.name) / ("shared" if args.price_memo == "warm" else f"{n}")
                out = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--one",
                        config,
                        "--workload",
                        args.workload,
                        "--port",
                        str(port),
                        "--first",
                        str(args.first),
                        "--steady",
                        str(args.steady),
                        *(["--prime"] if n < 0 else []),
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                    env={**os.environ, "SPANFOLD_PRICE_CACHE": str(memo)},
                )
                if n < 0:
                    continue
                got = json.loads(out.stdout.strip().splitlines()[-1])
                results[config].append(
                    {
                        "first": statistics.fmean(got["first"]),
                        "steady": statistics.median(got["steady"]),
                        "full": sum(got["full_collections_ms"]),
                        "fulls": len(got["full_collections_ms"]),
                    }
                )
    finally:
        server.kill()
        memos.cleanup()
    med = {c: {k: statistics.median(r[k] for r in rs) for k in ("first", "steady")} for c, rs in results.items()}
    for config, figures in med.items():
        fulls = [f"{r['fulls']}: {r['full']:.0f} ms" for r in results[config]]
        print(
            f"{config:9} first {args.first} calls' mean {figures['first']:8.0f} us   steady median "
            f"{figures['steady']:8.0f} us   full collections in the first calls, per process: {', '.join(fulls)}"
        )
    added_first = med["spanfold"]["first"] - med["baseline"]["first"]
    added_steady = med["spanfold"]["steady"] - med["baseline"]["steady"]
    ratio = added_first / added_steady if added_steady > 0 else float("inf")
    print(
        f"added: first calls {added_first:+.0f} us, steady {added_steady:+.0f} us: warm-up {ratio:.2f}x the "
        f"steady state's added latency ({args.workload}, provider {args.delay_ms:g} ms, price memo "
        f"{args.price_memo}, {args.rounds} rounds, medians; target < 2x)"
    )


if __name__ == "__main__":
    main()

"""Instructions per operation (valgrind callgrind), for the pieces whose CPU time this shared VM cannot resolve.

``call_sync`` / ``call_stream``: a whole openai call with ``spanfold.init()`` (the process's instructions: the
calling thread's and the folding worker's, flushed after each call), against ``bare_sync`` / ``bare_stream``
without spanfold.

Each piece runs N and 3N times in fresh processes under ``valgrind --tool=callgrind``; the difference of the two
totals over 2N is the instructions of one operation (start-up, imports and warm-up cancel out). Instruction counts
do not depend on the machine's load. ``--src`` measures another checkout's ``src`` (before / after a change).

    python bench/instructions.py [--src DIR] [--pieces stream,fold_short,encode_line,worker_call]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent

CHILD = r"""
import sys, json
sys.path.insert(0, BENCH)
piece, n = sys.argv[1], int(sys.argv[2])
if piece in ("stream", "stream_proxy"):  # the 53 chunks of the workload's stream, through the proxy
    import workload
    from openai.types.chat import ChatCompletionChunk
    from spanfold.instrumentation.toolkit.streams import SyncStreamProxy, StreamState
    from spanfold.instrumentation.providers.openai.chat import ChatStreamAccumulator
    from spanfold.content.runtime import Runtime
    body = workload.stream_body().decode()
    events = [e for e in body.split("\n\n") if e.startswith("data: {")]
    chunks = [ChatCompletionChunk.model_validate(json.loads(e[6:])) for e in events]
    class Span:  # what StreamState reads of a ModelSpan
        ended = False
        turn = None
        def finish(self, attrs=None): self.ended = True
        def fail(self, exc, attrs=None): self.ended = True
        def result(self, response, provider): return attributes.response(response, provider, rt)
    class Nothing:  # stream_proxy: the proxy's own cost, an accumulator that does nothing
        def add(self, chunk): pass
        def attributes(self): return {}
    from spanfold.instrumentation.toolkit import attributes
    rt = Runtime(capture_content=True)
    accumulator, provider = (ChatStreamAccumulator, "openai") if piece == "stream" else (Nothing, None)
    def op():
        for _ in SyncStreamProxy(iter(chunks), StreamState(Span(), accumulator(), "k", provider)):
            pass
    items = None
elif piece in ("call_sync", "call_stream", "bare_sync", "bare_stream"):  # a whole call: SDK + spanfold + fold
    import tempfile
    import httpx2, openai, workload
    if piece.startswith("call"):
        import spanfold
        spanfold.init(output=tempfile.mkdtemp(prefix="spanfold-instr-"), capture_content=True)
        drain = spanfold.flush
    else:
        drain = lambda: None
    client = openai.OpenAI(api_key="sk-bench", base_url="http://bench.test/v1", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(workload.handler)))
    msgs, stream = workload.history(10), piece.endswith("stream")
    def op():
        if stream:
            for _ in client.chat.completions.create(model=workload.MODEL, messages=msgs, tools=workload.TOOLS,
                                                    stream=True):
                pass
        else:
            client.chat.completions.create(model=workload.MODEL, messages=msgs, tools=workload.TOOLS)
        drain()
else:
    import spans
    from spanfold.exporter.fold.folding import fold
    from spanfold.trace import formats
    run = spans.record_agent_run(3 if piece != "fold_call" else 1)
    traces = iter(list(spans.replicate(run, 3 * n + 50)))
    if piece in ("fold_short", "fold_call"):
        def op():
            fold(next(traces), trace_id="t")
    elif piece == "encode_line":
        trace = fold(run, trace_id="t")
        def op():
            formats.encode_line(trace, "invariant")
            formats.meta_line(trace)
for _ in range(20):
    op()
for _ in range(n):
    op()
"""


def instructions(src: str, piece: str, n: int) -> int:
    env = dict(os.environ, PYTHONPATH=src)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c",
             CHILD.replace("BENCH", repr(str(BENCH))), piece, str(n)],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        match = re.search(r"Collected : (\d+)", done.stderr)
        assert match, done.stderr[-2000:]
        return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default=str(BENCH.parent / "src"))
    parser.add_argument("--pieces", default="stream,stream_proxy,fold_short,fold_call,encode_line")
    parser.add_argument("-n", type=int, default=50)
    args = parser.parse_args()
    print(f"src: {args.src}")
    print("| piece | instructions per operation |")
    print("|---|---|")
    for piece in args.pieces.split(","):
        low, high = instructions(args.src, piece, args.n), instructions(args.src, piece, 3 * args.n)
        print(f"| {piece} | {(high - low) / (2 * args.n):,.0f} |", flush=True)


if __name__ == "__main__":
    main()

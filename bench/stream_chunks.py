"""Per-chunk cost of the stream proxy against the bare loop over the same 53 ChatCompletionChunk objects."""
import sys, time, statistics
sys.path.insert(0, "bench")
import json
import workload
from openai.types.chat import ChatCompletionChunk
from spanfold.instrumentation.streams import SyncStreamProxy, StreamState
from spanfold.instrumentation.openai_chat import ChatStreamAccumulator
from spanfold.runtime import Runtime
body = workload.stream_body().decode()
chunks = [ChatCompletionChunk.model_validate(json.loads(line[6:])) for line in body.split("\n\n") if line.startswith("data: {")]
print(len(chunks))
class FakeSpan:
    ended = False
    def finish(self, attrs=None): self.ended = True
    def fail(self, e, attrs=None): self.ended = True
class Noop:
    def add(self, c): pass
    def attributes(self): return {}
rt = Runtime(capture_content=True)
def bare():
    for c in iter(chunks): pass
def proxy_noop():
    for c in SyncStreamProxy(iter(chunks), StreamState(FakeSpan(), Noop(), "k")): pass
def proxy_real():
    for c in SyncStreamProxy(iter(chunks), StreamState(FakeSpan(), ChatStreamAccumulator(rt), "k")): pass
def acc_only():
    a = ChatStreamAccumulator(rt)
    for c in chunks: a.add(c)
def acc_attrs():
    a = ChatStreamAccumulator(rt)
    for c in chunks: a.add(c)
    a.attributes()
res = {}
for r in range(7):
    for name, fn in [("bare", bare), ("proxy_noop", proxy_noop), ("proxy_real", proxy_real), ("acc_only", acc_only), ("acc+attrs", acc_attrs)]:
        t = time.thread_time()
        for _ in range(300): fn()
        res.setdefault(name, []).append((time.thread_time() - t) / 300 * 1e6)
for k, v in res.items(): print(f"{k:12} best {min(v):7.1f} us  median {statistics.median(v):7.1f} us per 53-chunk stream")

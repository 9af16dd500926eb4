"""What the RAG steps add to the calling thread (issue 54): the CPU the application's thread spends per operation with
``spanfold.init()`` against without, for an embeddings call (openai, 3 texts, over real HTTP to the mock server in the
same process: its threads are not the caller's), a LangChain ``InMemoryVectorStore`` search (the query embedded over
HTTP, k=2, scores), a Qdrant local-mode ``query_points`` (a vector, limit 2) and a LanceDB vector search (``to_list``),
each a step of a run (inside ``spanfold.agent``), content capture on (the query and the documents' text recorded).

Fresh processes, spanfold off and on interleaved, ``--rounds`` of each; a process warms each operation up (imports,
the first fold), then times ``--calls`` calls with ``time.thread_time_ns`` (the calling thread only: the folding
worker's CPU is measured by the outside view, bench/thread_cpu.py). Prints per operation the median over rounds of
the µs per call off and on, and what spanfold adds.

    python bench/rag_steps.py [--rounds 5] [--calls 300]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

OPERATIONS = ("embeddings", "langchain_store", "qdrant", "lancedb")

CHILD = r"""
import json, sys, tempfile, time
mode, calls = sys.argv[1], int(sys.argv[2])
import lancedb, openai
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_openai import OpenAIEmbeddings
from qdrant_client import QdrantClient, models
import spanfold
from spanfold.testing import MockLLMServer
from spanfold.testing.wire.embeddings import vector

if mode == "on":
    spanfold.init(output=tempfile.mkdtemp())
DOCS = {"paris": "Paris is the capital of France.", "bananas": "Bananas are a yellow fruit.",
        "tokyo": "Tokyo is the capital of Japan."}
QUESTION = "What is the capital of France?"
with MockLLMServer() as server:
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    texts = list(DOCS.values())
    emb = OpenAIEmbeddings(model="text-embedding-3-small", base_url=server.base_url, api_key="k",
                           check_embedding_ctx_length=False, max_retries=0)
    store = InMemoryVectorStore(emb)
    store.add_documents([Document(t, id=i) for i, t in DOCS.items()])
    qdrant = QdrantClient(":memory:")
    qdrant.create_collection("facts", vectors_config=models.VectorParams(size=16, distance=models.Distance.COSINE))
    qdrant.upsert("facts", points=[models.PointStruct(id=n, vector=vector(t), payload={"text": t})
                                   for n, t in enumerate(texts)])
    table = lancedb.connect(tempfile.mkdtemp()).create_table(
        "facts", [{"id": i, "text": t, "vector": vector(t)} for i, t in DOCS.items()])
    query = vector(QUESTION)
    ops = {
        "embeddings": lambda: client.embeddings.create(model="text-embedding-3-small", input=texts),
        "langchain_store": lambda: store.similarity_search_with_score(QUESTION, k=2),
        "qdrant": lambda: qdrant.query_points("facts", query=query, limit=2, with_payload=True),
        "lancedb": lambda: table.search(query).limit(2).to_list(),
    }
    out = {}
    for name, op in ops.items():
        with spanfold.agent("warm-up"):
            for _ in range(20):
                op()
        spanfold.flush(timeout=30) if mode == "on" else None
        with spanfold.agent("rag"):
            start = time.thread_time_ns()
            for _ in range(calls):
                op()
            out[name] = (time.thread_time_ns() - start) / calls / 1000
        spanfold.flush(timeout=60) if mode == "on" else None
print(json.dumps(out))
"""


def run(mode: str, calls: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(calls)], capture_output=True, text=True, check=True, timeout=600
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    rounds: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    started = time.monotonic()
    for n in range(args.rounds):
        for mode in ("off", "on") if n % 2 == 0 else ("on", "off"):
            rounds[mode].append(run(mode, args.calls))
    took = time.monotonic() - started
    print(f"{args.rounds} rounds x {args.calls} calls, fresh processes interleaved ({took:.0f} s)")
    print(f"{'operation':<18}{'off us':>10}{'on us':>10}{'added us':>10}{'ratio':>8}")
    for op in OPERATIONS:
        off = statistics.median(r[op] for r in rounds["off"])
        on = statistics.median(r[op] for r in rounds["on"])
        print(f"{op:<18}{off:>10.0f}{on:>10.0f}{on - off:>10.0f}{on / off:>8.2f}")


if __name__ == "__main__":
    main()

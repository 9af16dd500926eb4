"""What ``spanfold.init()`` costs an AWS call that is not a Bedrock model call: an S3 ``ListBuckets`` through boto3.

spanfold wraps ``_make_api_call`` only on the classes of ``bedrock-runtime`` clients, so an S3 client should run
botocore's own code: no wrapper, no span, no measurable overhead. Two cases, each in a fresh interpreter:

* ``plain``: ``import boto3``, an S3 client, calls;
* ``init``: ``spanfold.init()`` first (botocore is patched as it is imported), then the same.

The call runs botocore's whole pipeline (parameter validation, serialisation, SigV4 signing, parsing) with the HTTP
send answered in-process by a ``before-send`` handler (no network). Each process times batches of calls after a
warm-up and reports its median µs per call; rounds interleave the cases in a shuffled order; the table quotes the
medians over rounds and the ratio ``init / plain`` (and the ratio of the best rounds: steadier on a busy machine).

    python bench/bedrock_passthrough.py [--rounds 7] [--calls 2000]
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

CHILD = r"""
import json, statistics, sys, time
calls, init = int(sys.argv[1]), sys.argv[2] == "init"
if init:
    import spanfold
    spanfold.init(output=sys.argv[3])
import boto3
from botocore.awsrequest import AWSResponse

BODY = b"<ListAllMyBucketsResult><Buckets></Buckets><Owner><ID>o</ID></Owner></ListAllMyBucketsResult>"

class Raw:
    def stream(self, *args, **kwargs):
        yield BODY

def answer(request, **kwargs):
    return AWSResponse(request.url, 200, {"content-type": "application/xml"}, Raw())

s3 = boto3.client("s3", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b")
s3.meta.events.register("before-send.s3.ListBuckets", answer)
for _ in range(200):
    s3.list_buckets()
batches = []
for _ in range(max(1, calls // 100)):
    t0 = time.perf_counter()
    for _ in range(100):
        s3.list_buckets()
    batches.append((time.perf_counter() - t0) / 100 * 1e6)
wrapped = "_make_api_call" in vars(type(s3))
spans = 0
if init:
    spanfold.flush()
    spans = spanfold.stats().get("spans_received", 0)
print(json.dumps({"us": statistics.median(batches), "wrapped": wrapped, "spans": spans}))
"""


def run(case: str, calls: int, out: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(calls), case, out], capture_output=True, text=True, env=dict(os.environ)
    )
    if done.returncode != 0:
        raise SystemExit(f"{case}: the child failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"plain": [], "init": []}
    checks: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as out:
        for _ in range(args.rounds):
            cases = list(times)
            random.shuffle(cases)
            for case in cases:
                result = run(case, args.calls, out)
                times[case].append(result["us"])
                if case == "init":
                    checks.append(result)
    plain, init = statistics.median(times["plain"]), statistics.median(times["init"])
    print(f"S3 ListBuckets through boto3, {args.rounds} interleaved rounds of {args.calls} calls (fresh processes)")
    print(f"{'case':<8} {'median µs/call':>15} {'min':>8} {'max':>8}")
    for case, values in times.items():
        print(f"{case:<8} {statistics.median(values):>15.1f} {min(values):>8.1f} {max(values):>8.1f}")
    print(f"ratio init / plain: {init / plain:.3f} (medians), {min(times['init']) / min(times['plain']):.3f} (best)")
    wrapped = any(c["wrapped"] for c in checks)
    print(f"S3 client class wrapped under init(): {wrapped}; spans recorded: {sum(c['spans'] for c in checks)}")


if __name__ == "__main__":
    main()

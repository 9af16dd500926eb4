"""A shard: 200 runs, each under a caller's trace id (a TRACEPARENT, as two services handling one request share), with
``SPANFOLD_SAMPLE`` from the parent test; the runs it keeps go to the directory given. Run twice, by two processes."""

from __future__ import annotations

import random
import sys

#: The callers' trace ids and each run's kind (every fourth a failure), the same in every process.
TRACE_IDS = [random.Random(2050 + i).getrandbits(128) | 1 for i in range(200)]
KINDS = ["fail" if i % 4 == 3 else "ok" for i in range(200)]


def main(output: str) -> None:
    import openai
    from opentelemetry import context, trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    import spanfold
    from spanfold.testing import MockLLMServer

    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from runs import MODEL, responder

    spanfold.init(output=output)
    with MockLLMServer(responder) as server:
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        for i, (trace_id, kind) in enumerate(zip(TRACE_IDS, KINDS, strict=True)):
            caller = SpanContext(trace_id, 0x1000 + i, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
            token = context.attach(trace.set_span_in_context(NonRecordingSpan(caller)))
            try:
                with spanfold.agent("shard-bot"):
                    client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": f"{kind} {i}"}])
            except openai.InternalServerError:
                pass
            finally:
                context.detach(token)
    assert spanfold.flush(timeout=60)
    spanfold.shutdown()


if __name__ == "__main__":
    main(sys.argv[1])

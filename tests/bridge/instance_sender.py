"""A real sending process for ``tests/bridge/test_serve_senders.py``: zero-code calls (un-parented ``chat`` spans with
GenAI semconv attributes) exported by the SDK's own ``OTLPSpanExporter`` over OTLP/HTTP, one call per command line
read from stdin (``{"inputs": [...], "outputs": [...]}``; it prints ``sent`` once the call is exported), until
``exit``.

``python instance_sender.py ENDPOINT instance``: the resource ``Resource.create()`` makes, with a random
``service.instance.id`` (opentelemetry-sdk sets one itself from 1.43 on);
``python instance_sender.py ENDPOINT no-instance``: that resource without ``service.instance.id``, exactly what
opentelemetry-sdk 1.30 to 1.42 make by default (and many other SDKs: nothing tells two processes apart).
"""

from __future__ import annotations

import json
import sys
import uuid

from opentelemetry import context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind


def main(endpoint: str, mode: str) -> None:
    attributes = dict(Resource.create().attributes)
    if mode == "no-instance":
        attributes.pop("service.instance.id", None)
    else:
        attributes.setdefault("service.instance.id", str(uuid.uuid4()))
    provider = TracerProvider(resource=Resource(attributes))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    tracer = provider.get_tracer("instance-sender")
    for line in sys.stdin:
        if line.strip() == "exit":
            break
        call = json.loads(line)
        with tracer.start_as_current_span("chat gpt-4o-mini", context=context.Context(), kind=SpanKind.CLIENT) as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.provider.name", "openai")
            span.set_attribute("gen_ai.request.model", "gpt-4o-mini")
            span.set_attribute("gen_ai.input.messages", json.dumps(call["inputs"]))
            span.set_attribute("gen_ai.output.messages", json.dumps(call["outputs"]))
        print("sent", flush=True)
    provider.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

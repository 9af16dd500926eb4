"""A real sending process for ``spanfold serve``'s early-write tests: a zero-code run (un-parented ``chat`` spans
with GenAI semconv attributes) exported by the SDK's own ``OTLPSpanExporter`` over OTLP/HTTP (one kept-alive
connection), then it waits for a line on stdin before it shuts down and exits.

``python early_sender.py ENDPOINT tool-call``: one call that asks for a tool (the run is not over);
``python early_sender.py ENDPOINT final``: that call, then one that answers without a tool call.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from opentelemetry import context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind

SYSTEM = [{"type": "text", "content": "You are a weather assistant."}]
USER = {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}
CALL = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
    "finish_reason": "tool_call",
}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "18°C, sunny"}]}
ANSWER = {"role": "assistant", "parts": [{"type": "text", "content": "Paris: 18°C, sunny."}], "finish_reason": "stop"}


def main(endpoint: str, mode: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "early-sender"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    tracer = provider.get_tracer("early-sender")

    def chat(inputs: list[Any], outputs: list[Any]) -> None:
        with tracer.start_as_current_span("chat gpt-4o-mini", context=context.Context(), kind=SpanKind.CLIENT) as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.provider.name", "openai")
            span.set_attribute("gen_ai.request.model", "gpt-4o-mini")
            span.set_attribute("gen_ai.system_instructions", json.dumps(SYSTEM))
            span.set_attribute("gen_ai.input.messages", json.dumps(inputs))
            span.set_attribute("gen_ai.output.messages", json.dumps(outputs))

    chat([USER], [CALL])
    if mode == "final":
        chat([USER, CALL, RESULT], [ANSWER])
    provider.force_flush()
    print("sent", flush=True)
    sys.stdin.readline()
    provider.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""Spans spanfold writes for real model calls, for tests that hand them to a consumer's own code (Arize Phoenix's
``gen_ai`` conversion, MLflow's OTel translation): the weather agent (two tool calls, a third, an answer) over real
HTTP to the embedded mock server, on each provider API installed here, plain and streamed; the model-call spans as
the OTel SDK exported them, and as OTLP protobuf (what a backend receives)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import spanfold
from spanfold.testing import WEATHER, MockLLMServer
from spanfold.testing.agents import PROVIDERS

#: (provider API, streamed): the calls each consumer test reads, where the provider's library is installed.
CALLS = (
    ("openai", False),
    ("openai", True),
    ("openai-responses", False),
    ("openai-responses", True),
    ("anthropic", False),
    ("anthropic", True),
    ("gemini", False),
)
#: The finish reasons a call may end with, as the conventions' output-message ``finish_reason`` names them.
FINISH_REASONS = ("stop", "length", "content_filter", "tool_call", "error")


def installed_calls() -> list[Any]:
    """:data:`CALLS` as pytest parameters, skipped where the provider's client library is not installed."""
    return [
        pytest.param(
            name,
            stream,
            id=f"{name}{'-stream' if stream else ''}",
            marks=() if PROVIDERS[name].installed() else pytest.mark.skip(f"{PROVIDERS[name].library} not installed"),
        )
        for name, stream in CALLS
    ]


def model_calls(global_spans: Any, provider: str, stream: bool) -> list[Any]:
    """The weather agent's model-call spans (three: two asking for tools, one answering), in the order they ended;
    run under ``spanfold.init()`` (the ``traced`` fixture) with the global exporter (``global_spans``) recording."""
    api = PROVIDERS[provider]
    global_spans.clear()
    with MockLLMServer(WEATHER.replies) as server, spanfold.agent("weather"):
        api.run(api.client(server), stream=stream)
    assert spanfold.flush(timeout=30)
    spans = [s for s in global_spans.get_finished_spans() if (s.attributes or {}).get("gen_ai.operation.name") in (
        "chat", "generate_content")]  # fmt: skip
    assert len(spans) == 3, [s.name for s in global_spans.get_finished_spans()]
    return spans


def outputs(span: Any) -> list[dict[str, Any]]:
    """The output messages spanfold wrote on a model-call span."""
    value = (span.attributes or {})["gen_ai.output.messages"]
    messages = json.loads(value)
    assert isinstance(messages, list) and messages
    return messages


def texts(message: dict[str, Any]) -> str:
    return "".join(p["content"] for p in message["parts"] if p.get("type") == "text")


def tool_calls(message: dict[str, Any]) -> list[tuple[Any, Any]]:
    """(id, name) of each tool call of an output message."""
    return [(p.get("id"), p.get("name")) for p in message["parts"] if p.get("type") == "tool_call"]


def otlp(spans: list[Any]) -> list[Any]:
    """``spans`` as OTLP protobuf spans, encoded by the OTel exporters' own encoder (what a backend receives)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    request = encode_spans(spans)
    return [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]

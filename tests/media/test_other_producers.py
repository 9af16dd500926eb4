"""Spans another instrumentation made carry base64 blobs too: with the ``media`` option the folding worker stores them
before they are folded, so the flat trace holds a uri. OpenInference's openai instrumentation (real, on the real SDK
against the mock server) with spanfold patching nothing (``instrument="none"``): its ``data:`` URLs, whole
(``message_content.image.image.url``) and inside its JSON (``input.value``), leave the trace files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest

from spanfold import counters
from spanfold.testing import MockLLMServer

from ..conftest import traced_into
from .conftest import BIG_PNG, b64, files, name_of

IMAGE = BIG_PNG[: 64 * 1024]
URL = f"data:image/png;base64,{b64(IMAGE)}"


def test_openinference_image_urls_are_stored_by_the_fold(tmp_path: Path, _global_provider: Any) -> None:
    from openinference.instrumentation import TraceConfig
    from openinference.instrumentation.openai import OpenAIInstrumentor

    traces_dir = tmp_path / "traces"
    instrumentor = OpenAIInstrumentor()
    # OpenInference replaces base64 images longer than 32,000 characters by default: let it record this one
    instrumentor.instrument(tracer_provider=_global_provider, config=TraceConfig(base64_image_max_length=10**7))
    try:
        with traced_into(traces_dir, instrument="none", media=True) as traced, MockLLMServer() as server:
            client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
            messages = [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "what?"}, {"type": "image_url", "image_url": {"url": URL}}],
                }
            ]
            client.chat.completions.create(model="gpt-4o", messages=messages)  # type: ignore[arg-type]
            assert server.last_request.body["messages"][0]["content"][1]["image_url"]["url"] == URL
            (trace,) = traced.traces()
    finally:
        instrumentor.uninstrument()
    image = traces_dir / "media" / name_of(IMAGE, "png")
    assert files(traces_dir / "media") == [image.name] and image.read_bytes() == IMAGE
    assert trace[0] == {
        "role": "user",
        "content": [{"type": "text", "text": "what?"}, {"type": "image", "image_url": image.as_uri()}],
    }
    assert b64(IMAGE)[:100] not in (traces_dir / "traces.jsonl").read_text()
    stats = counters.snapshot()
    assert stats.get("media.stored") == 1 and "faults" not in stats


@pytest.mark.parametrize("fmt", ["invariant", "otlp-json"])
def test_a_span_exporter_stores_the_blob_parts_it_folds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """``FoldingSpanExporter`` (zero-code, and what ``spanfold serve`` runs) with ``SPANFOLD_MEDIA=on``: a span whose
    messages carry a blob part, as the conventions write it, is written with a uri, in the flat trace and in the spans
    the ``otlp-json`` format writes."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from spanfold.exporter.pipeline.span_exporter import FoldingSpanExporter

    monkeypatch.setenv("SPANFOLD_MEDIA", "on")
    exporter = FoldingSpanExporter(output=str(tmp_path), format=fmt)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    blob = {"type": "blob", "modality": "image", "mime_type": "image/png", "content": b64(IMAGE)}
    messages = [{"role": "user", "parts": [{"type": "text", "content": "what?"}, blob]}]
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.input.messages": json.dumps(messages),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "a png"}]}]),
    }
    with provider.get_tracer("another.instrumentation").start_as_current_span("chat gpt-4o", attributes=attributes):
        pass
    assert exporter.force_flush()
    exporter.shutdown()
    image = tmp_path / "media" / name_of(IMAGE, "png")
    assert files(tmp_path / "media") == [image.name] and image.read_bytes() == IMAGE
    (written,) = [p for p in tmp_path.iterdir() if p.suffix == ".jsonl" and ".meta." not in p.name]
    text = written.read_text()
    assert b64(IMAGE)[:100] not in text
    if fmt == "invariant":
        assert json.loads(text)[0]["content"][1] == {"type": "image", "image_url": image.as_uri()}
    else:
        (span,) = json.loads(text)["resourceSpans"][0]["scopeSpans"][0]["spans"]
        (value,) = [a["value"]["stringValue"] for a in span["attributes"] if a["key"] == "gen_ai.input.messages"]
        assert json.loads(value)[0]["parts"][1] == {
            "type": "uri",
            "modality": "image",
            "mime_type": "image/png",
            "uri": image.as_uri(),
        }

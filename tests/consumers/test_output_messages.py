"""What spanfold writes on a model call's output messages, for the consumers that read them (issue 46, item 2):
every output message carries ``finish_reason`` (the conventions keep it as a deprecated, optional field; Arize
Phoenix 20.26 still requires it and drops the whole ``gen_ai.output.messages`` list of a message without it), the
conventions' value of the provider's reason. Real SDK calls over HTTP to the mock server; the consumers' own code
reads the same spans in ``tests/phoenix`` (Phoenix's ``gen_ai`` conversion) and ``tests/backend`` (MLflow's)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.consumers.model_calls import FINISH_REASONS, installed_calls, model_calls, outputs, tool_calls


@pytest.mark.parametrize(("provider", "stream"), installed_calls())
def test_every_output_message_says_why_the_model_stopped(
    traced: Any, global_spans: Any, provider: str, stream: bool
) -> None:
    spans = model_calls(global_spans, provider, stream)
    reasons = []
    for span in spans:
        for message in outputs(span):
            assert message.get("finish_reason") in FINISH_REASONS, message
            reasons.append(message["finish_reason"])
    # two calls ask for tools, the last answers
    assert reasons == ["tool_call", "tool_call", "stop"]
    assert all(tool_calls(outputs(span)[0]) for span in spans[:2])
    # the span's own reasons stay the provider's
    assert all(span.attributes.get("gen_ai.response.finish_reasons") for span in spans)


def test_capture_off_keeps_the_reason(traced_off: Any, global_spans: Any) -> None:
    spans = model_calls(global_spans, "openai", False)
    assert [m["finish_reason"] for span in spans for m in outputs(span)] == ["tool_call", "tool_call", "stop"]
    assert all("content" not in p for span in spans for m in outputs(span) for p in m["parts"])

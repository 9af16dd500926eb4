"""What MLflow makes of spanfold's model-call spans, by MLflow's own code (issue 46, item 2): each span as the OTel
SDK exports it, encoded to OTLP protobuf by the exporters' encoder, then read as MLflow's OTLP receiver reads it
(``Span.from_otel_proto``, ``strip_otlp_double_encoding``) and translated as it is stored
(``translate_span_when_storing``): its type (a chat model call), its inputs and outputs (the messages spanfold wrote,
each output message with its ``finish_reason``), its token usage. Real SDK calls (the weather agent) over HTTP to the
embedded mock server.

MLflow is installed only in the venv ``.ci/backend`` builds; this module is skipped elsewhere.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.consumers.model_calls import FINISH_REASONS, installed_calls, model_calls, otlp, outputs

translation = pytest.importorskip(
    "mlflow.tracing.otel.translation", reason="MLflow is tested by .ci/backend, in its own venv"
)
from mlflow.entities import Span  # noqa: E402


def _stored(span: Any) -> dict[str, Any]:
    """The span's attributes as MLflow stores them (each value JSON, decoded here)."""
    (proto,) = otlp([span])
    received = Span.from_otel_proto(proto)
    strip = getattr(translation, "strip_otlp_double_encoding", None)  # the receiver's step since MLflow 3.18
    if strip is not None:
        received._span._attributes = strip(received._span._attributes)
    attributes = translation.translate_span_when_storing(received)["attributes"]
    return {k: json.loads(v) if isinstance(v, str) else v for k, v in attributes.items()}


@pytest.mark.parametrize(("provider", "stream"), installed_calls())
def test_mlflow_stores_every_model_call_s_messages_and_usage(
    traced: Any, global_spans: Any, provider: str, stream: bool
) -> None:
    for span in model_calls(global_spans, provider, stream):
        stored = _stored(span)
        assert stored["mlflow.spanType"] == "CHAT_MODEL"
        shown = stored["mlflow.spanOutputs"]
        shown = json.loads(shown) if isinstance(shown, str) else shown
        assert shown == outputs(span)
        assert all(m["finish_reason"] in FINISH_REASONS for m in shown)
        inputs = stored["mlflow.spanInputs"]
        assert (json.loads(inputs) if isinstance(inputs, str) else inputs)[-1]["role"] in ("user", "tool")
        attrs = span.attributes
        if "gen_ai.usage.input_tokens" not in attrs:  # a stream sent without include_usage: no count, none made up
            assert "mlflow.chat.tokenUsage" not in stored
            continue
        usage = stored["mlflow.chat.tokenUsage"]
        assert usage["input_tokens"] == attrs["gen_ai.usage.input_tokens"]
        assert usage["output_tokens"] == attrs["gen_ai.usage.output_tokens"]

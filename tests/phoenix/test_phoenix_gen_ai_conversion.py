"""What Arize Phoenix makes of spanfold's model-call spans, by Phoenix's own code (issue 46, item 2): each span as the
OTel SDK exports it, encoded to OTLP protobuf by the exporters' encoder and decoded by ``phoenix.trace.otel``'s
``decode_otlp_span``, the function Phoenix's OTLP receiver runs (it converts the ``gen_ai.*`` attributes with
``phoenix.trace.gen_ai.conversion``). Phoenix 20.26 validates ``gen_ai.output.messages`` against its models, which
require each output message's ``finish_reason``: a message without one drops the whole list, and the LLM span shows
its inputs and no output. Real SDK calls (the weather agent) over HTTP to the embedded mock server.

Phoenix is installed only in the venv ``.ci/phoenix`` builds; this module is skipped elsewhere.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.consumers.model_calls import installed_calls, model_calls, otlp, outputs, texts, tool_calls

otel = pytest.importorskip("phoenix.trace.otel", reason="Arize Phoenix is tested by .ci/phoenix, in its own venv")


def _shown(span: Any) -> Any:
    """The span as Phoenix stores it (its nested OpenInference attributes)."""
    (proto,) = otlp([span])
    return otel.decode_otlp_span(proto)


@pytest.mark.parametrize(("provider", "stream"), installed_calls())
def test_phoenix_shows_every_model_call_s_output(traced: Any, global_spans: Any, provider: str, stream: bool) -> None:
    for span in model_calls(global_spans, provider, stream):
        stored = _shown(span)
        assert stored.span_kind.value == "LLM"
        llm = stored.attributes["llm"]
        assert "input_messages" in llm  # Phoenix read the inputs ...
        written = outputs(span)
        shown = [m["message"] for m in llm.get("output_messages", [])]
        assert len(shown) == len(written), f"Phoenix shows {len(shown)} of {len(written)} output messages"
        for ours, theirs in zip(written, shown, strict=True):
            assert theirs["role"] == ours["role"]
            assert theirs.get("content", "") == texts(ours)
            calls = [
                (c["tool_call"].get("id"), c["tool_call"]["function"]["name"]) for c in theirs.get("tool_calls", [])
            ]
            assert calls == tool_calls(ours)
            assert theirs.get("finish_reason") == ours["finish_reason"]


def test_phoenix_shows_the_answer_of_the_last_call(traced: Any, global_spans: Any) -> None:
    last = model_calls(global_spans, "openai", False)[-1]
    (message,) = _shown(last).attributes["llm"]["output_messages"]
    assert message["message"]["content"] == texts(outputs(last)[0]) and message["message"]["finish_reason"] == "stop"
    arguments = _shown(model_calls(global_spans, "openai", True)[0]).attributes["llm"]["output_messages"][0]
    assert [json.loads(c["tool_call"]["function"]["arguments"]) for c in arguments["message"]["tool_calls"]] == [
        {"city": "Paris"},
        {"city": "Tokyo"},
    ]

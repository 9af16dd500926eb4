"""Google ADK's ``LiteLlm`` model (``LiteLlm(model="openai/gpt-4o-mini", api_base=<mock>/v1)``), recorded in ADK's
own environment (tests/recordings/frameworks, README there): the same run folds to the same trace however it was
traced, ADK's own spans alone, or with spanfold's litellm patch beside them, with or without ADK's content capture.

ADK wraps a tool's plain return value as ``{"result": value}``. Its own spans carry that wrapper as a structure, which
its dialect unwraps (docs/frameworks.md); through LiteLLM, ADK sends the model the wrapper's JSON text as the tool
message, and the patch's spans record that text. Under an ADK span, that text is the same wrapper and is unwrapped
the same way; in a trace with no ADK span, a tool's output is what the model was sent, whatever it looks like."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest

from spanfold import counters
from spanfold.exporter.dialects.dispatch import steps_of
from spanfold.exporter.records import SpanRecord
from spanfold.exporter.steps import ModelStep
from spanfold.testing.agents import PROVIDERS, run_agent

from .frameworks import folded, invariant, patch_kwargs, recording
from .producers import Harness, instrumented
from .test_dialect_recorded_frameworks import ADK_SYSTEM
from .test_producers_equivalence import expected

ADK = "gcp.vertex.agent"
PATCH = "spanfold.instrumentation.litellm"
FRAMEWORK_ONLY = "adk_litellm.otlp.json"
WITH_PATCH = "adk_litellm_with_spanfold_litellm.otlp.json"
NO_CAPTURE_WITH_PATCH = "adk_litellm_no_capture_with_spanfold_litellm.otlp.json"
OUTPUTS = ["Paris: 18°C, sunny", "Tokyo: 24°C, cloudy", "18°C is 64.4°F"]
#: The mock model's answer quotes the tool messages it was sent: through LiteLLM, ADK sends the wrapper's JSON text.
SENT = [json.dumps({"result": out}, ensure_ascii=False) for out in OUTPUTS]
ANSWER = f"Here is the weather: {SENT[0]}; {SENT[1]}. In Fahrenheit: {SENT[2]}."
TOKENS = (73 + 184 + 251, 14 + 13 + 35)


def adk_litellm_expected(outputs: list[str]) -> list[dict[str, Any]]:
    """The weather agent's trace under ADK with ``LiteLlm`` (the mock's OpenAI ids), the tools' ``outputs`` in order."""
    events = [{"role": "system", "content": ADK_SYSTEM}, *expected("call_mock_")[1:]]
    tools = iter(outputs)
    for event in events:
        if event["role"] == "tool":
            event["content"] = next(tools)
    events[-1]["content"] = ANSWER
    return events


def sent_outputs(records: list[SpanRecord], span_id: int) -> list[Any]:
    """The tool outputs a model step's inputs send, as its dialect read them."""
    step = steps_of(records)[span_id]
    assert isinstance(step, ModelStep)
    return [p.get("response") for m in step.inputs for p in m["parts"] if p.get("type") == "tool_call_response"]


def test_adk_litellm_framework_only() -> None:
    """ADK's own spans (content on, no spanfold in ADK's process): the reference, the wrapper unwrapped."""
    records = recording(FRAMEWORK_ONLY)
    assert {r.scope_name for r in records} == {ADK}
    trace = folded(records)
    assert invariant(trace) == adk_litellm_expected(OUTPUTS)
    assert trace.meta.name == "weather_bot"
    assert (trace.meta.usage.input_tokens, trace.meta.usage.output_tokens) == TOKENS


@pytest.mark.parametrize("name", [WITH_PATCH, NO_CAPTURE_WITH_PATCH])
def test_adk_litellm_beside_spanfold_litellm_patch_is_the_same_trace(name: str) -> None:
    """spanfold's litellm patch on in ADK's process (``SPANFOLD_PATCH=1``), ADK's content capture on or off: the
    patch's span of each call sits under ADK's ``generate_content`` span and sends the tool outputs as the wrapper's
    JSON text; the trace is the framework-only one, event by event, its tokens counted once."""
    records = recording(name)
    patch = [r for r in records if r.scope_name == PATCH]
    adk = {r.span_id: r for r in records if r.scope_name == ADK}
    assert len(patch) == 3 and all(adk[r.parent_id].name.startswith("generate_content") for r in patch)
    sent = [
        part["response"]
        for r in patch
        for msg in json.loads(r.attributes["gen_ai.input.messages"])
        for part in msg["parts"]
        if msg["role"] == "tool"
    ]
    assert sent[-3:] == SENT  # what LiteLLM sent the model (the last call sends all three)
    reference = invariant(folded(recording(FRAMEWORK_ONLY)))
    counters.reset()
    trace = folded(records)
    assert counters.snapshot().get("fold.duplicate_model_steps") == 3
    events = invariant(trace)
    assert len(events) == len(reference)
    for n, (event, want) in enumerate(zip(events, reference, strict=True)):
        assert event == want, f"event {n}"
    assert (trace.meta.usage.input_tokens, trace.meta.usage.output_tokens) == TOKENS
    assert trace.meta.name == "weather_bot"
    kept = {e.metadata["span_id"] for e in trace.events if e.role == "assistant"}
    assert kept == {format(r.span_id, "016x") for r in patch}  # the provider's spans


def test_adk_spans_of_the_run_with_the_patch_are_the_framework_only_trace() -> None:
    """The ADK spans of the recording with the patch on, alone: the same trace as the run without spanfold."""
    records = [r for r in recording(WITH_PATCH) if r.scope_name == ADK]
    assert invariant(folded(records)) == invariant(folded(recording(FRAMEWORK_ONLY)))


def test_the_patch_spans_alone_carry_no_evidence_of_adk() -> None:
    """The patch's spans with ADK's left out (a filter by scope): nothing in the trace says ADK wrapped the outputs,
    so each is what the model was sent (ADK's own spans are on whenever they reach spanfold's provider:
    ``spanfold.init()`` uses the global ``TracerProvider`` ADK's tracer writes to)."""
    records = [r for r in recording(WITH_PATCH) if r.scope_name == PATCH]
    assert invariant(folded(records)) == adk_litellm_expected(SENT)


def test_only_a_call_under_an_adk_span_is_read_as_adk() -> None:
    """The evidence is ADK's span above the call, not ADK's spans somewhere in the trace: the same patch span moved
    out from under ADK's (a root of its own beside the ADK run) sends what it sent."""
    records = recording(WITH_PATCH)
    last = max((r for r in records if r.scope_name == PATCH), key=lambda r: r.start_ns)
    assert sent_outputs(records, last.span_id) == OUTPUTS
    moved = [dataclasses.replace(r, parent_id=None) if r is last else r for r in records]
    assert sent_outputs(moved, last.span_id) == SENT


# --- a tool that returns {"result": ...} itself, with no ADK in the trace ------------------------------------------


@pytest.fixture
def harness(_global_provider: Any, _global_exporter: Any) -> Iterator[Harness]:
    yield Harness(_global_provider, _global_exporter)


def test_a_plain_tool_returning_a_result_wrapper_is_kept_as_sent(harness: Harness) -> None:
    """A plain litellm agent (spanfold's litellm patch, no ADK) whose tools return ``{"result": ...}`` JSON text
    themselves: the trace shows each output as the tool returned it and the model was sent it."""
    pytest.importorskip("litellm")
    from spanfold.instrumentation.providers.litellm import LiteLLMInstrumentor

    outputs = dict(zip([("city", "Paris"), ("city", "Tokyo"), ("celsius", 18)], SENT, strict=True))

    def tool(key: str) -> Any:
        return lambda tool_call_id=None, **kw: outputs[(key, kw[key])]

    tools = {"get_weather": tool("city"), "convert_temperature": tool("celsius")}
    api = PROVIDERS["litellm"]
    with instrumented(LiteLLMInstrumentor(), **patch_kwargs(harness.provider)), harness.run() as run:
        run.answer = run_agent(api, api.client(run.server), tools=tools)
    assert run.answer == ANSWER
    assert not [s for s in run.spans if s.instrumentation_scope and s.instrumentation_scope.name == ADK]
    want = adk_litellm_expected(SENT)
    want[0] = expected("call_mock_")[0]  # the agent's own system prompt
    assert run.invariant() == want

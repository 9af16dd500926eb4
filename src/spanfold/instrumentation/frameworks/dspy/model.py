"""DSPy's ``LM`` calls as model steps, read from DSPy's own objects.

Every call of a DSPy language model (``lm(...)``, ``lm.acall(...)``, ``forward`` / ``aforward``, an adapter's call
inside a ``Predict``) goes through ``dspy.clients.execution.execute`` / ``aexecute``: the prepared call in (the
messages and parameters, or an explicit ``lm15.Request``), a ``CallResult`` out (each candidate's output, usage,
the lm15 ``Response`` or the LiteLLM response, the response model), whichever engine sent it (DSPy's own HTTP client,
LiteLLM, a custom engine), streamed (``dspy.streamify``: the call reads its stream itself) or answered from DSPy's
cache. Each is one ``chat {model}`` span, current while the call runs; the client calls inside it are that step
(:func:`~spanfold.instrumentation.toolkit.calls.claim`: the litellm and openai patches make none).

Inside a ReAct step, the step reads the input and output
(:mod:`~spanfold.instrumentation.frameworks.dspy.trajectory`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Final

from spanfold import semconv
from spanfold.instrumentation.frameworks.dspy import lm_messages, trajectory
from spanfold.instrumentation.invocations import model_steps
from spanfold.instrumentation.invocations.model_steps import ModelStep, StepSpan
from spanfold.instrumentation.toolkit.calls import server_of
from spanfold.instrumentation.toolkit.invocation import Cost, Param, Request, Response
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading.chat_messages import CHAT_PARAMS, input_message, usage
from spanfold.instrumentation.toolkit.reading.params import numbers
from spanfold.semconv.shapes import OPENAI_COMPATIBLE_FINISH_REASONS

#: The provider prefix of a DSPy model string (LiteLLM's names) -> ``gen_ai.provider.name``; others kept as they are.
PROVIDERS: Final = {
    "openai": semconv.PROVIDER_OPENAI,
    "azure": "azure.ai.openai",
    "anthropic": semconv.PROVIDER_ANTHROPIC,
    "gemini": semconv.PROVIDER_GCP_GEMINI,
    "vertex_ai": semconv.PROVIDER_GCP_VERTEX_AI,
    "bedrock": semconv.PROVIDER_AWS_BEDROCK,
    "groq": semconv.PROVIDER_GROQ,
    "mistral": semconv.PROVIDER_MISTRAL,
    "cohere": semconv.PROVIDER_COHERE,
    "ollama": semconv.PROVIDER_OLLAMA,
    "ollama_chat": semconv.PROVIDER_OLLAMA,
    "xai": "x_ai",
}

#: A call's parameter -> the typed request parameter (``n``: how many candidates the call asks for).
PARAMS: Final[dict[str, Param]] = {**CHAT_PARAMS, "n": "choice_count"}


def provider_and_model(model: Any) -> tuple[str, str | None]:
    """(``gen_ai.provider.name``, the model the provider is asked for) of a DSPy model string
    (``openai/gpt-4o-mini``; no prefix: OpenAI, as DSPy takes it)."""
    if not isinstance(model, str):
        return semconv.PROVIDER_OPENAI, None
    prefix, _, rest = model.partition("/")
    if not rest:
        return semconv.PROVIDER_OPENAI, model
    return PROVIDERS.get(prefix, prefix), rest


def _sent(call: Any) -> list[Any]:
    """The messages of a prepared call (an explicit ``Request``: DSPy's display snapshot of it)."""
    explicit = getattr(call, "request", None)
    if explicit is not None:
        return list(importlib.import_module("dspy.clients.lm15_boundary").history_messages(explicit))
    legacy = getattr(call, "legacy", None)
    return m.as_list(legacy.get("messages")) if isinstance(legacy, Mapping) else []


def step(lm: Any, call: Any) -> ModelStep:
    """The model step of ``execute(lm, call)``."""
    provider, model = provider_and_model(getattr(lm, "model", None))
    legacy = getattr(call, "legacy", None)
    options: Mapping[str, Any] = legacy if isinstance(legacy, Mapping) else {}
    stops = options.get("stop")
    sent = _sent(call)
    read = [input_message(msg) for msg in sent]
    step = trajectory.current_step()
    fmt = options.get("response_format")
    invocation = Request(
        model=model,
        params=numbers(options, PARAMS),
        stop_sequences=([stops] if isinstance(stops, str) else list(stops)) if stops else None,
        output_type="json" if fmt is not None and m.get(fmt, "type") != "text" else None,
        messages=step.inputs(sent, read) if step is not None else read,
        tools=m.as_list(options.get("tools")) or None,
        provider=provider,
        endpoint=server_of(options.get("api_base") or options.get("base_url")),
    )
    return ModelStep(invocation, provider)


def _reason(reason: Any) -> Any:
    return OPENAI_COMPATIBLE_FINISH_REASONS.get(reason, reason) if isinstance(reason, str) else None


def response(result: Any) -> Response:
    """The typed response of a ``CallResult``: its outputs, and the id and finish reasons of the lm15 responses or
    the LiteLLM response it holds; no usage or cost for an answer from DSPy's cache (nothing was spent)."""
    answers = list(getattr(result, "responses", ()) or ())
    raw = getattr(result, "raw", None)
    choices = m.as_list(m.get(raw, "choices")) if raw is not None and not answers else []
    cached = bool(getattr(result, "cache_hit", False))
    cost = getattr(result, "cost", None)
    reasons = [_reason(getattr(a, "finish_reason", None)) for a in answers]
    reasons += [_reason(m.get(choice, "finish_reason")) for choice in choices]
    return Response(
        id=getattr(answers[0], "id", None) if answers else m.get(raw, "id") if choices else None,
        model=getattr(result, "response_model", None),
        finish_reasons=[r for r in reasons if r is not None] or None,
        messages=[lm_messages.output_message(output) for output in m.as_list(getattr(result, "outputs", None))],
        usage=None if cached else usage(getattr(result, "usage", None)),
        cost=Cost(float(cost)) if isinstance(cost, (int, float)) and not (cached or isinstance(cost, bool)) else None,
    )


def _hold(span: StepSpan) -> bool:
    """A ReAct step holds its model step until it has parsed the answer."""
    react_step = trajectory.current_step()
    if react_step is not None:
        react_step.hold(span)
    return react_step is not None


def _step_of(instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> ModelStep:
    """``execute(lm, call)`` / ``aexecute(lm, call)``."""
    return step(args[0] if args else kwargs.get("lm"), args[1] if len(args) > 1 else kwargs.get("call"))


#: ``execute`` / ``aexecute``.
EXECUTE = model_steps.patch("dspy", _step_of, response, lambda: _hold)

"""smolagents' model calls as model steps, read from smolagents' own objects (its ``ChatMessage``s).

Every smolagents model class (``OpenAIModel``, ``LiteLLMModel``, ``InferenceClientModel``, ``TransformersModel``...)
answers ``generate`` with a ``ChatMessage`` and ``generate_stream`` with ``ChatMessageStreamDelta``s, whatever client
it uses underneath (a patched SDK or none). The step is recorded at that level, as ``chat {model_id}``, and the
client calls inside it are that step: their span is current while they run and the toolkit's model wrappers make no
span for them (:func:`~spanfold.instrumentation.toolkit.calls.claim`). Another instrumentation's model span made
inside it nests under it, and the fold keeps one step of the two (``fold.drop_nested_calls``).

Why smolagents' level and not the SDK's: smolagents re-sends earlier tool calls and outputs as text, which the
step's input messages turn back into tool calls and outputs
(:mod:`~spanfold.instrumentation.frameworks.smolagents.text_protocol`), so each call's history extends the flat trace
the earlier calls and tool runs made. A ``CodeAgent`` step's output holds the code action smolagents parsed from the
text as a ``python_interpreter`` tool call: its span ends when the action is parsed (the code step holds it until
then: :mod:`~spanfold.instrumentation.invocations.model_steps`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry.trace import Tracer

from spanfold import semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks.smolagents.text_protocol import Observations, input_messages
from spanfold.instrumentation.invocations import model_steps
from spanfold.instrumentation.invocations.model_steps import Hold, ModelStep
from spanfold.instrumentation.toolkit.calls import Wrapper, server_of
from spanfold.instrumentation.toolkit.invocation import Request, Response, Usage
from spanfold.instrumentation.toolkit.patching import WrapperFactory
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading.chat_messages import Choice, add_tool_calls, choice_of
from spanfold.semconv.shapes import OPENAI_COMPATIBLE_FINISH_REASONS

#: ``gen_ai.provider.name`` by smolagents model class (others: ``smolagents``).
PROVIDERS = {
    "OpenAIModel": semconv.PROVIDER_OPENAI,
    "AzureOpenAIModel": "azure.ai.openai",
    "LiteLLMModel": "litellm",
    "LiteLLMRouterModel": "litellm",
    "InferenceClientModel": "huggingface",
    "TransformersModel": "transformers",
    "VLLMModel": "vllm",
    "MLXModel": "mlx",
    "AmazonBedrockModel": semconv.PROVIDER_AWS_BEDROCK,
}


def _usage(usage: Any) -> Usage:
    counts = [
        value if isinstance(value := m.get(usage, key), int) else None for key in ("input_tokens", "output_tokens")
    ]
    return Usage(input_tokens=counts[0], output_tokens=counts[1])


def _response(choice: Choice, usage: Usage, raw: Any = None) -> Response:
    """The step's answer: the choice read from smolagents' message (or deltas), and the response id, model and
    finish reason of an OpenAI-shaped ``raw`` API response where smolagents keeps one."""
    choices = m.as_list(m.get(raw, "choices")) if raw is not None and not isinstance(raw, (str, bytes)) else []
    finish = m.get(choices[0], "finish_reason") if choices else None
    reason = OPENAI_COMPATIBLE_FINISH_REASONS.get(finish, finish) if isinstance(finish, str) else None
    return Response(
        id=m.get(raw, "id") if choices else None,
        model=m.get(raw, "model") if choices else None,
        finish_reasons=[reason or ("tool_call" if choice.tool_calls.ordered() else "stop")],
        messages=[choice.to_message()],
        usage=usage,
    )


def answer(message: Any) -> Response:
    """``generate``'s ``ChatMessage`` (OpenAI's message shape)."""
    return _response(choice_of(message, None), _usage(m.get(message, "token_usage")), m.get(message, "raw"))


class DeltaAccumulator:
    """``generate_stream``'s ``ChatMessageStreamDelta``s: text, tool calls by index, token usage."""

    __slots__ = ("choice", "usage")

    def __init__(self) -> None:
        self.choice = Choice()
        self.usage = Usage()

    def add(self, delta: Any) -> None:
        content = m.get(delta, "content")
        if isinstance(content, str) and content:
            self.choice.text.append(content)
        add_tool_calls(self.choice, m.as_list(m.get(delta, "tool_calls")))
        tokens = m.get(delta, "token_usage")
        if tokens is not None:
            usage, add = self.usage, _usage(tokens)
            if add.input_tokens is not None:
                usage.input_tokens = (usage.input_tokens or 0) + add.input_tokens
            if add.output_tokens is not None:
                usage.output_tokens = (usage.output_tokens or 0) + add.output_tokens

    def result(self) -> Response:
        return _response(self.choice, self.usage)


def _tool_definitions(tools: Any) -> list[Any] | None:
    """The tools a call offers, as smolagents declares them to an OpenAI-shaped API, in the conventions' shape."""
    if not tools:
        return None
    schema = importlib.import_module("smolagents.models").get_tool_json_schema
    definitions = []
    for tool in m.as_list(tools):
        function = m.get(schema(tool), "function")
        definitions.append(
            {
                "type": "function",
                "name": m.get(function, "name"),
                "description": m.get(function, "description"),
                "parameters": m.get(function, "parameters"),
            }
        )
    return definitions


def _argument(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    return args[index] if len(args) > index else kwargs.get(name)


def step(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], observations: Observations | None) -> ModelStep:
    """The model step of ``model.generate(messages, stop_sequences, response_format, tools_to_call_from)``."""
    model_id = getattr(model, "model_id", None)
    stops = _argument(args, kwargs, 1, "stop_sequences")
    client = getattr(model, "client_kwargs", None)
    request = Request(
        model=model_id if isinstance(model_id, str) else None,
        stop_sequences=list(stops) if stops else None,
        messages=input_messages(m.as_list(_argument(args, kwargs, 0, "messages")), observations),
        tools=_tool_definitions(_argument(args, kwargs, 3, "tools_to_call_from")),
        endpoint=server_of(client.get("base_url")) if isinstance(client, Mapping) else None,
    )
    return ModelStep(request, PROVIDERS.get(type(model).__name__, "smolagents"))


def wrappers(
    observations_of: Callable[[], Observations | None], hold_of: Callable[[], Hold | None]
) -> tuple[WrapperFactory, WrapperFactory]:
    """The factories of ``generate``'s and ``generate_stream``'s wrappers; ``observations_of()`` gives the
    :class:`Observations` of the agent running now, ``hold_of()`` what holds its model step open (None for none)."""

    def generate(tracer: Tracer, rt: Runtime) -> Wrapper:
        def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            read = lambda: step(instance, args, kwargs, observations_of())  # noqa: E731
            call = lambda: wrapped(*args, **kwargs)  # noqa: E731
            return model_steps.run(tracer, rt, "smolagents", read, call, answer, hold_of())

        return wrapper

    def generate_stream(tracer: Tracer, rt: Runtime) -> Wrapper:
        def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            read = lambda: step(instance, args, kwargs, observations_of())  # noqa: E731
            call = lambda: wrapped(*args, **kwargs)  # noqa: E731
            accumulate = lambda span: DeltaAccumulator()  # noqa: E731
            return model_steps.stream(tracer, rt, "smolagents", read, call, accumulate, hold_of())

        return wrapper

    return generate, generate_stream

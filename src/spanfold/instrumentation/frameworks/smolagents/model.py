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
from dataclasses import dataclass, field
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
from spanfold.instrumentation.toolkit.reading.blocks import IndexedBlocks
from spanfold.semconv import parts as p
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


@dataclass(slots=True)
class Output:
    """What a model call answered: its text, tool calls ``(id, name, arguments)``, finish reason, response id and
    model (from an OpenAI-shaped ``raw`` response), token usage."""

    text: str | None = None
    calls: list[tuple[Any, Any, Any]] = field(default_factory=list)
    finish: str | None = None
    response_id: str | None = None
    model: str | None = None
    usage: Usage = field(default_factory=Usage)

    def response(self) -> Response:
        parts: list[p.Part] = [p.text(self.text)] if self.text else []
        parts.extend(p.tool_call(call_id, name, arguments) for call_id, name, arguments in self.calls)
        reason = OPENAI_COMPATIBLE_FINISH_REASONS.get(self.finish, self.finish) if self.finish else None
        reason = reason or ("tool_call" if self.calls else "stop")
        return Response(
            id=self.response_id,
            model=self.model,
            finish_reasons=[reason],
            messages=[p.message("assistant", parts)],
            usage=self.usage,
        )


def _calls(calls: Any) -> list[tuple[Any, Any, Any]]:
    out = []
    for call in m.as_list(calls):
        function = m.get(call, "function")
        out.append((m.get(call, "id"), m.get(function, "name"), m.get(function, "arguments")))
    return out


def _count(usage: Any, key: str) -> int | None:
    value = m.get(usage, key)
    return value if isinstance(value, int) else None


def _usage(usage: Any) -> Usage:
    return Usage(input_tokens=_count(usage, "input_tokens"), output_tokens=_count(usage, "output_tokens"))


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def output_of(message: Any) -> Output:
    """A ``ChatMessage``'s output; the response id, model and finish reason from its ``raw`` API response where it
    keeps one (an OpenAI-shaped completion)."""
    raw = m.get(message, "raw")
    choices = m.as_list(m.get(raw, "choices")) if raw is not None and not isinstance(raw, (str, bytes)) else []
    return Output(
        text=_str(m.get(message, "content")),
        calls=_calls(m.get(message, "tool_calls")),
        finish=_str(m.get(choices[0], "finish_reason")) if choices else None,
        response_id=_str(m.get(raw, "id")) if choices else None,
        model=_str(m.get(raw, "model")) if choices else None,
        usage=_usage(m.get(message, "token_usage")),
    )


class DeltaAccumulator:
    """``generate_stream``'s ``ChatMessageStreamDelta``s: text, tool calls by index, token usage."""

    __slots__ = ("calls", "text", "usage")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls = IndexedBlocks()
        self.usage = Usage()

    def add(self, delta: Any) -> None:
        content = m.get(delta, "content")
        if isinstance(content, str) and content:
            self.text.append(content)
        for call in m.as_list(m.get(delta, "tool_calls")):
            index = m.get(call, "index")
            block = self.calls.open(index if isinstance(index, int) else 0)
            call_id = m.get(call, "id")
            if call_id:
                block.fields["id"] = call_id
            function = m.get(call, "function")
            name, arguments = m.get(function, "name"), m.get(function, "arguments")
            if name:
                block.fields["name"] = name
            if isinstance(arguments, str):
                block.fragments.append(arguments)
            elif arguments is not None:
                block.fields["arguments"] = arguments
        tokens = m.get(delta, "token_usage")
        if tokens is not None:
            usage, add = self.usage, _usage(tokens)
            if add.input_tokens is not None:
                usage.input_tokens = (usage.input_tokens or 0) + add.input_tokens
            if add.output_tokens is not None:
                usage.output_tokens = (usage.output_tokens or 0) + add.output_tokens

    def result(self) -> Response:
        calls = [
            (b.fields.get("id"), b.fields.get("name"), b.fields.get("arguments", b.text()))
            for b in self.calls.ordered()
        ]
        return Output(text="".join(self.text) or None, calls=calls, usage=self.usage).response()


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


def answer(message: Any) -> Response:
    return output_of(message).response()


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

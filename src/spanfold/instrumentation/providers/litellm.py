"""LiteLLM instrumentation: ``litellm.completion`` / ``acompletion``, streaming or not, as one model step per call.

Supported: ``litellm`` >= 1.60, < 2 (tested with 1.83, the last release that installs beside openai 3.x; later ones
pin ``openai < 3``). LiteLLM routes a call to a provider, through that provider's SDK (openai, azure) or its own HTTP
client. spanfold makes the step's span at LiteLLM's level, named after the upstream model and provider
(``gen_ai.provider.name`` is the provider LiteLLM routed to: ``openai``, ``anthropic``, ``groq``...), and the SDK calls
LiteLLM makes inside it get no span of their own (``ModelApi.outer``): one step, its tokens counted once, whatever
the route. ``embedding`` / ``aembedding`` alike: one ``embeddings {model}`` step, OpenAI's embeddings shapes
(:mod:`spanfold.instrumentation.providers.openai.embeddings`).

LiteLLM answers in OpenAI's shapes (``ModelResponse``; a ``CustomStreamWrapper`` of ``ModelResponseStream`` chunks),
so the request, response and chunks go through :mod:`spanfold.instrumentation.providers.openai.chat`. The provider is
read from
the request (``custom_llm_provider``, or the ``provider/`` prefix of the model), then from the response's
``_hidden_params`` (the route LiteLLM took).
"""

from __future__ import annotations

import math
from typing import Any

from spanfold import semconv
from spanfold.instrumentation.providers.openai import chat as openai_chat
from spanfold.instrumentation.providers.openai import embeddings as openai_embeddings
from spanfold.instrumentation.toolkit.calls import ModelApi, Result, server_of
from spanfold.instrumentation.toolkit.invocation import Cost, Request, Response
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor, model_method
from spanfold.instrumentation.toolkit.reading import fields as m

#: LiteLLM's provider names -> ``gen_ai.provider.name`` (others are kept as LiteLLM names them).
PROVIDERS = {
    "openai": semconv.PROVIDER_OPENAI,
    "text-completion-openai": semconv.PROVIDER_OPENAI,
    "azure": "azure.ai.openai",
    "anthropic": semconv.PROVIDER_ANTHROPIC,
    "groq": semconv.PROVIDER_GROQ,
    "mistral": semconv.PROVIDER_MISTRAL,
    "cohere": semconv.PROVIDER_COHERE,
    "cohere_chat": semconv.PROVIDER_COHERE,
    "ollama": semconv.PROVIDER_OLLAMA,
    "ollama_chat": semconv.PROVIDER_OLLAMA,
    "gemini": "gcp.gemini",
    "vertex_ai": "gcp.vertex_ai",
    "bedrock": "aws.bedrock",
    "deepseek": "deepseek",
    "xai": "x_ai",
    "perplexity": "perplexity",
    "watsonx": "ibm.watsonx.ai",
}
#: Before LiteLLM has routed the call (no prefix, no ``custom_llm_provider``).
UNROUTED = "litellm"


def _bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``completion(model, messages, ...)``: the first two may be positional."""
    m.materialize(kwargs, "messages", "tools")
    return {**dict(zip(("model", "messages"), args, strict=False)), **kwargs}


def _provider(name: Any) -> str | None:
    return PROVIDERS.get(name, name) if isinstance(name, str) and name else None


def _route(invocation: Request, kwargs: dict[str, Any]) -> Request:
    """``invocation`` with the model, the upstream provider a ``provider/model`` name (or ``custom_llm_provider``)
    routes to, and the server the call names (``api_base``)."""
    model = kwargs.get("model")
    routed, _, upstream = model.partition("/") if isinstance(model, str) else ("", "", "")
    provider = kwargs.get("custom_llm_provider")
    if provider is None and upstream:
        from litellm import provider_list

        provider = routed if routed in provider_list else None
        model = upstream if provider is not None else model
    invocation.model = model if isinstance(model, str) else None
    invocation.provider = _provider(provider) or UNROUTED
    invocation.endpoint = server_of(kwargs.get("api_base") or kwargs.get("base_url"))
    return invocation


def request(kwargs: dict[str, Any]) -> Request:
    return _route(openai_chat.request(kwargs), kwargs)


def embedding_request(kwargs: dict[str, Any]) -> Request:
    """``embedding(model, input, dimensions=, encoding_format=)``: OpenAI's embeddings request, routed."""
    return _route(openai_embeddings.request(kwargs), kwargs)


def embedding_response(result: Any) -> Response:
    """An ``EmbeddingResponse`` (OpenAI's shape), with the provider and cost LiteLLM says."""
    out = openai_embeddings.response(result)
    _routed(result, out)
    return out


def _is_embedding(result: Any) -> Result:
    from litellm import EmbeddingResponse

    return Result.RESPONSE if isinstance(result, EmbeddingResponse) else Result.OPAQUE


def _routed(obj: Any, into: Response) -> bool:
    """What LiteLLM's hidden parameters say of the call, set on ``into``: the provider it routed to, and the cost it
    computed from its own price table (``response_cost``, USD; the fold keeps a cost the span states rather than
    pricing the call). False when ``obj`` has none."""
    hidden = getattr(obj, "_hidden_params", None)
    if not isinstance(hidden, dict):
        return False
    into.provider = _provider(hidden.get("custom_llm_provider"))
    cost = hidden.get("response_cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and math.isfinite(cost) and cost >= 0:
        into.cost = Cost(float(cost))
    return into.provider is not None or into.cost is not None


def response(result: Any) -> Response:
    out = openai_chat.response(result)
    _routed(result, out)
    return out


class StreamAccumulator(openai_chat.ChatStreamAccumulator):
    """The chat chunk accumulator; the provider LiteLLM routed to (and its cost), from the first chunk's hidden
    parameters that name either."""

    __slots__ = ("routed",)

    def __init__(self) -> None:
        super().__init__()
        self.routed: Response | None = None

    def add(self, chunk: Any) -> None:
        if self.routed is None:
            routed = Response()
            if _routed(chunk, routed):
                self.routed = routed
        super().add(chunk)

    def result(self) -> Response:
        out = super().result()
        if self.routed is not None:
            out.provider, out.cost = self.routed.provider, self.routed.cost
        return out


def _classify(stream: Result) -> Any:
    def classify(result: Any) -> Result:
        from litellm import CustomStreamWrapper, ModelResponse

        if isinstance(result, CustomStreamWrapper):
            return stream
        return Result.RESPONSE if isinstance(result, ModelResponse) else Result.OPAQUE

    return classify


def _api(stream: Result) -> ModelApi:
    return ModelApi(
        kind="litellm.completion",
        provider=UNROUTED,
        operation=semconv.OP_CHAT,
        request=request,
        response=response,
        accumulator=StreamAccumulator,
        classify=_classify(stream),
        bind=_bind,
        outer=True,
    )


COMPLETION = _api(Result.STREAM)
ACOMPLETION = _api(Result.ASYNC_STREAM)
EMBEDDING = ModelApi(
    kind="litellm.embedding",
    provider=UNROUTED,
    operation=semconv.OP_EMBEDDINGS,
    request=embedding_request,
    response=embedding_response,
    accumulator=StreamAccumulator,  # never asked: embeddings do not stream
    classify=_is_embedding,
    bind=lambda args, kwargs: {**dict(zip(("model", "input"), args, strict=False)), **kwargs},
    outer=True,
    conversation=False,
)

#: ``litellm.completion`` is ``litellm.main.completion``: both names are wrapped (calls through either are one step).
PATCHES: tuple[Patch, ...] = tuple(
    model_method(module, name, api, name.startswith("a"))
    for module in ("litellm", "litellm.main")
    for name, api in (
        ("completion", COMPLETION),
        ("acompletion", ACOMPLETION),
        ("embedding", EMBEDDING),
        ("aembedding", EMBEDDING),
    )
)


class LiteLLMInstrumentor(TableInstrumentor, library="litellm", supported="litellm >= 1.60, < 2", table=PATCHES):
    """``LiteLLMInstrumentor().instrument(tracer_provider=..., runtime=...)``; ``uninstrument()`` restores it."""

"""Amazon Bedrock Runtime instrumentation (boto3 / botocore, and aiobotocore when installed).

Supported: ``botocore`` >= 1.43, < 2 (tested with 1.43.117) and ``aiobotocore`` >= 3.10, < 4 (tested with 3.10).
Traced: the ``bedrock-runtime`` operations ``Converse``, ``ConverseStream``, ``InvokeModel`` and
``InvokeModelWithResponseStream``; the shapes are mapped in
:mod:`~spanfold.instrumentation.providers.bedrock.converse` and
:mod:`~spanfold.instrumentation.providers.bedrock.invoke`.

Only Bedrock Runtime clients are touched. botocore builds a class per client (``ClientCreator._create_client_class``);
spanfold wraps that factory, and when the class it built is a ``bedrock-runtime`` client, wraps that class's
``_make_api_call``. Every other client (S3, DynamoDB, ...) keeps botocore's own method: no wrapper runs on its calls.
A client created before ``spanfold.init()`` is not traced.

botocore calls ``_make_api_call(operation_name, api_params)``: the wrapper looks the operation up in a dict and
hands model calls to the toolkit's wrapper for that operation (``ModelApi.bind`` takes ``api_params``); other
Bedrock Runtime operations (``ApplyGuardrail``, ``CountTokens``, ...) run untouched. An ``InvokeModel`` of an embedding
model (Titan, Cohere embed) is an embeddings call: :mod:`~spanfold.instrumentation.providers.bedrock.embeddings`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Final

from spanfold import semconv
from spanfold.instrumentation.providers.bedrock import converse as bedrock_converse
from spanfold.instrumentation.providers.bedrock import embeddings as bedrock_embeddings
from spanfold.instrumentation.providers.bedrock import invoke as bedrock_invoke
from spanfold.instrumentation.providers.bedrock.body import AsyncBody, SyncBody
from spanfold.instrumentation.toolkit.calls import ModelApi, Result, by_operation, server_of
from spanfold.instrumentation.toolkit.invocation import Endpoint
from spanfold.instrumentation.toolkit.patching import TableInstrumentor, class_factory
from spanfold.instrumentation.toolkit.streams import StreamState

SERVICE: Final = "bedrock-runtime"


def _params(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
    params = args[1] if len(args) > 1 else kwargs.get("api_params")
    return params if isinstance(params, dict) else None


def server(instance: Any) -> Endpoint | None:
    """The client's endpoint URL."""
    return server_of(instance.meta.endpoint_url)


def _nested(key: str) -> Callable[[Any], Result]:
    """A response dict holding a stream (or a readable body) under ``key``: async when its reads are coroutines."""

    def classify(result: Any) -> Result:
        value = result.get(key) if isinstance(result, dict) else None
        if value is None:
            return Result.RESPONSE
        kind = type(value)
        if hasattr(kind, "__aiter__") or inspect.iscoroutinefunction(getattr(kind, "read", None)):
            return Result.NESTED_ASYNC_STREAM
        return Result.NESTED_STREAM

    return classify


def _body_proxy(response: dict[str, Any], state: StreamState, is_async: bool) -> Any:
    """``invoke_model``'s body, proxied so the span sees what the user reads; usage from the headers meanwhile."""
    if isinstance(state.accumulator, bedrock_invoke.BodyAccumulator):
        state.accumulator.beside = bedrock_invoke.headers(response)
    return (AsyncBody if is_async else SyncBody)(response["body"], state)


def _api(kind: str, classify: Callable[[Any], Result], **shape: Any) -> ModelApi:
    return ModelApi(
        kind=f"bedrock.{kind}", provider=semconv.PROVIDER_AWS_BEDROCK, operation=semconv.OP_CHAT, classify=classify,
        server=server, bind=_params, **shape,
    )  # fmt: skip


CONVERSE: Final = dict(
    request=bedrock_converse.request,
    response=bedrock_converse.response,
    accumulator=bedrock_converse.ConverseStreamAccumulator,
)
INVOKE: Final = dict(request=bedrock_invoke.request, response=bedrock_invoke.unread, nested_stream="body")

#: operation name -> how its model call maps onto a span.
APIS: Final[dict[str, ModelApi]] = {
    "Converse": _api("converse", lambda result: Result.RESPONSE, **CONVERSE),
    "ConverseStream": _api("converse_stream", _nested("stream"), nested_stream="stream", **CONVERSE),
    "InvokeModel": _api(
        "invoke_model",
        _nested("body"),
        nested_proxy=_body_proxy,
        accumulator=bedrock_invoke.BodyAccumulator,
        **INVOKE,
    ),
    "InvokeModelWithResponseStream": _api(
        "invoke_model_stream", _nested("body"), accumulator=bedrock_invoke.StreamAccumulator, **INVOKE
    ),
}


#: An ``InvokeModel`` of an embedding model: its own API (an ``embeddings {model}`` span, no history).
INVOKE_EMBEDDINGS: Final = "InvokeModel:embeddings"
APIS[INVOKE_EMBEDDINGS] = replace(
    _api(
        "invoke_model_embeddings",
        _nested("body"),
        nested_stream="body",
        nested_proxy=_body_proxy,
        request=bedrock_embeddings.request,
        response=bedrock_invoke.unread,
        accumulator=bedrock_embeddings.EmbedBodyAccumulator,
    ),
    operation=semconv.OP_EMBEDDINGS,
    conversation=False,
)


def _operation(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    name = args[0] if args else kwargs.get("operation_name")
    if name == "InvokeModel":
        call = _params(args, kwargs)
        if call is not None and bedrock_embeddings.is_embedding(call.get("modelId")):
            return INVOKE_EMBEDDINGS
    return name


def _bedrock_runtime(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """``_create_client_class(service_name, service_model)`` makes a Bedrock Runtime client class."""
    return (args[0] if args else kwargs.get("service_name")) == SERVICE


#: A Bedrock Runtime client's ``_make_api_call``: model operations traced, others untouched.
OPERATIONS: Final = by_operation(APIS, _operation)

#: botocore's client factory, and aiobotocore's (patched when the application imports it; never imported by spanfold).
PATCHES: Final = (
    class_factory(
        "botocore.client", "ClientCreator._create_client_class", _bedrock_runtime, "_make_api_call", OPERATIONS
    ),
    class_factory(
        "aiobotocore.client",
        "AioClientCreator._create_client_class",
        _bedrock_runtime,
        "_make_api_call",
        OPERATIONS,
        is_async=True,
    ),
)


class BedrockInstrumentor(TableInstrumentor, library="botocore", supported="botocore >= 1.43, < 2", table=PATCHES):
    """``BedrockInstrumentor().instrument(tracer_provider=..., runtime=...)``; ``uninstrument()`` restores botocore,
    aiobotocore and the client classes it wrapped."""

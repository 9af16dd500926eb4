"""Google Gemini instrumentation: which ``google-genai`` SDK methods are wrapped.

Supported: ``google-genai`` >= 1.0, < 4 (tested with 3.3 and 3.4), the Gemini Developer API and Vertex AI alike
(``gen_ai.provider.name`` ``gcp.gemini`` or ``gcp.vertex_ai``, from the client). The shapes are mapped in
:mod:`spanfold.instrumentation.providers.gemini.content` and :mod:`spanfold.instrumentation.providers.gemini.stream`.

What is wrapped, and why there:

* one ``chat {model}`` span per API request: ``Models._generate_content`` / ``_generate_content_stream`` and their
  ``AsyncModels`` twins, the methods that send one ``generateContent`` / ``streamGenerateContent`` request.
  ``generate_content`` and ``generate_content_stream`` (sync and ``client.aio``), and ``client.chats``'
  ``send_message`` / ``send_message_stream``, all go through them, so a call that runs automatic function calling
  (several model turns) or automatic continuation (several requests) gets a span per request, each with the history
  that request sent;
* automatic function calling: the SDK runs the user's Python functions through
  ``_extra_utils.invoke_function_from_dict_args`` (and ``_async``); each function is run as a ``@spanfold.tool``
  (an ``execute_tool`` span: arguments, result, errors), unless it is one already. Gemini function calls often carry
  no id: the fold pairs the calls, the tool runs and the results the next request sends by name and order;
* one ``embeddings {model}`` span per ``Models._embed_content`` / ``AsyncModels._embed_content`` request (what
  ``embed_content`` sends): :mod:`spanfold.instrumentation.providers.gemini.embeddings`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spanfold import counters, semconv
from spanfold.instrumentation.providers.gemini import content as gemini_content
from spanfold.instrumentation.providers.gemini import embeddings as gemini_embeddings
from spanfold.instrumentation.providers.gemini import stream as gemini_stream
from spanfold.instrumentation.toolkit import tool_spans as tools
from spanfold.instrumentation.toolkit.calls import ModelApi, iterator_result, server_of
from spanfold.instrumentation.toolkit.invocation import Endpoint
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor, model_methods, plain

_MODELS = "google.genai.models"
_FUNCTIONS = "google.genai._extra_utils"
#: The methods that send one request each.
_SENDERS = ("_generate_content", "_generate_content_stream")


def endpoint(instance: Any) -> Endpoint | None:
    """Where the request goes, and so who serves it: ``server.*`` from the client's base URL, and the provider
    (Vertex AI or the Developer API; it replaces the API's default)."""
    client = instance._api_client
    vertex = semconv.PROVIDER_GCP_VERTEX_AI if client.vertexai else semconv.PROVIDER_GCP_GEMINI
    return server_of(str(client._http_options.base_url or ""), provider=vertex)


GENERATE_CONTENT = ModelApi(
    kind="gemini.generate_content",
    provider=semconv.PROVIDER_GCP_GEMINI,
    operation=semconv.OP_CHAT,
    request=gemini_content.request,
    response=gemini_content.response,
    accumulator=gemini_stream.GeminiStreamAccumulator,
    classify=iterator_result,  # a GenerateContentResponse (pydantic), or a (sync or async) generator of them
    server=endpoint,
)


EMBED_CONTENT = ModelApi(
    kind="gemini.embed_content",
    provider=semconv.PROVIDER_GCP_GEMINI,
    operation=semconv.OP_EMBEDDINGS,
    request=gemini_embeddings.request,
    response=gemini_embeddings.response,
    accumulator=gemini_stream.GeminiStreamAccumulator,  # never asked: embeddings do not stream
    classify=iterator_result,
    server=endpoint,
    conversation=False,
)


def _run_traced(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``invoke_function_from_dict_args(args, function_to_invoke)``: the function runs as a ``@spanfold.tool``."""
    try:
        if len(args) >= 2:
            args = (args[0], tools.traced(args[1]), *args[2:])
        elif "function_to_invoke" in kwargs:
            kwargs = {**kwargs, "function_to_invoke": tools.traced(kwargs["function_to_invoke"])}
    except Exception as exc:
        counters.fault("gemini.tool", exc)
    return wrapped(*args, **kwargs)


PATCHES: tuple[Patch, ...] = (
    *model_methods(_MODELS, ("Models", "AsyncModels"), _SENDERS, GENERATE_CONTENT),
    *model_methods(_MODELS, ("Models", "AsyncModels"), ("_embed_content",), EMBED_CONTENT),
    plain(_FUNCTIONS, "invoke_function_from_dict_args", _run_traced),
    plain(_FUNCTIONS, "invoke_function_from_dict_args_async", _run_traced),
)


class GeminiInstrumentor(
    TableInstrumentor, library="google.genai", supported="google-genai >= 1.0, < 4", table=PATCHES
):
    """``GeminiInstrumentor().instrument(tracer_provider=..., runtime=...)``; ``uninstrument()`` restores the SDK."""

"""Typed invocations -> GenAI span attributes: the one place the instrumentation names an attribute of a model call,
writes its JSON and applies the :class:`~spanfold.content.runtime.Runtime` to what a provider read.

Every provider's :class:`~spanfold.instrumentation.toolkit.invocation.Request` and
:class:`~spanfold.instrumentation.toolkit.invocation.Response` become attributes here, the same way: None values are
left out (``spans.clean``), content is recorded with capture on and redacted when redaction is on, tool definitions
only with capture on. Every output message carries its ``finish_reason`` (the semconv value of the provider's reason,
"" when it gave none): deprecated in the conventions, still required by consumers in use (Arize Phoenix).
"""

from __future__ import annotations

from typing import Any, Final

from spanfold import semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit.invocation import Endpoint, Param, Ranked, Request, Response, Usage
from spanfold.instrumentation.toolkit.reading.fields import dumps
from spanfold.instrumentation.toolkit.reading.history import Listed
from spanfold.semconv import parts as p
from spanfold.semconv import shapes

PARAMS: Final[dict[Param, str]] = {
    "temperature": semconv.REQUEST_TEMPERATURE,
    "top_p": semconv.REQUEST_TOP_P,
    "top_k": semconv.REQUEST_TOP_K,
    "max_tokens": semconv.REQUEST_MAX_TOKENS,
    "seed": semconv.REQUEST_SEED,
    "frequency_penalty": semconv.REQUEST_FREQUENCY_PENALTY,
    "presence_penalty": semconv.REQUEST_PRESENCE_PENALTY,
    "choice_count": semconv.REQUEST_CHOICE_COUNT,
}

#: Usage field -> attribute, in the order they are written.
USAGE: Final = tuple(
    (name, attribute)
    for name, attribute in (
        ("input_tokens", semconv.USAGE_INPUT_TOKENS),
        ("output_tokens", semconv.USAGE_OUTPUT_TOKENS),
        ("cache_read_input_tokens", semconv.USAGE_CACHE_READ_INPUT_TOKENS),
        ("cache_write_input_tokens", semconv.USAGE_CACHE_WRITE_INPUT_TOKENS),
        ("reasoning_output_tokens", semconv.USAGE_REASONING_OUTPUT_TOKENS),
        ("text_input_tokens", semconv.USAGE_TEXT_INPUT_TOKENS),
        ("image_input_tokens", semconv.USAGE_IMAGE_INPUT_TOKENS),
        ("audio_input_tokens", semconv.USAGE_AUDIO_INPUT_TOKENS),
        ("text_output_tokens", semconv.USAGE_TEXT_OUTPUT_TOKENS),
        ("image_output_tokens", semconv.USAGE_IMAGE_OUTPUT_TOKENS),
        ("audio_output_tokens", semconv.USAGE_AUDIO_OUTPUT_TOKENS),
    )
)

#: The vendor attribute of a continued response, by provider (the conventions name none yet).
PREVIOUS_RESPONSE: Final = {
    semconv.PROVIDER_OPENAI: semconv.OPENAI_PREVIOUS_RESPONSE_ID,
    semconv.PROVIDER_ANTHROPIC: semconv.ANTHROPIC_PREVIOUS_MESSAGE_ID,
}
#: The vendor attribute of the provider's request id, by provider.
REQUEST_ID: Final = {
    semconv.PROVIDER_ANTHROPIC: semconv.ANTHROPIC_REQUEST_ID,
    semconv.PROVIDER_AWS_BEDROCK: semconv.AWS_REQUEST_ID,
}


def _messages(value: Listed | list[p.Message], rt: Runtime) -> str:
    if isinstance(value, Listed):
        return value.json(rt)
    return dumps([p.applied_message(message, rt) for message in value])


def request(req: Request, provider: str, rt: Runtime) -> dict[str, Any]:
    """The request attributes of a call to ``provider`` (a router's request names its upstream provider)."""
    attrs: dict[str, Any] = {semconv.REQUEST_MODEL: req.model}
    for name, value in req.params.items():
        attrs[PARAMS[name]] = value
    if req.stop_sequences is not None and rt.capture_content:
        attrs[semconv.REQUEST_STOP_SEQUENCES] = rt.content(req.stop_sequences)
    if req.output_type is not None:
        attrs[semconv.OUTPUT_TYPE] = req.output_type
    if req.previous_response_id is not None and provider in PREVIOUS_RESPONSE:
        attrs[PREVIOUS_RESPONSE[provider]] = req.previous_response_id
    if req.conversation_id is not None:
        attrs[semconv.CONVERSATION_ID] = req.conversation_id
    if req.system is not None:
        attrs[semconv.SYSTEM_INSTRUCTIONS] = dumps(p.applied_parts(req.system, rt))
    if req.messages is not None:
        attrs[semconv.INPUT_MESSAGES] = _messages(req.messages, rt)
    if req.tools is not None and rt.capture_content:
        tools = req.tools
        if isinstance(tools, Listed):
            attrs[semconv.TOOL_DEFINITIONS] = tools.json(rt)
        else:
            attrs[semconv.TOOL_DEFINITIONS] = dumps([p.applied_definition(tool, rt) for tool in tools])
    if req.provider is not None:
        attrs[semconv.PROVIDER_NAME] = req.provider
    if req.endpoint is not None:
        attrs.update(endpoint(req.endpoint))
    if req.input_count is not None:
        attrs[semconv.SPANFOLD_EMBEDDINGS_INPUT_COUNT] = req.input_count
    if req.dimension_count is not None:
        attrs[semconv.EMBEDDINGS_DIMENSION_COUNT] = req.dimension_count
    if req.encoding_formats is not None:
        attrs[semconv.REQUEST_ENCODING_FORMATS] = req.encoding_formats
    if req.query is not None and rt.capture_content:
        attrs[semconv.RETRIEVAL_QUERY_TEXT] = rt.content(req.query)
    if req.top_k is not None:
        attrs[semconv.RETRIEVAL_TOP_K] = req.top_k
    if req.reranks:
        attrs[semconv.OPENINFERENCE_SPAN_KIND] = semconv.OPENINFERENCE_KIND_RERANKER
    return attrs


def model_call(
    req: Request, provider: str, operation: str, rt: Runtime, server: Endpoint | None = None
) -> tuple[str, dict[str, Any]]:
    """A model call's span name and start attributes: its request's, its operation, its provider (unless the request
    names an upstream one: a router's) and where it is sent. Every model step is started from these, a provider's
    (:mod:`~spanfold.instrumentation.toolkit.calls`) or a framework's own."""
    attrs = request(req, provider, rt)
    attrs[semconv.OPERATION_NAME] = operation
    attrs.setdefault(semconv.PROVIDER_NAME, provider)
    if server is not None:
        attrs.update(endpoint(server))
    return semconv.span_name(operation, req.target or req.model), attrs


def usage(value: Usage) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, attribute in USAGE:
        count = getattr(value, name)
        if count is not None:
            out[attribute] = count
    return out


def output_messages(res: Response, provider: str, rt: Runtime) -> list[p.Message] | None:
    """The output messages of a call to ``provider`` as a span records them, each with its ``finish_reason``: the
    reason of its choice (one reason for all: the call's), as the provider's table maps it; "" when none is known."""
    if res.messages is None:
        return None
    reasons = res.finish_reasons or []
    paired = len(reasons) == len(res.messages)
    out: list[p.Message] = []
    for k, message in enumerate(res.messages):
        raw = reasons[k] if paired else reasons[0] if len(reasons) == 1 else None
        reason = shapes.output_finish_reason(provider, raw, p.calls_tools(message))
        out.append(p.finished(p.applied_message(message, rt), reason))
    return out


def response(res: Response, provider: str, rt: Runtime) -> dict[str, Any]:
    """The result attributes of a call to ``provider``."""
    messages = output_messages(res, provider, rt)
    attrs: dict[str, Any] = {
        semconv.RESPONSE_ID: res.id,
        semconv.RESPONSE_MODEL: res.model,
        semconv.RESPONSE_FINISH_REASONS: res.finish_reasons or None,
        semconv.OUTPUT_MESSAGES: None if messages is None else dumps(messages),
    }
    if res.usage is not None:
        attrs.update(usage(res.usage))
    if res.request_id is not None and provider in REQUEST_ID:
        attrs[REQUEST_ID[provider]] = res.request_id
    if res.conversation_id is not None:
        attrs[semconv.CONVERSATION_ID] = res.conversation_id
    if res.provider is not None:
        attrs[semconv.PROVIDER_NAME] = res.provider
    if res.cost is not None:
        attrs[semconv.USAGE_COST_AMOUNT] = res.cost.amount
        attrs[semconv.USAGE_COST_CURRENCY] = res.cost.currency
        attrs[semconv.USAGE_COST_SOURCE] = semconv.COST_SOURCE_LOCAL
    if res.dimension_count is not None:
        attrs[semconv.EMBEDDINGS_DIMENSION_COUNT] = res.dimension_count
    if res.documents is not None:
        attrs[semconv.RETRIEVAL_DOCUMENTS] = dumps([_document(doc, rt) for doc in res.documents])
    return attrs


def _document(doc: Ranked, rt: Runtime) -> dict[str, Any]:
    """A ranked document as ``gen_ai.retrieval.documents`` lists it: id and score always, its text with capture on."""
    out: dict[str, Any] = {"id": doc.id, "score": doc.score}
    if doc.text is not None and rt.capture_content:
        out["content"] = rt.content(doc.text)
    return out


def endpoint(value: Endpoint | None) -> dict[str, Any]:
    """``server.address`` / ``server.port``, and the provider the endpoint reaches when it says."""
    if value is None:
        return {}
    attrs: dict[str, Any] = {semconv.SERVER_ADDRESS: value.address, semconv.SERVER_PORT: value.port}
    if value.provider is not None:
        attrs[semconv.PROVIDER_NAME] = value.provider
    return attrs

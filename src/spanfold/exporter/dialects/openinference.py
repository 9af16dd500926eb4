"""Dialect: OpenInference (``openinference-instrumentation-openai`` and the ``OITracer`` decorators of
``openinference-instrumentation``), recognised by ``openinference.span.kind`` (one lookup).

``LLM`` spans (``ChatCompletion`` ...)
    ``llm.input_messages.{N}.message.role`` / ``.content`` / ``.contents.{K}.message_content.type|text|image.image.url``
    / ``.tool_call_id`` / ``.tool_calls.{M}.tool_call.id|function.name|function.arguments``, the same under
    ``llm.output_messages``; ``llm.model_name``, ``llm.provider`` / ``llm.system``, ``llm.token_count.prompt`` /
    ``.completion`` / ``.prompt_details.cache_read``, ``llm.finish_reason``, ``session.id``. Rewritten into
    ``gen_ai.input.messages`` / ``gen_ai.output.messages``, model, provider, usage, finish reasons,
    ``gen_ai.conversation.id`` and ``chat {model}``. OpenInference records no response id and no separate
    response model; with ``OPENINFERENCE_HIDE_INPUTS`` / ``_OUTPUTS`` the messages are missing and the step keeps
    model, usage and timing.
``TOOL`` spans
    ``tool.name``, ``input.value`` (the JSON of the keyword arguments), ``output.value`` (the returned text),
    ``tool_call.id`` when the producer knows it (the decorators do not: the fold pairs the span with the model's
    call by name and arguments) -> ``execute_tool``; a hidden (``__REDACTED__``) value is left out.
``AGENT`` spans
    ``agent.name`` (else the span name), ``session.id`` -> ``invoke_agent``.
``RETRIEVER`` spans
    ``input.value`` (the query), ``retrieval.documents.{N}.document.id|score|content`` -> ``retrieval {name}``
    (``gen_ai.retrieval.query.text``, ``gen_ai.retrieval.documents``, the span's name as the store): a metadata step.
``EMBEDDING`` spans
    ``embedding.model_name``, ``embedding.embeddings.{N}.embedding.text|vector`` (how many inputs; the first
    vector's length), ``llm.token_count.prompt``, ``llm.system`` -> ``embeddings {model}``: a metadata step, priced.
``RERANKER`` spans
    ``reranker.model_name``, ``reranker.query``, ``reranker.top_k``, ``reranker.output_documents.{N}.document.*``
    (the order and scores it gave) -> ``rerank {model}``: a metadata step.
``CHAIN`` and the other kinds are not steps and are left alone.

Never imports :mod:`spanfold.instrumentation`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from spanfold import semconv
from spanfold.exporter.dialects.shapes import (
    chat_message,
    dumps,
    in_order,
    indexed,
    indexed_tool_calls,
    messages_in_order,
)
from spanfold.exporter.records import SpanRecord

SPAN_KIND: Final = semconv.OPENINFERENCE_SPAN_KIND
INPUT_MESSAGES: Final = semconv.OPENINFERENCE_INPUT_MESSAGES
OUTPUT_MESSAGES: Final = semconv.OPENINFERENCE_OUTPUT_MESSAGES
INPUT_VALUE: Final = semconv.OPENINFERENCE_INPUT_VALUE
OUTPUT_VALUE: Final = semconv.OPENINFERENCE_OUTPUT_VALUE
SESSION_ID: Final = semconv.OPENINFERENCE_SESSION_ID
REDACTED: Final = semconv.OPENINFERENCE_REDACTED
#: OpenInference attribute -> the contract's (filled when the contract's is missing).
LLM_ATTRIBUTES: Final = semconv.OPENINFERENCE_LLM_ATTRIBUTES


def _contents(fields: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """``message.contents.{K}.message_content.*`` as OpenAI content parts (None when there are none)."""
    groups = indexed(fields, (semconv.OPENINFERENCE_CONTENTS,))[semconv.OPENINFERENCE_CONTENTS]
    if not groups:
        return None
    parts: list[dict[str, Any]] = []
    for content in in_order(groups):
        kind = content.get(semconv.OPENINFERENCE_CONTENT_TYPE)
        if kind == "image":
            url = content.get(semconv.OPENINFERENCE_CONTENT_IMAGE_URL)
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            parts.append({"type": "text", "text": content.get(semconv.OPENINFERENCE_CONTENT_TEXT)})
    return parts


def _messages(groups: dict[int, dict[str, Any]], finish_reason: str | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages_in_order(groups):
        prefix = semconv.OPENINFERENCE_MESSAGE
        fields = {k[len(prefix) :]: v for k, v in message.items() if k.startswith(prefix)}
        calls = indexed_tool_calls(fields, semconv.OPENINFERENCE_TOOL_CALLS, semconv.OPENINFERENCE_TOOL_CALL_KEYS)
        content = fields.get(semconv.OPENINFERENCE_CONTENT)
        if content is None:
            content = _contents(fields)
        call_id = fields.get(semconv.OPENINFERENCE_TOOL_CALL_ID)
        role = fields.get(semconv.OPENINFERENCE_ROLE)
        out.extend(chat_message(role, content, calls, call_id, finish_reason=finish_reason))
    return out


def _llm(record: SpanRecord, attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    out = _with_llm_names(attrs)
    reason = attrs.get(semconv.OPENINFERENCE_FINISH_REASON)
    if isinstance(reason, str) and semconv.RESPONSE_FINISH_REASONS not in attrs:
        out[semconv.RESPONSE_FINISH_REASONS] = [reason]
    groups = indexed(attrs, (INPUT_MESSAGES, OUTPUT_MESSAGES))
    if groups[INPUT_MESSAGES] and semconv.INPUT_MESSAGES not in attrs:
        out[semconv.INPUT_MESSAGES] = dumps(_messages(groups[INPUT_MESSAGES], None))
    if groups[OUTPUT_MESSAGES] and semconv.OUTPUT_MESSAGES not in attrs:
        finish = reason if isinstance(reason, str) else ""
        out[semconv.OUTPUT_MESSAGES] = dumps(_messages(groups[OUTPUT_MESSAGES], finish))
    out[semconv.OPERATION_NAME] = semconv.OP_CHAT
    model = out.get(semconv.REQUEST_MODEL)
    return semconv.span_name(semconv.OP_CHAT, str(model) if model is not None else None), out


def _tool(record: SpanRecord, attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    out = dict(attrs)
    out[semconv.OPERATION_NAME] = semconv.OP_EXECUTE_TOOL
    name = attrs.get(semconv.OPENINFERENCE_TOOL_NAME) or record.name
    out.setdefault(semconv.TOOL_NAME, name)
    call_id = semconv.OPENINFERENCE_TOOL_CALL_ID_ATTRIBUTE
    if call_id in attrs:
        out.setdefault(semconv.TOOL_CALL_ID, attrs[call_id])
    for theirs, ours in ((INPUT_VALUE, semconv.TOOL_CALL_ARGUMENTS), (OUTPUT_VALUE, semconv.TOOL_CALL_RESULT)):
        value = attrs.get(theirs)
        if value is not None and value != REDACTED:
            out.setdefault(ours, value)
    return semconv.span_name(semconv.OP_EXECUTE_TOOL, str(name)), out


def _agent(record: SpanRecord, attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    out = dict(attrs)
    out[semconv.OPERATION_NAME] = semconv.OP_INVOKE_AGENT
    name = attrs.get(semconv.OPENINFERENCE_AGENT_NAME) or record.name
    out.setdefault(semconv.AGENT_NAME, name)
    if SESSION_ID in attrs:
        out.setdefault(semconv.CONVERSATION_ID, attrs[SESSION_ID])
    return semconv.span_name(semconv.OP_INVOKE_AGENT, str(name)), out


def _documents(groups: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """``{prefix}{N}.document.*`` as the contract's ``[{"id", "score", "content"?}]``, in their order."""
    out: list[dict[str, Any]] = []
    for fields in in_order(groups):
        doc = {
            "id": fields.get(semconv.OPENINFERENCE_DOCUMENT_ID),
            "score": fields.get(semconv.OPENINFERENCE_DOCUMENT_SCORE),
        }
        content = fields.get(semconv.OPENINFERENCE_DOCUMENT_CONTENT)
        if content is not None and content != REDACTED:
            doc["content"] = content
        out.append(doc)
    return out


def _retriever(record: SpanRecord, attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    out = dict(attrs)
    out[semconv.OPERATION_NAME] = semconv.OP_RETRIEVAL
    out.setdefault(semconv.DATA_SOURCE_ID, record.name)
    query = attrs.get(INPUT_VALUE)
    if isinstance(query, str) and query != REDACTED:
        out.setdefault(semconv.RETRIEVAL_QUERY_TEXT, query)
    groups = indexed(attrs, (semconv.OPENINFERENCE_RETRIEVAL_DOCUMENTS,))[semconv.OPENINFERENCE_RETRIEVAL_DOCUMENTS]
    if groups and semconv.RETRIEVAL_DOCUMENTS not in attrs:
        out[semconv.RETRIEVAL_DOCUMENTS] = _documents(groups)
    return semconv.span_name(semconv.OP_RETRIEVAL, record.name), out


def _with_llm_names(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The span's attributes with the contract's names for OpenInference's model, provider and tokens."""
    out = dict(attrs)
    for theirs, ours in LLM_ATTRIBUTES.items():
        if theirs in attrs and ours not in out:
            out[ours] = attrs[theirs]
    return out


def _embedding(record: SpanRecord, attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    out = _with_llm_names(attrs)
    out[semconv.OPERATION_NAME] = semconv.OP_EMBEDDINGS
    model = attrs.get(semconv.OPENINFERENCE_EMBEDDING_MODEL)
    if model is not None:
        out.setdefault(semconv.REQUEST_MODEL, model)
    groups = indexed(attrs, (semconv.OPENINFERENCE_EMBEDDINGS,))[semconv.OPENINFERENCE_EMBEDDINGS]
    if groups:
        out.setdefault(semconv.SPANFOLD_EMBEDDINGS_INPUT_COUNT, len(groups))
        vector = groups[min(groups)].get(semconv.OPENINFERENCE_EMBEDDING_VECTOR)
        if isinstance(vector, (list, tuple)):
            out.setdefault(semconv.EMBEDDINGS_DIMENSION_COUNT, len(vector))
    name = out.get(semconv.REQUEST_MODEL)
    return semconv.span_name(semconv.OP_EMBEDDINGS, str(name) if name is not None else None), out


def _reranker(record: SpanRecord, attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    out = _with_llm_names(attrs)
    out[semconv.OPERATION_NAME] = semconv.OP_RERANK
    out.setdefault(semconv.DATA_SOURCE_ID, record.name)
    for theirs, ours in (
        (semconv.OPENINFERENCE_RERANKER_MODEL, semconv.REQUEST_MODEL),
        (semconv.OPENINFERENCE_RERANKER_QUERY, semconv.RETRIEVAL_QUERY_TEXT),
        (semconv.OPENINFERENCE_RERANKER_TOP_K, semconv.RETRIEVAL_TOP_K),
    ):
        if attrs.get(theirs) is not None:
            out.setdefault(ours, attrs[theirs])
    prefix = semconv.OPENINFERENCE_RERANKER_OUTPUT_DOCUMENTS
    groups = indexed(attrs, (prefix,))[prefix]
    if groups and semconv.RETRIEVAL_DOCUMENTS not in attrs:
        out[semconv.RETRIEVAL_DOCUMENTS] = _documents(groups)
    name = out.get(semconv.REQUEST_MODEL)
    return semconv.span_name(semconv.OP_RERANK, str(name) if name is not None else None), out


#: ``openinference.span.kind`` -> its rewrite (other kinds are not steps).
KINDS: Final[dict[str, Callable[[SpanRecord, Mapping[str, Any]], tuple[str, dict[str, Any]]]]] = {
    "LLM": _llm,
    "TOOL": _tool,
    "AGENT": _agent,
    semconv.OPENINFERENCE_KIND_RETRIEVER: _retriever,
    semconv.OPENINFERENCE_KIND_EMBEDDING: _embedding,
    semconv.OPENINFERENCE_KIND_RERANKER: _reranker,
}


def rewrite(record: SpanRecord) -> tuple[str, dict[str, Any]] | None:
    """An OpenInference span in the contract's name and attributes; None for any other span."""
    kind = record.attributes.get(SPAN_KIND)
    handler = KINDS.get(kind) if isinstance(kind, str) else None
    return handler(record, record.attributes) if handler is not None else None

"""Dialect: OpenLLMetry (``opentelemetry-instrumentation-openai`` / ``-anthropic`` ...) and traceloop SDK spans.

OpenLLMetry 0.54 and later write ``gen_ai.operation.name`` and ``gen_ai.input.messages`` /
``gen_ai.output.messages`` as the contract does: those spans fold through the generic path, untouched here. This
module reads what the older releases (up to 0.53, and ``opentelemetry-instrumentation-anthropic`` 0.53.4) and the
traceloop SDK's decorators write:

LLM spans (``openai.chat``, ``anthropic.chat`` ...; recognised by ``llm.request.type``, one lookup)
    ``gen_ai.prompt.{N}.role`` / ``.content`` (a string, or the JSON of the content list: OpenAI content parts,
    Anthropic blocks with ``tool_use`` / ``tool_result``) / ``.tool_call_id`` / ``.tool_calls.{M}.id|name|arguments``;
    ``gen_ai.completion.{N}.role`` / ``.content`` / ``.finish_reason`` / ``.tool_calls.{M}.*``;
    ``gen_ai.system`` (``openai``, ``Anthropic``), ``gen_ai.request.model``, ``gen_ai.response.model|id``, usage as
    ``gen_ai.usage.input_tokens`` (older: ``prompt_tokens`` / ``completion_tokens``). Rewritten into
    ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (tool results split into ``tool`` messages),
    ``gen_ai.response.finish_reasons``, ``gen_ai.provider.name`` and ``chat {model}``. With content tracing off
    (``TRACELOOP_TRACE_CONTENT=false``) there are no prompt attributes: the step keeps model, usage and timing.
Embeddings and rerank spans (``openai.embeddings``, ``cohere.rerank`` ...; ``llm.request.type`` ``embedding`` /
``rerank``; 0.54 on, embeddings write ``gen_ai.operation.name`` and fold through the generic path)
    an embeddings call's inputs are its ``gen_ai.prompt.{N}``: how many -> ``embeddings {model}``, a metadata step
    with model, provider and tokens; a rerank's documents are its ``system`` prompts, its query the ``user`` one, and
    each result a completion ``Doc {index}, Score: {score}`` (then the document's text) -> ``rerank {model}``: the
    documents by their index, in the order and with the scores the reranker gave.
Vector-store spans (``opentelemetry-instrumentation-chromadb`` / ``-pinecone`` / ``-qdrant`` / ``-milvus`` ...;
recognised by ``db.system`` naming a vector store, :func:`vector_store`)
    a search (``chroma.query``, ``pinecone.query``, ``qdrant.search``, ``milvus.search`` ...: ``db.operation``, or the
    span name's last word where the instrumentation writes none, as Qdrant's) -> ``retrieval {store}``: the store
    (``db.system`` as written), ``top_k`` (``db.vector.query.top_k``, Chroma's ``n_results``, Pinecone's ``top_k``,
    Milvus's ``limit``) and the documents from the span's result events (``db.query.result`` / ``db.search.result``:
    ``id``, ``score``, else the store's ``distance`` as it came, and the text: ``document``, Milvus's ``entity``).
    Writes (``add``, ``upsert``, ``delete`` ...), Chroma's inner segment ``_query`` and SQL databases' ``db.*`` spans
    are not steps and are left alone.
traceloop decorator spans (``{name}.tool``, ``{name}.agent`` ...; recognised by ``traceloop.span.kind``)
    ``traceloop.entity.name``, ``traceloop.entity.input`` (JSON ``{"args": [...], "kwargs": {...}}``),
    ``traceloop.entity.output`` (the JSON of the return value). ``tool`` -> ``execute_tool`` (arguments: the
    keyword arguments, or ``{"args", "kwargs"}`` when there are positional ones; result: the returned string, or
    its JSON); ``agent`` -> ``invoke_agent``; ``workflow`` / ``task`` are left alone (not steps). A tool span has no
    tool-call id: the fold pairs it with the model's call by name and arguments.

Never imports :mod:`spanfold.instrumentation`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from spanfold import semconv
from spanfold.exporter.dialects.shapes import (
    chat_message,
    dumps,
    in_order,
    indexed,
    indexed_tool_calls,
    loads,
    messages_in_order,
)
from spanfold.exporter.records import SpanEvent, SpanRecord

REQUEST_TYPE: Final = semconv.OPENLLMETRY_REQUEST_TYPE
SPAN_KIND: Final = semconv.OPENLLMETRY_SPAN_KIND
ENTITY_NAME: Final = semconv.OPENLLMETRY_ENTITY_NAME
ENTITY_INPUT: Final = semconv.OPENLLMETRY_ENTITY_INPUT
ENTITY_OUTPUT: Final = semconv.OPENLLMETRY_ENTITY_OUTPUT
PROMPT: Final = semconv.OPENLLMETRY_PROMPT
COMPLETION: Final = semconv.OPENLLMETRY_COMPLETION

#: ``llm.request.type`` values that are model steps (the anthropic instrumentation calls Messages ``completion``).
MODEL_REQUESTS: Final = frozenset({"chat", "completion"})
#: Older usage names -> the contract's.
USAGE_ALIASES: Final = semconv.OPENLLMETRY_USAGE_ALIASES
#: ``traceloop.span.kind`` -> the operation its span stands for.
ENTITY_OPERATIONS: Final = {"tool": semconv.OP_EXECUTE_TOOL, "agent": semconv.OP_INVOKE_AGENT}


def _messages(groups: dict[int, dict[str, Any]], output: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for fields in messages_in_order(groups):
        calls = indexed_tool_calls(fields, semconv.OPENLLMETRY_TOOL_CALLS, semconv.OPENLLMETRY_TOOL_CALL_KEYS)
        content = fields.get(semconv.OPENLLMETRY_CONTENT)
        if content is None and output:
            content = fields.get(semconv.OPENLLMETRY_REFUSAL)
        reason = str(fields.get(semconv.OPENLLMETRY_FINISH_REASON) or "") if output else None
        role = fields.get(semconv.OPENLLMETRY_ROLE) or ("assistant" if output else "user")
        call_id = fields.get(semconv.OPENLLMETRY_TOOL_CALL_ID)
        out.extend(chat_message(role, content, calls, call_id, finish_reason=reason, json_lists=True))
    return out


def _model(attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    out = dict(attrs)
    groups = indexed(attrs, (PROMPT, COMPLETION))
    if groups[PROMPT] and semconv.INPUT_MESSAGES not in attrs:
        out[semconv.INPUT_MESSAGES] = dumps(_messages(groups[PROMPT], output=False))
    if groups[COMPLETION] and semconv.OUTPUT_MESSAGES not in attrs:
        out[semconv.OUTPUT_MESSAGES] = dumps(_messages(groups[COMPLETION], output=True))
        reason_key = semconv.OPENLLMETRY_FINISH_REASON
        reasons = [f[reason_key] for f in in_order(groups[COMPLETION]) if f.get(reason_key)]
        if reasons and semconv.RESPONSE_FINISH_REASONS not in attrs:
            out[semconv.RESPONSE_FINISH_REASONS] = reasons
    for old, new in USAGE_ALIASES.items():
        if old in attrs and new not in attrs:
            out[new] = attrs[old]
    system = attrs.get(semconv.SYSTEM_LEGACY)
    if isinstance(system, str) and semconv.PROVIDER_NAME not in attrs:
        out[semconv.PROVIDER_NAME] = system.lower()
    out.setdefault(semconv.OPERATION_NAME, semconv.OP_CHAT)
    return semconv.span_name(semconv.OP_CHAT, _model_name(attrs)), out


def _named(attrs: Mapping[str, Any], operation: str) -> dict[str, Any]:
    """The span's attributes with the operation and the contract's names for its provider and tokens."""
    out = dict(attrs)
    for old, new in USAGE_ALIASES.items():
        if old in attrs and new not in attrs:
            out[new] = attrs[old]
    system = attrs.get(semconv.SYSTEM_LEGACY)
    if isinstance(system, str) and semconv.PROVIDER_NAME not in attrs:
        out[semconv.PROVIDER_NAME] = system.lower()
    out[semconv.OPERATION_NAME] = operation
    return out


def _embeddings(attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    out = _named(attrs, semconv.OP_EMBEDDINGS)
    prompts = indexed(attrs, (PROMPT,))[PROMPT]
    if prompts:
        out.setdefault(semconv.SPANFOLD_EMBEDDINGS_INPUT_COUNT, len(prompts))
    return semconv.span_name(semconv.OP_EMBEDDINGS, _model_name(attrs)), out


#: A rerank result as OpenLLMetry writes it: ``Doc {index}, Score: {score}``, then a line of the document's text.
_RERANKED: Final = re.compile(r"Doc (\d+), Score: ([^\n]+)(?:\n(.*))?", re.DOTALL)


def _rerank(attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    out = _named(attrs, semconv.OP_RERANK)
    groups = indexed(attrs, (PROMPT, COMPLETION))
    prompts = in_order(groups[PROMPT])
    texts = [p.get(semconv.OPENLLMETRY_CONTENT) for p in prompts if p.get(semconv.OPENLLMETRY_ROLE) == "system"]
    query = [p.get(semconv.OPENLLMETRY_CONTENT) for p in prompts if p.get(semconv.OPENLLMETRY_ROLE) == "user"]
    if query and isinstance(query[-1], str):
        out.setdefault(semconv.RETRIEVAL_QUERY_TEXT, query[-1])
    docs: list[dict[str, Any]] = []
    for result in in_order(groups[COMPLETION]):
        match = _RERANKED.match(str(result.get(semconv.OPENLLMETRY_CONTENT) or ""))
        if match is None:
            continue
        index = int(match[1])
        doc: dict[str, Any] = {"id": str(index), "score": _float(match[2])}
        text = match[3] if match[3] is not None else texts[index] if index < len(texts) else None
        if isinstance(text, str):
            doc["content"] = text
        docs.append(doc)
    if docs:
        out.setdefault(semconv.RETRIEVAL_DOCUMENTS, docs)
    return semconv.span_name(semconv.OP_RERANK, _model_name(attrs)), out


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _model_name(attrs: Mapping[str, Any]) -> str | None:
    model = attrs.get(semconv.REQUEST_MODEL) or attrs.get(semconv.RESPONSE_MODEL)
    return str(model) if model is not None else None


def _tool_arguments(raw: Any) -> str | None:
    value = loads(raw)
    if not isinstance(value, dict):
        return raw if isinstance(raw, str) else None
    args, kwargs = value.get("args") or [], value.get("kwargs") or {}
    if not args and isinstance(kwargs, dict):
        return dumps(kwargs)
    return dumps({"args": args, "kwargs": kwargs})


def _tool_result(raw: Any) -> str | None:
    value = loads(raw)
    if isinstance(value, str):
        return value
    return raw if isinstance(raw, str) else None


def _entity(kind: str, attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    op = ENTITY_OPERATIONS.get(kind)
    if op is None:
        return None
    out = dict(attrs)
    entity = attrs.get(ENTITY_NAME)
    out[semconv.OPERATION_NAME] = op
    if op == semconv.OP_EXECUTE_TOOL:
        out.setdefault(semconv.TOOL_NAME, entity)
        if ENTITY_INPUT in attrs and semconv.TOOL_CALL_ARGUMENTS not in attrs:
            out[semconv.TOOL_CALL_ARGUMENTS] = _tool_arguments(attrs[ENTITY_INPUT])
        if ENTITY_OUTPUT in attrs and semconv.TOOL_CALL_RESULT not in attrs:
            out[semconv.TOOL_CALL_RESULT] = _tool_result(attrs[ENTITY_OUTPUT])
        target = out.get(semconv.TOOL_NAME)
    else:
        out.setdefault(semconv.AGENT_NAME, entity)
        target = out.get(semconv.AGENT_NAME)
    return semconv.span_name(op, str(target) if target is not None else None), out


def rewrite(record: SpanRecord) -> tuple[str, dict[str, Any]] | None:
    """An OpenLLMetry / traceloop span in the contract's name and attributes; None for any other span."""
    attrs = record.attributes
    kind = attrs.get(SPAN_KIND)
    if isinstance(kind, str):
        return _entity(kind, attrs)
    request = attrs.get(REQUEST_TYPE)
    if request is None or semconv.OPERATION_NAME in attrs:
        return None
    if request in MODEL_REQUESTS:
        return _model(attrs)
    aside = ASIDE_REQUESTS.get(request) if isinstance(request, str) else None
    return aside(attrs) if aside is not None else None


#: ``llm.request.type`` values that are steps beside the conversation -> their rewrite.
ASIDE_REQUESTS: Final = {
    semconv.OPENLLMETRY_REQUEST_EMBEDDING: _embeddings,
    semconv.OPENLLMETRY_REQUEST_RERANK: _rerank,
}


# --- vector stores ---------------------------------------------------------------------------------------------


#: ``db.system`` values (lower-cased) of the vector stores OpenLLMetry instruments.
VECTOR_STORES: Final = frozenset({"chroma", "pinecone", "qdrant", "milvus", "lancedb", "weaviate", "marqo"})
#: The methods that search: the ones that are retrieval steps.
SEARCHES: Final = frozenset(
    {
        "query",
        "search",
        "search_groups",
        "search_batch",
        "hybrid_search",
        "discover",
        "discover_batch",
        "recommend",
        "recommend_groups",
        "recommend_batch",
    }
)


def _document(event: SpanEvent, keys: tuple[str, str, str, str]) -> dict[str, Any]:
    id_key, score_key, distance_key, text_key = keys
    attrs = event.attributes
    score = attrs.get(score_key)
    doc: dict[str, Any] = {"id": attrs.get(id_key), "score": attrs.get(distance_key) if score is None else score}
    text = attrs.get(text_key)
    if isinstance(text, str):
        doc["content"] = text
    return doc


def documents(record: SpanRecord) -> list[dict[str, Any]]:
    """The span's result events as the contract's documents, in their order."""
    out: list[dict[str, Any]] = []
    for event in record.events:
        keys = semconv.VECTOR_DB_RESULT_EVENTS.get(event.name)
        if keys is not None:
            out.append(_document(event, keys))
    return out


def _top_k(attrs: Mapping[str, Any]) -> Any:
    for key in semconv.VECTOR_DB_TOP_K:
        if attrs.get(key) is not None:
            return attrs[key]
    return None


def vector_store(record: SpanRecord) -> tuple[str, dict[str, Any]] | None:
    """A vector-store search span in the contract's name and attributes; None for any other span."""
    attrs = record.attributes
    system = attrs.get(semconv.VECTOR_DB_SYSTEM)
    if not isinstance(system, str) or system.lower() not in VECTOR_STORES or semconv.OPERATION_NAME in attrs:
        return None
    method = attrs.get(semconv.VECTOR_DB_OPERATION) or record.name.rpartition(".")[2]
    if method not in SEARCHES:
        return None
    out = dict(attrs)
    out[semconv.OPERATION_NAME] = semconv.OP_RETRIEVAL
    out.setdefault(semconv.DATA_SOURCE_ID, system)
    top_k = _top_k(attrs)
    if top_k is not None:
        out.setdefault(semconv.RETRIEVAL_TOP_K, top_k)
    found = documents(record)
    if found:
        out.setdefault(semconv.RETRIEVAL_DOCUMENTS, found)
    return semconv.span_name(semconv.OP_RETRIEVAL, system), out

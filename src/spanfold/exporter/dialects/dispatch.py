"""Any producer's span -> a step the fold understands.

Two small tables:

* :data:`REWRITERS`: a foreign producer's span rewritten into the contract's span name and attributes
  (:mod:`spanfold.semconv`). The anthropic SDK's native spans are the first; OpenLLMetry (``gen_ai.prompt.N.*``) and
  OpenInference (``llm.input_messages.N.*``) adapters slot in the same way (:func:`register_rewriter`).
* :data:`OPERATIONS`: ``gen_ai.operation.name`` (or the span name's first word) -> the builder of the step
  (:mod:`spanfold.exporter.steps`): a model step, a tool step or an agent span (grouping only).

:func:`steps_of` reads a trace's spans: the first stage after the span records, and the only one that reads an
attribute. Each content attribute is parsed once (``json.loads``). A bad attribute (invalid JSON, wrong type) is a
counted fault (``fold.json`` / ``fold.type``); the span still makes the best step it can. Never imports
:mod:`spanfold.instrumentation`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeAlias

from spanfold import counters, semconv
from spanfold.codecs import jsonio
from spanfold.codecs.json_prefix import ArrayPrefixCache
from spanfold.exporter.dialects import adk as dialect_adk
from spanfold.exporter.dialects import anthropic_native
from spanfold.exporter.dialects import genai_events as dialect_genai_events
from spanfold.exporter.dialects import langsmith as dialect_langsmith
from spanfold.exporter.dialects import microsoft as dialect_microsoft
from spanfold.exporter.dialects import openinference as dialect_openinference
from spanfold.exporter.dialects import openllmetry as dialect_openllmetry
from spanfold.exporter.dialects import pydantic_ai as dialect_pydantic_ai
from spanfold.exporter.dialects import strands as dialect_strands
from spanfold.exporter.dialects import vercel_ai as dialect_vercel_ai
from spanfold.exporter.records import SpanRecord
from spanfold.exporter.steps import AgentSpan, AsideStep, ModelStep, SemconvMessage, Step, Steps, ToolStep
from spanfold.text import clip
from spanfold.trace.model import StepCost, Usage, finite_number, parse_arguments

#: The previous response of a chain whose history is on the server (the fold and the stitcher join by it).
PREVIOUS_RESPONSE_ATTRIBUTES: Final = semconv.PREVIOUS_RESPONSE_ATTRIBUTES


Rewriter: TypeAlias = Callable[[SpanRecord], "tuple[str, Mapping[str, Any]] | None"]
Builder: TypeAlias = Callable[[SpanRecord, str, Mapping[str, Any]], "Step | None"]


# --- attribute readers (faults counted, never raised) ----------------------------------------------------


def _bad(kind: str, key: str) -> None:
    counters.fault(f"fold.{kind}", detail=f"span attribute {key}")


def parse_json(attrs: Mapping[str, Any], key: str, expect: type, loads: Callable[[str], Any] = jsonio.loads) -> Any:
    """The attribute as JSON of type ``expect`` (parsed once; structured values taken as they are), else None."""
    raw = attrs.get(key)
    if raw is None:
        return None
    if isinstance(raw, str):
        try:
            value = loads(raw)
        except ValueError:
            _bad("json", key)
            return None
    else:
        value = list(raw) if isinstance(raw, tuple) else raw
    if not isinstance(value, expect):
        _bad("type", key)
        return None
    return value


def _str(attrs: Mapping[str, Any], key: str) -> str | None:
    value = attrs.get(key)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    _bad("type", key)
    return None


def _int(attrs: Mapping[str, Any], key: str) -> int | None:
    value = attrs.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    _bad("type", key)
    return None


def _parts(value: Any, key: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        _bad("type", key)
        return []
    parts = [p for p in value if isinstance(p, dict)]
    if len(parts) != len(value):
        _bad("type", key)
    return parts


def _generic(part: dict[str, Any]) -> dict[str, Any]:
    """A generic part (``{"type": "generic", "generic_type": kind, ...}``) as the part of that kind older producers
    wrote (``{"type": kind, ...}``): the fold reads both alike."""
    out = {k: v for k, v in part.items() if k != semconv.GENERIC_TYPE}
    kind = part.get(semconv.GENERIC_TYPE)
    out["type"] = kind if isinstance(kind, str) and kind else semconv.PART_GENERIC
    return out


def _message(msg: Any, key: str) -> SemconvMessage | None:
    """One item of a ``gen_ai.*.messages`` attribute as ``{"role": str, "parts": [dict], ...}``; None when bad."""
    if not isinstance(msg, dict) or not isinstance(msg.get("role", "user"), str):
        _bad("type", key)
        return None
    parts = msg.get("parts")
    if parts is None:
        return {**msg, "parts": []}
    whole, generic = isinstance(parts, list), False
    if whole:
        for p in parts:  # one pass, no generators: every part of every message read goes through here
            if not isinstance(p, dict):
                whole = False
                break
            if p.get("type") == semconv.PART_GENERIC:
                generic = True
    if not whole:
        parts = _parts(parts, key)
        msg = {**msg, "parts": parts}
        generic = any(p.get("type") == semconv.PART_GENERIC for p in parts)
    if generic:
        msg = {**msg, "parts": [_generic(p) if p.get("type") == semconv.PART_GENERIC else p for p in parts]}
    message: SemconvMessage = msg
    return message


def messages(attrs: Mapping[str, Any], key: str) -> list[SemconvMessage]:
    """A ``gen_ai.*.messages`` attribute as a list of ``{"role": str, "parts": [dict], ...}`` (bad items dropped)."""
    value = parse_json(attrs, key, list)
    if not value:
        return []
    return [m for m in (_message(msg, key) for msg in value) if m is not None]


#: Input histories: a step's history text that extends an earlier step's is parsed by its new tail only, and its
#: messages checked once (a bad one is counted when first parsed). The messages are shared: never mutate them.
def _history_message(msg: Any) -> SemconvMessage | None:
    return _message(msg, semconv.INPUT_MESSAGES)


HISTORIES = ArrayPrefixCache(_history_message)


def input_messages(attrs: Mapping[str, Any]) -> list[SemconvMessage]:
    """:func:`messages` of ``gen_ai.input.messages``, its JSON text parsed through :data:`HISTORIES`."""
    raw = attrs.get(semconv.INPUT_MESSAGES)
    if not isinstance(raw, str):
        return messages(attrs, semconv.INPUT_MESSAGES)
    return parse_json(attrs, semconv.INPUT_MESSAGES, list, HISTORIES.loads) or []


def error_of(record: SpanRecord, attrs: Mapping[str, Any]) -> dict[str, Any] | None:
    """``{"type", "message"}`` of a failed span (status ERROR), from ``error.type`` and the exception event (else the
    status description, without the ``Type: `` the OTel SDK puts before the exception's text: an exception with no
    text, ``KeyboardInterrupt``, has no message)."""
    if record.status_code != "ERROR":
        return None
    exc: Mapping[str, Any] = next((e.attributes for e in record.events if e.name == semconv.EXCEPTION_EVENT), {})
    kind = str(attrs.get(semconv.ERROR_TYPE) or exc.get(semconv.EXCEPTION_TYPE) or "error")
    message = exc.get(semconv.EXCEPTION_MESSAGE) or _described(record.status_description, kind)
    return {"type": kind, "message": str(message) if message else None}


def _described(description: str | None, kind: str) -> str | None:
    """A status description without its leading ``Type: `` (the error's type, or its last dotted part)."""
    if not description:
        return None
    for prefix in (f"{kind}:", f"{kind.rpartition('.')[2]}:"):
        if description.startswith(prefix):
            return description[len(prefix) :].strip() or None
    return description


def _target(name: str) -> str | None:
    """The span name's target (``chat gpt-4o`` -> ``gpt-4o``)."""
    _, _, target = name.partition(" ")
    return target or None


# --- builders ----------------------------------------------------------------------------------------------


def usage_of(attrs: Mapping[str, Any]) -> Usage | None:
    """A model step's tokens (None: the span reports none): input and output, and of them the cache reads and writes
    and the reasoning tokens (a cache write under its older name too)."""
    tokens_in, tokens_out = _int(attrs, semconv.USAGE_INPUT_TOKENS), _int(attrs, semconv.USAGE_OUTPUT_TOKENS)
    if tokens_in is None and tokens_out is None:
        return None
    cache_write = _int(attrs, semconv.USAGE_CACHE_WRITE_INPUT_TOKENS)
    if cache_write is None:
        cache_write = _int(attrs, semconv.USAGE_CACHE_CREATION_INPUT_TOKENS)
    cache_read = _int(attrs, semconv.USAGE_CACHE_READ_INPUT_TOKENS)
    reasoning = _int(attrs, semconv.USAGE_REASONING_OUTPUT_TOKENS)
    return Usage(tokens_in or 0, tokens_out or 0, cache_read or 0, cache_write or 0, reasoning or 0)


def cost_of(attrs: Mapping[str, Any]) -> StepCost | None:
    """What the span says the call cost (``gen_ai.usage.cost.*``, LiteLLM's ``response_cost`` or a gateway's), when
    it gives an amount and its currency."""
    amount = attrs.get(semconv.USAGE_COST_AMOUNT)
    if amount is None:
        return None
    currency = attrs.get(semconv.USAGE_COST_CURRENCY)
    number = finite_number(amount)
    if number is None or number < 0 or not isinstance(currency, str) or not currency:
        _bad("type", semconv.USAGE_COST_AMOUNT)
        return None
    return StepCost(number, currency, _str(attrs, semconv.USAGE_COST_SOURCE), priced_by="reported")


def model_step(record: SpanRecord, name: str, attrs: Mapping[str, Any]) -> ModelStep:
    reasons = attrs.get(semconv.RESPONSE_FINISH_REASONS)
    system = parse_json(attrs, semconv.SYSTEM_INSTRUCTIONS, list)
    previous = None
    for k in PREVIOUS_RESPONSE_ATTRIBUTES:
        if k in attrs and (previous := _str(attrs, k)) is not None:
            break
    return ModelStep(
        span_id=record.span_id,
        parent_id=record.parent_id,
        start_ns=record.start_ns,
        end_ns=record.end_ns,
        inputs=input_messages(attrs),
        outputs=messages(attrs, semconv.OUTPUT_MESSAGES),
        system_instructions=_parts(system, semconv.SYSTEM_INSTRUCTIONS) if system is not None else None,
        request_model=_str(attrs, semconv.REQUEST_MODEL),
        response_model=_str(attrs, semconv.RESPONSE_MODEL),
        response_id=_str(attrs, semconv.RESPONSE_ID),
        usage=usage_of(attrs),
        finish_reasons=[str(r) for r in reasons] if isinstance(reasons, (list, tuple)) else [],
        error=error_of(record, attrs),
        conversation_id=_str(attrs, semconv.CONVERSATION_ID),
        previous_response_id=previous,
        provider=_str(attrs, semconv.PROVIDER_NAME) or _str(attrs, semconv.SYSTEM_LEGACY),
        server_address=_str(attrs, semconv.SERVER_ADDRESS),
        server_port=_port(attrs.get(semconv.SERVER_PORT)),
        cost=cost_of(attrs),
    )


def _port(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 65536 else None


def _result_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(list(value) if isinstance(value, tuple) else value, ensure_ascii=False, separators=(",", ":"))


def tool_step(record: SpanRecord, name: str, attrs: Mapping[str, Any]) -> ToolStep:
    raw_args = attrs.get(semconv.TOOL_CALL_ARGUMENTS)
    if raw_args is not None and not isinstance(raw_args, str):
        raw_args = _result_text(raw_args)
    return ToolStep(
        span_id=record.span_id,
        parent_id=record.parent_id,
        start_ns=record.start_ns,
        end_ns=record.end_ns,
        name=_str(attrs, semconv.TOOL_NAME) or _target(name),
        call_id=_str(attrs, semconv.TOOL_CALL_ID),
        arguments=parse_arguments(raw_args),
        result=_result_text(attrs.get(semconv.TOOL_CALL_RESULT)),
        error=error_of(record, attrs),
        conversation_id=_str(attrs, semconv.CONVERSATION_ID),
    )


def _agent_of_a_turn(attrs: Mapping[str, Any]) -> bool:
    """An agent of an OpenAI Agents SDK turn as spanfold writes it (nested in the turn, with the run's trace id): the
    turn's span is the run, one conversation through its handoffs, so the agent groups no thread of its own."""
    return (
        attrs.get(semconv.OPERATION_NAME) == semconv.OP_INVOKE_AGENT
        and attrs.get(semconv.INVOCATION_IS_NESTED) is True
        and semconv.OPENAI_AGENTS_TRACE_ID in attrs
    )


def agent_span(record: SpanRecord, name: str, attrs: Mapping[str, Any]) -> AgentSpan | None:
    """An invocation (``invoke_agent``, ``invoke_workflow``, ``handle_conversation_turn``): the thread of the steps
    under it; None for an agent of a turn (:func:`_agent_of_a_turn`)."""
    if _agent_of_a_turn(attrs):
        return None
    return AgentSpan(
        span_id=record.span_id,
        parent_id=record.parent_id,
        start_ns=record.start_ns,
        end_ns=record.end_ns,
        name=_str(attrs, semconv.AGENT_NAME) or _str(attrs, semconv.WORKFLOW_NAME) or _target(name),
        conversation_id=_str(attrs, semconv.CONVERSATION_ID),
        error=error_of(record, attrs),
    )


#: A retrieved document's text, as the metadata keeps it: cut to this many characters.
DOCUMENT_TEXT_CHARS: Final = 500


def _document(raw: Any) -> dict[str, Any] | None:
    """One retrieved document as the metadata lists it: ``{"id", "score", "text"?}`` (the text only when the span
    carries it: content capture on; cut)."""
    if not isinstance(raw, dict):
        return None
    out: dict[str, Any] = {"id": None if raw.get("id") is None else str(raw["id"])}
    out["score"] = finite_number(raw.get("score"))
    text = raw.get("content", raw.get("text"))
    if isinstance(text, str):
        out["text"] = clip(text, DOCUMENT_TEXT_CHARS)
    return out


def documents_of(attrs: Mapping[str, Any], key: str) -> list[dict[str, Any]] | None:
    value = parse_json(attrs, key, list)
    if value is None:
        return None
    return [d for d in (_document(raw) for raw in value) if d is not None]


#: The conventions' operation -> the kind of metadata step it is.
ASIDE_OPERATIONS: Final = {
    semconv.OP_EMBEDDINGS: "embeddings",
    semconv.OP_RETRIEVAL: "retrieval",
    semconv.OP_RERANK: "rerank",
    **{op: "memory" for op in semconv.MEMORY_OPERATIONS},
}


def _input_count(attrs: Mapping[str, Any], kind: str) -> int | None:
    """How many inputs an embeddings span sent when it says so only by listing them (OpenLLMetry's, 0.54 on: one
    ``gen_ai.input.messages`` message per input)."""
    if kind != "embeddings" or semconv.INPUT_MESSAGES not in attrs:
        return None
    inputs = parse_json(attrs, semconv.INPUT_MESSAGES, list)
    return len(inputs) if inputs else None


def aside_step(record: SpanRecord, name: str, attrs: Mapping[str, Any]) -> AsideStep:
    """An embeddings call, a retrieval, a rerank or a memory operation (by ``gen_ai.operation.name``)."""
    op = str(attrs.get(semconv.OPERATION_NAME) or name.partition(" ")[0])
    kind = ASIDE_OPERATIONS.get(op, "retrieval")
    if kind == "retrieval" and attrs.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.OPENINFERENCE_KIND_RERANKER:
        kind = "rerank"  # spanfold's own rerank spans: the conventions' retrieval, Phoenix's reranker
    memory = kind == "memory"
    return AsideStep(
        span_id=record.span_id,
        parent_id=record.parent_id,
        start_ns=record.start_ns,
        end_ns=record.end_ns,
        kind=kind,
        operation=op if memory else None,
        request_model=_str(attrs, semconv.REQUEST_MODEL),
        response_model=_str(attrs, semconv.RESPONSE_MODEL),
        provider=_str(attrs, semconv.PROVIDER_NAME) or _str(attrs, semconv.SYSTEM_LEGACY),
        server_address=_str(attrs, semconv.SERVER_ADDRESS),
        server_port=_port(attrs.get(semconv.SERVER_PORT)),
        usage=usage_of(attrs),
        cost=cost_of(attrs),
        inputs=_int(attrs, semconv.SPANFOLD_EMBEDDINGS_INPUT_COUNT) or _input_count(attrs, kind),
        dimensions=_int(attrs, semconv.EMBEDDINGS_DIMENSION_COUNT),
        store=_str(attrs, semconv.MEMORY_STORE_ID if memory else semconv.DATA_SOURCE_ID),
        top_k=_int(attrs, semconv.RETRIEVAL_TOP_K),
        query=_str(attrs, semconv.MEMORY_QUERY_TEXT if memory else semconv.RETRIEVAL_QUERY_TEXT),
        documents=documents_of(attrs, semconv.MEMORY_RECORDS if memory else semconv.RETRIEVAL_DOCUMENTS),
        error=error_of(record, attrs),
    )


#: ``gen_ai.operation.name`` -> step builder (the span name's first word is read when the attribute is missing).
OPERATIONS: dict[str, Builder] = {
    semconv.OP_CHAT: model_step,
    semconv.OP_TEXT_COMPLETION: model_step,
    semconv.OP_GENERATE_CONTENT: model_step,
    semconv.OP_EXECUTE_TOOL: tool_step,
    semconv.OP_INVOKE_AGENT: agent_span,
    semconv.OP_INVOKE_WORKFLOW: agent_span,
    semconv.OP_HANDLE_CONVERSATION_TURN: agent_span,
    **dict.fromkeys(ASIDE_OPERATIONS, aside_step),
}
#: Operations read from ``gen_ai.operation.name`` only, never from a span name's first word (``retrieval`` ...: words
#: an application's own spans may start with).
BY_ATTRIBUTE_ONLY: Final = frozenset(ASIDE_OPERATIONS)


# --- foreign producers -------------------------------------------------------------------------------------


def _anthropic_native(record: SpanRecord) -> tuple[str, Mapping[str, Any]] | None:
    if not anthropic_native.is_native(record.scope_name, record.name):
        return None
    return anthropic_native.normalize(record.name, record.attributes)


#: Rewriters tried in order; the first that recognises a span rewrites it.
REWRITERS: list[Rewriter] = [
    dialect_genai_events.rewrite,  # spans whose message log events were buffered (by span id)
    _anthropic_native,
    dialect_openinference.rewrite,  # openinference.span.kind
    dialect_openllmetry.rewrite,  # traceloop.span.kind, llm.request.type
    dialect_openllmetry.vector_store,  # db.system naming a vector store
    # frameworks' own spans (docs/frameworks.md "Framework spans (dialects)")
    dialect_pydantic_ai.rewrite,  # scope pydantic-ai
    dialect_strands.rewrite,  # scope strands.telemetry.tracer
    dialect_adk.rewrite,  # scope gcp.vertex.agent
    dialect_microsoft.autogen,  # scope autogen-core
    dialect_microsoft.agent_framework,  # scope agent_framework
    dialect_vercel_ai.rewrite,  # ai.operationId
    dialect_langsmith.rewrite,  # langsmith.span.kind
]


#: The rewriters that apply to spanfold's own spans too.
_BY_SPAN_ID: Final[tuple[Rewriter, ...]] = (dialect_genai_events.rewrite,)


def register_rewriter(rewriter: Rewriter) -> None:
    """Add a producer's adapter (tried after the ones already registered)."""
    if rewriter not in REWRITERS:
        REWRITERS.append(rewriter)


def operation(name: str, attrs: Mapping[str, Any]) -> str | None:
    op = attrs.get(semconv.OPERATION_NAME)
    if isinstance(op, str) and op in OPERATIONS:
        return op
    first = name.partition(" ")[0]
    return first if first in OPERATIONS and first not in BY_ATTRIBUTE_ONLY else None


#: The instrumentation scopes of spanfold's own spans: ``spanfold`` (tool and agent spans) and ``spanfold.*``.
OWN_SCOPE: Final = "spanfold"
OWN_SCOPE_PREFIX: Final = "spanfold."


def _own(scope: str | None) -> bool:
    """Whether spanfold's own instrumentation made the span (the contract's attributes already: nothing to rewrite)."""
    return scope is not None and (scope == OWN_SCOPE or scope.startswith(OWN_SCOPE_PREFIX))


def to_step(record: SpanRecord) -> Step | None:
    """The step a span stands for, or None for spans the fold does not read (HTTP, DB, user spans ...)."""
    if type(record.attributes) is not dict:  # the SDK's mapping: each read of a missing key raises inside
        record.attributes = dict(record.attributes)
    name: str = record.name
    attrs: Mapping[str, Any] = record.attributes
    # spanfold's own spans skip the foreign producers' rewriters, all but the one keyed by span id (log events another
    # instrumentation may have emitted in the span's context)
    rewriters = REWRITERS if not _own(record.scope_name) else _BY_SPAN_ID
    for rewrite in rewriters:
        rewritten = rewrite(record)
        if rewritten is not None:
            name, attrs = rewritten
            break
    op = operation(name, attrs)
    if op is None:
        return None
    return OPERATIONS[op](record, name, attrs)


def safe_step(record: SpanRecord) -> Step | None:
    """:func:`to_step`, with any fault in a span counted (``fold.span``) and the span left out."""
    try:
        return to_step(record)
    except Exception as exc:
        counters.fault("fold.span", exc)
        return None


def steps_of(records: Iterable[SpanRecord], known: Mapping[int, Step | None] | None = None) -> Steps:
    """Each span's step by span id (:func:`safe_step`, in the records' order: a history parse continues the one
    before it); ``known``: steps already read, taken as they are. A span id given twice keeps the last step read for
    it. Then what the trace's spans say together (:func:`~spanfold.exporter.dialects.adk.unwrap_sent_outputs`: the
    model calls made under ADK's spans), for the steps read here."""
    spans = records if isinstance(records, (list, tuple)) else list(records)
    steps: Steps = {}
    read: list[int] = []
    for r in spans:
        if known is not None and r.span_id in known:
            step = known[r.span_id]
        else:
            step = safe_step(r)
            read.append(r.span_id)
        if step is not None or r.span_id not in steps:
            steps[r.span_id] = step
    try:  # what a trace as a whole says about its spans: ADK's spans above another producer's model calls
        dialect_adk.unwrap_sent_outputs(spans, steps, read)
    except Exception as exc:
        counters.fault("fold.span", exc)
    return steps

"""Every span attribute name either half of spanfold writes or reads: GenAI semantic conventions, and vendor names.

spanfold follows the OpenTelemetry GenAI semantic conventions of open-telemetry/semantic-conventions-genai at the
commit :mod:`.registry` pins (``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``); :mod:`.written` lists
every name spanfold writes and the registry entry it follows. Nothing here imports OpenTelemetry.

Message JSON (``gen_ai.input.messages`` / ``gen_ai.output.messages``)::

    [{"role": "user", "parts": [{"type": "text", "content": "hi"}]},
     {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "f", "arguments": {"x": 1}}]},
     {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "42"}]}]

Finish reasons are the span's (``gen_ai.response.finish_reasons``, the provider's), and each output message's
``finish_reason`` (the conventions' value; deprecated there, written for the consumers that still require it: Arize
Phoenix). ``gen_ai.system_instructions`` is a list of parts.
Part types: ``text{content}``, ``tool_call{id, name, arguments}``, ``tool_call_response{id, response}``,
``reasoning{content}``, ``blob{modality, mime_type, content}``, ``uri{modality, mime_type?, uri}``,
``file{modality, file_id}``, and ``generic{generic_type}`` for a kind with no type of its own (older producers wrote
``{"type": kind}``; the dialects read both alike). Unknown parts are kept as they come.
"""

from __future__ import annotations

from typing import Final

# --- span names and operations -------------------------------------------------------------------------
OP_CHAT: Final = "chat"
OP_EXECUTE_TOOL: Final = "execute_tool"
#: An in-process invocation (span ``{operation} {workflow or agent name}``): ``invoke_agent`` when a model drives the
#: control flow through tool calls, ``invoke_workflow`` when the application does (a LangGraph ``StateGraph``),
#: ``handle_conversation_turn`` for a framework runner's one turn in which agents may hand off to each other (an
#: OpenAI Agents SDK ``Runner.run``).
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_INVOKE_WORKFLOW: Final = "invoke_workflow"
OP_HANDLE_CONVERSATION_TURN: Final = "handle_conversation_turn"
INVOCATION_OPERATIONS: Final = frozenset({OP_INVOKE_AGENT, OP_INVOKE_WORKFLOW, OP_HANDLE_CONVERSATION_TURN})

# --- common attributes ---------------------------------------------------------------------------------
OPERATION_NAME: Final = "gen_ai.operation.name"
PROVIDER_NAME: Final = "gen_ai.provider.name"
SYSTEM_LEGACY: Final = "gen_ai.system"  # older conventions; read, never written
CONVERSATION_ID: Final = "gen_ai.conversation.id"
#: The end user a span acts for: the current name (written from ``spanfold.context(user_id=)``; OpenInference, Arize
#: Phoenix and Langfuse read it too) and the older convention's (read).
USER_ID: Final = "user.id"
ENDUSER_ID: Final = "enduser.id"
ERROR_TYPE: Final = "error.type"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"

# --- model step ----------------------------------------------------------------------------------------
REQUEST_MODEL: Final = "gen_ai.request.model"
REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
REQUEST_TOP_P: Final = "gen_ai.request.top_p"
REQUEST_SEED: Final = "gen_ai.request.seed"
REQUEST_CHOICE_COUNT: Final = "gen_ai.request.choice.count"
REQUEST_STOP_SEQUENCES: Final = "gen_ai.request.stop_sequences"
REQUEST_FREQUENCY_PENALTY: Final = "gen_ai.request.frequency_penalty"
REQUEST_PRESENCE_PENALTY: Final = "gen_ai.request.presence_penalty"
OUTPUT_TYPE: Final = "gen_ai.output.type"
RESPONSE_MODEL: Final = "gen_ai.response.model"
RESPONSE_ID: Final = "gen_ai.response.id"
RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
#: Input tokens written to a provider-managed cache.
USAGE_CACHE_WRITE_INPUT_TOKENS: Final = "gen_ai.usage.cache_write.input_tokens"
#: Its name before the conventions renamed it: read, never written.
USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
#: Per-modality counts, written only where the provider reports them (each included in its total).
USAGE_TEXT_INPUT_TOKENS: Final = "gen_ai.usage.text.input_tokens"
USAGE_IMAGE_INPUT_TOKENS: Final = "gen_ai.usage.image.input_tokens"
USAGE_AUDIO_INPUT_TOKENS: Final = "gen_ai.usage.audio.input_tokens"
USAGE_TEXT_OUTPUT_TOKENS: Final = "gen_ai.usage.text.output_tokens"
USAGE_IMAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.image.output_tokens"
USAGE_AUDIO_OUTPUT_TOKENS: Final = "gen_ai.usage.audio.output_tokens"
#: Older usage names -> the current ones (other producers still write them; the dialects read both).
USAGE_RENAMED: Final = {USAGE_CACHE_CREATION_INPUT_TOKENS: USAGE_CACHE_WRITE_INPUT_TOKENS}
SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"

# --- tool run ------------------------------------------------------------------------------------------
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"

# --- agent run -----------------------------------------------------------------------------------------
AGENT_NAME: Final = "gen_ai.agent.name"
AGENT_ID: Final = "gen_ai.agent.id"
#: The application's (low-cardinality) name of a workflow; never a type's name such as ``StateGraph``.
WORKFLOW_NAME: Final = "gen_ai.workflow.name"
#: False on the root invocation of a turn in the process, True on every invocation nested inside another.
INVOCATION_IS_NESTED: Final = "gen_ai.invocation.is_nested"

REQUEST_TOP_K: Final = "gen_ai.request.top_k"

# --- cost of a model step ------------------------------------------------------------------------------
# Not in the registry at the pinned commit: named as open-telemetry/semantic-conventions-genai pull request 443
# proposes them (open when written: "Add per-operation cost conventions (gen_ai.usage.cost.*)"), on inference spans.
#: What the call cost (a double), in :data:`USAGE_COST_CURRENCY`.
USAGE_COST_AMOUNT: Final = "gen_ai.usage.cost.amount"
#: The ISO 4217 code of the amount's currency (required with the amount; no default).
USAGE_COST_CURRENCY: Final = "gen_ai.usage.cost.currency"
#: Where the amount comes from: :data:`COST_SOURCE_PROVIDER` or :data:`COST_SOURCE_LOCAL`.
USAGE_COST_SOURCE: Final = "gen_ai.usage.cost.source"
#: The amount was in the response the client received (from the provider, or a gateway that priced the call).
COST_SOURCE_PROVIDER: Final = "provider"
#: The recorder computed the amount from the tokens and prices it holds (spanfold's pricing, LiteLLM's price map).
COST_SOURCE_LOCAL: Final = "local"

# --- providers (gen_ai.provider.name values) -------------------------------------------------------------
PROVIDER_OPENAI: Final = "openai"
PROVIDER_ANTHROPIC: Final = "anthropic"

# --- more providers (groq, mistral, ollama, cohere, litellm): gen_ai.provider.name values ----------------
PROVIDER_GROQ: Final = "groq"
PROVIDER_MISTRAL: Final = "mistral_ai"
PROVIDER_OLLAMA: Final = "ollama"  # not a well-known value of the conventions; the library's own name
PROVIDER_COHERE: Final = "cohere"
#: Ollama's ``generate`` (a prompt, not a conversation).
OP_TEXT_COMPLETION: Final = "text_completion"

# --- vendor attributes (written by spanfold's providers, read by the fold) -------------------------------
#: A Responses API call that continues a chain: the previous response (its history is on the server, not re-sent).
OPENAI_PREVIOUS_RESPONSE_ID: Final = "openai.request.previous_response_id"
#: A message-threads (beta) turn that continues a thread: the id of the message it follows (history on the server).
ANTHROPIC_PREVIOUS_MESSAGE_ID: Final = "anthropic.request.previous_message_id"
#: The Anthropic request id (the ``request-id`` response header), as the SDK's own spans name it.
ANTHROPIC_REQUEST_ID: Final = "anthropic.request.id"
#: The conventions' name for the previous response a request continues (other producers write it; read).
REQUEST_PREVIOUS_RESPONSE_ID: Final = "gen_ai.request.previous_response.id"
#: The attributes that name the previous turn of a chain whose history lives on the server (the fold joins by them).
PREVIOUS_RESPONSE_ATTRIBUTES: Final = (
    OPENAI_PREVIOUS_RESPONSE_ID,
    REQUEST_PREVIOUS_RESPONSE_ID,
    ANTHROPIC_PREVIOUS_MESSAGE_ID,
)
#: True on an un-parented model call or tool run whose zero-code run the source decided (stitching on): its trace id
#: says which run it belongs to, and the fold decides nothing more for it (:mod:`spanfold.stitching`).
SPANFOLD_STITCHED: Final = "spanfold.stitched"
#: On the spans of a run under an external parent (a caller's ``TRACEPARENT``, whose trace id every run of the
#: process shares): the run's id, the hex span id of its first span. The fold keys flat traces by it.
SPANFOLD_RUN_ID: Final = "spanfold.run.id"
#: On a span spanfold ended itself because the process was stopping while it ran (``SIGTERM``, ``SIGHUP``, ``exit``):
#: what stopped it. Its run is written ``incomplete``, with ``ended_by`` in its metadata.
SPANFOLD_ENDED_BY: Final = "spanfold.ended_by"

# --- a run's context (spanfold.context): who it is for, its session, tags, metadata and prompt ------------
#: The named prompt template a model call used, and its version (the conventions' names).
PROMPT_NAME: Final = "gen_ai.prompt.name"
PROMPT_VERSION: Final = "gen_ai.prompt.version"
#: OpenInference's (``using_tags`` / ``using_metadata``; read by Arize Phoenix): the tags as a list of strings, the
#: metadata as the JSON text of an object. (Its session and user: ``session.id``, ``user.id``.)
OPENINFERENCE_TAGS: Final = "tag.tags"
OPENINFERENCE_METADATA: Final = "metadata"
#: Langfuse's trace-level names (its SDK's ``propagate_attributes`` writes ``user.id``, ``session.id``, these tags and
#: one ``langfuse.trace.metadata.<key>`` per metadata key; the JSON text of an object under the bare name is read
#: too). The user and session under Langfuse's older names, and its prompt link, are read, never written.
LANGFUSE_TRACE_TAGS: Final = "langfuse.trace.tags"
LANGFUSE_TRACE_METADATA: Final = "langfuse.trace.metadata"
LANGFUSE_TRACE_METADATA_PREFIX: Final = "langfuse.trace.metadata."
LANGFUSE_USER_ID: Final = "langfuse.user.id"
LANGFUSE_SESSION_ID: Final = "langfuse.session.id"
LANGFUSE_PROMPT_NAME: Final = "langfuse.observation.prompt.name"
LANGFUSE_PROMPT_VERSION: Final = "langfuse.observation.prompt.version"

# --- Google Gemini (google-genai): provider names and usage ----------------------------------------------
#: gen_ai.provider.name of the Gemini Developer API (AI Studio keys) and of Vertex AI, as the conventions name them.
PROVIDER_GCP_GEMINI: Final = "gcp.gemini"
PROVIDER_GCP_VERTEX_AI: Final = "gcp.vertex_ai"
#: Output tokens spent on reasoning (Gemini ``thoughts_token_count``); included in ``gen_ai.usage.output_tokens``.
USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"

# --- part types ----------------------------------------------------------------------------------------
PART_TEXT: Final = "text"
PART_TOOL_CALL: Final = "tool_call"
PART_TOOL_CALL_RESPONSE: Final = "tool_call_response"
PART_REASONING: Final = "reasoning"
PART_BLOB: Final = "blob"
PART_URI: Final = "uri"
PART_FILE: Final = "file"
#: A part of a kind the conventions name no type for: ``{"type": "generic", "generic_type": <its kind>}``.
PART_GENERIC: Final = "generic"
GENERIC_TYPE: Final = "generic_type"
#: The part types the conventions name (a part of any other kind is a generic part).
PART_TYPES: Final = frozenset(
    {
        PART_TEXT,
        PART_TOOL_CALL,
        PART_TOOL_CALL_RESPONSE,
        PART_REASONING,
        PART_BLOB,
        PART_URI,
        PART_FILE,
        "server_tool_call",
        "server_tool_call_response",
        "compaction",
        PART_GENERIC,
    }
)

#: Attributes that carry prompt, completion or tool content. With content capture off none is written.
CONTENT_ATTRIBUTES: Final = frozenset(
    {
        SYSTEM_INSTRUCTIONS,
        INPUT_MESSAGES,
        OUTPUT_MESSAGES,
        TOOL_CALL_ARGUMENTS,
        TOOL_CALL_RESULT,
        REQUEST_STOP_SEQUENCES,
    }
)


def span_name(operation: str, target: str | None) -> str:
    """``"{operation} {target}"`` as the conventions name GenAI spans, or the bare operation."""
    return f"{operation} {target}" if target else operation


# --- Amazon Bedrock ------------------------------------------------------------------------------------
#: ``gen_ai.provider.name`` of Bedrock Runtime calls (the conventions' well-known value).
PROVIDER_AWS_BEDROCK: Final = "aws.bedrock"
#: The AWS request id of a call (``ResponseMetadata.RequestId``), as the AWS conventions name it.
AWS_REQUEST_ID: Final = "aws.request_id"

# --- evaluation results (checks/evaluation.py): a log-record event on the run it evaluated ---------------------
EVALUATION_RESULT_EVENT: Final = "gen_ai.evaluation.result"
#: A model call's details event (instrumentation/toolkit/details_event.py): its content with capture mode
#: EVENT_ONLY or SPAN_AND_EVENT.
INFERENCE_DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"
EVALUATION_NAME: Final = "gen_ai.evaluation.name"
EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
#: Low cardinality: ``pass`` / ``fail``.
EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"

# --- embeddings, retrieval, rerank and memory: steps beside the conversation (metadata steps) ---------------
OP_EMBEDDINGS: Final = "embeddings"
OP_RETRIEVAL: Final = "retrieval"
OP_SEARCH_MEMORY: Final = "search_memory"
OP_CREATE_MEMORY: Final = "create_memory"
OP_UPDATE_MEMORY: Final = "update_memory"
OP_UPSERT_MEMORY: Final = "upsert_memory"
OP_DELETE_MEMORY: Final = "delete_memory"
#: The conventions' memory operations (``search_memory``, ``create_memory`` ...): the fold's ``memory`` steps.
MEMORY_OPERATIONS: Final = frozenset(
    {OP_SEARCH_MEMORY, OP_CREATE_MEMORY, OP_UPDATE_MEMORY, OP_UPSERT_MEMORY, OP_DELETE_MEMORY}
)
#: A rerank: no operation of the conventions at the pinned commit; the name the dialects give OpenInference's
#: ``RERANKER`` spans (read by the fold, never written).
OP_RERANK: Final = "rerank"
EMBEDDINGS_DIMENSION_COUNT: Final = "gen_ai.embeddings.dimension.count"
REQUEST_ENCODING_FORMATS: Final = "gen_ai.request.encoding_formats"
#: How many inputs an embeddings request sends (no name in the conventions).
SPANFOLD_EMBEDDINGS_INPUT_COUNT: Final = "spanfold.embeddings.input_count"
#: The store or index a retrieval searched (the retriever's class where it names none).
DATA_SOURCE_ID: Final = "gen_ai.data_source.id"
RETRIEVAL_QUERY_TEXT: Final = "gen_ai.retrieval.query.text"
RETRIEVAL_TOP_K: Final = "gen_ai.retrieval.top_k"
#: JSON ``[{"id", "score", "content"?}]``: ids and scores always, each document's text with content capture on.
RETRIEVAL_DOCUMENTS: Final = "gen_ai.retrieval.documents"
MEMORY_STORE_ID: Final = "gen_ai.memory.store.id"
#: The one memory record an operation applies to (an update's, a delete's).
MEMORY_RECORD_ID: Final = "gen_ai.memory.record.id"
MEMORY_QUERY_TEXT: Final = "gen_ai.memory.query.text"
MEMORY_RECORD_COUNT: Final = "gen_ai.memory.record.count"
MEMORY_RECORDS: Final = "gen_ai.memory.records"

# --- names the fold reads that spanfold does not write -----------------------------------------------------
#: Another model operation of the conventions (the fold reads it as a model step; OP_TEXT_COMPLETION is above).
OP_GENERATE_CONTENT: Final = "generate_content"
#: The span event a recorded exception makes, and its attributes.
EXCEPTION_EVENT: Final = "exception"
EXCEPTION_TYPE: Final = "exception.type"
EXCEPTION_MESSAGE: Final = "exception.message"
EXCEPTION_STACKTRACE: Final = "exception.stacktrace"
#: Resource attribute: the service a span came from (trace metadata).
SERVICE_NAME: Final = "service.name"
#: Resource attribute: which process of the service (opentelemetry-sdk sets a random one from 1.43 on; older releases
#: and many other SDKs leave it out): the receiver tells senders apart by it (exporter/pipeline/assembler.py
#: ``process_key``).
SERVICE_INSTANCE_ID: Final = "service.instance.id"

# =========================================================================================================
# Foreign producers: what other instrumentations write, read by the exporter's dialects (never written by
# spanfold). One section per dialect; each dialect module says how it maps them onto the contract above.
# =========================================================================================================

# --- the anthropic SDK's own spans (exporter/dialects/anthropic_native.py) ---------------------------------
#: The SDK's instrumentation scope; platform clients append their platform (``com.anthropic.sdk.python.bedrock``).
ANTHROPIC_NATIVE_SCOPE: Final = "com.anthropic.sdk.python"
ANTHROPIC_NATIVE_MODEL_SPAN: Final = "anthropic.messages.create"
ANTHROPIC_NATIVE_TOOL_RUNNER_SPAN: Final = "anthropic.messages.tool_runner"
ANTHROPIC_NATIVE_TOOL_SPAN_PREFIXES: Final = (
    "anthropic.custom_tool_use",
    "anthropic.tool_use",
    "anthropic.mcp_tool_use",
)
ANTHROPIC_NATIVE_STOP_REASON: Final = "anthropic.message.stop_reason"
#: The SDK's cache-write count: the conventions' current name (:data:`USAGE_CACHE_WRITE_INPUT_TOKENS`).
ANTHROPIC_NATIVE_CACHE_WRITE_INPUT_TOKENS: Final = USAGE_CACHE_WRITE_INPUT_TOKENS
ANTHROPIC_NATIVE_TOOL_RESULT_CONTENT: Final = "anthropic.tool_result.content"

# --- OpenLLMetry / traceloop (exporter/dialects/openllmetry.py) ---------------------------------------------
OPENLLMETRY_REQUEST_TYPE: Final = "llm.request.type"
OPENLLMETRY_SPAN_KIND: Final = "traceloop.span.kind"
OPENLLMETRY_ENTITY_NAME: Final = "traceloop.entity.name"
OPENLLMETRY_ENTITY_INPUT: Final = "traceloop.entity.input"
OPENLLMETRY_ENTITY_OUTPUT: Final = "traceloop.entity.output"
#: Indexed message attributes: ``gen_ai.prompt.{N}.{field}``, ``gen_ai.completion.{N}.{field}``.
OPENLLMETRY_PROMPT: Final = "gen_ai.prompt."
OPENLLMETRY_COMPLETION: Final = "gen_ai.completion."
#: A message's fields after ``{prefix}{N}.``; its tool calls under ``tool_calls.{M}.`` with (id, name, arguments).
OPENLLMETRY_ROLE: Final = "role"
OPENLLMETRY_CONTENT: Final = "content"
OPENLLMETRY_REFUSAL: Final = "refusal"
OPENLLMETRY_FINISH_REASON: Final = "finish_reason"
OPENLLMETRY_TOOL_CALL_ID: Final = "tool_call_id"
OPENLLMETRY_TOOL_CALLS: Final = "tool_calls."
OPENLLMETRY_TOOL_CALL_KEYS: Final = ("id", "name", "arguments")
#: Older usage names -> the contract's.
OPENLLMETRY_USAGE_ALIASES: Final = {
    "gen_ai.usage.prompt_tokens": USAGE_INPUT_TOKENS,
    "gen_ai.usage.completion_tokens": USAGE_OUTPUT_TOKENS,
    "gen_ai.usage.cache_read_input_tokens": USAGE_CACHE_READ_INPUT_TOKENS,
    "gen_ai.usage.cache_creation_input_tokens": USAGE_CACHE_WRITE_INPUT_TOKENS,
}

#: ``llm.request.type`` of OpenLLMetry's embeddings and rerank spans (before 0.54; later ones write the operation).
OPENLLMETRY_REQUEST_EMBEDDING: Final = "embedding"
OPENLLMETRY_REQUEST_RERANK: Final = "rerank"

# --- OpenLLMetry's vector-store spans (exporter/dialects/vector_stores.py) ------------------------------------
#: The store (``chroma``, ``pinecone``, ``Qdrant`` ...) and the method (Qdrant names none: its span name's last word).
VECTOR_DB_SYSTEM: Final = "db.system"
VECTOR_DB_OPERATION: Final = "db.operation"
#: How many results a search asked for, by the names the instrumentations write.
VECTOR_DB_TOP_K: Final = (
    "db.vector.query.top_k",
    "db.chroma.query.n_results",
    "pinecone.query.top_k",
    "db.milvus.search.limit",
)
#: One span event per result: its id, score or distance, and text (``document``; Milvus's ``entity``).
VECTOR_DB_RESULT_EVENTS: Final = {
    "db.query.result": (
        "db.query.result.id",
        "db.query.result.score",
        "db.query.result.distance",
        "db.query.result.document",
    ),
    "db.search.result": (
        "db.search.result.id",
        "db.search.result.score",
        "db.search.result.distance",
        "db.search.result.entity",
    ),
}

# --- OpenInference (exporter/dialects/openinference.py) -----------------------------------------------------
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
#: Indexed message attributes: ``llm.input_messages.{N}.message.{field}``, the same under ``llm.output_messages``.
OPENINFERENCE_INPUT_MESSAGES: Final = "llm.input_messages."
OPENINFERENCE_OUTPUT_MESSAGES: Final = "llm.output_messages."
OPENINFERENCE_MESSAGE: Final = "message."
#: A message's fields after ``message.``; content parts under ``contents.{K}.``; tool calls under ``tool_calls.{M}.``.
OPENINFERENCE_ROLE: Final = "role"
OPENINFERENCE_CONTENT: Final = "content"
OPENINFERENCE_TOOL_CALL_ID: Final = "tool_call_id"
OPENINFERENCE_CONTENTS: Final = "contents."
OPENINFERENCE_CONTENT_TYPE: Final = "message_content.type"
OPENINFERENCE_CONTENT_TEXT: Final = "message_content.text"
OPENINFERENCE_CONTENT_IMAGE_URL: Final = "message_content.image.image.url"
OPENINFERENCE_TOOL_CALLS: Final = "tool_calls."
OPENINFERENCE_TOOL_CALL_KEYS: Final = ("tool_call.id", "tool_call.function.name", "tool_call.function.arguments")
OPENINFERENCE_FINISH_REASON: Final = "llm.finish_reason"
#: A span's input and output as one value each, with their MIME types: what Arize Phoenix's trace list and Input /
#: Output columns show (Langfuse reads them too). spanfold writes them beside the GenAI attributes.
OPENINFERENCE_INPUT_VALUE: Final = "input.value"
OPENINFERENCE_OUTPUT_VALUE: Final = "output.value"
OPENINFERENCE_INPUT_MIME_TYPE: Final = "input.mime_type"
OPENINFERENCE_OUTPUT_MIME_TYPE: Final = "output.mime_type"
MIME_JSON: Final = "application/json"
MIME_TEXT: Final = "text/plain"
OPENINFERENCE_SESSION_ID: Final = "session.id"
OPENINFERENCE_TOOL_NAME: Final = "tool.name"
OPENINFERENCE_TOOL_CALL_ID_ATTRIBUTE: Final = "tool_call.id"
OPENINFERENCE_AGENT_NAME: Final = "agent.name"
#: What ``TraceConfig(hide_inputs=True)`` / ``hide_outputs`` leave in ``input.value`` / ``output.value``.
OPENINFERENCE_REDACTED: Final = "__REDACTED__"
#: OpenInference attribute -> the contract's (filled when the contract's is missing).
OPENINFERENCE_LLM_ATTRIBUTES: Final = {
    "llm.model_name": REQUEST_MODEL,
    "llm.provider": PROVIDER_NAME,
    "llm.system": PROVIDER_NAME,
    "llm.token_count.prompt": USAGE_INPUT_TOKENS,
    "llm.token_count.completion": USAGE_OUTPUT_TOKENS,
    "llm.token_count.prompt_details.cache_read": USAGE_CACHE_READ_INPUT_TOKENS,
    "llm.token_count.prompt_details.cache_write": USAGE_CACHE_WRITE_INPUT_TOKENS,
    OPENINFERENCE_SESSION_ID: CONVERSATION_ID,
}

#: RETRIEVER / EMBEDDING / RERANKER spans (``openinference.span.kind``): steps beside the conversation.
OPENINFERENCE_KIND_RETRIEVER: Final = "RETRIEVER"
OPENINFERENCE_KIND_EMBEDDING: Final = "EMBEDDING"
OPENINFERENCE_KIND_RERANKER: Final = "RERANKER"
#: Indexed documents: ``retrieval.documents.{N}.document.{id,score,content}``; a reranker's under
#: ``reranker.input_documents.{N}.`` / ``reranker.output_documents.{N}.``.
OPENINFERENCE_RETRIEVAL_DOCUMENTS: Final = "retrieval.documents."
OPENINFERENCE_RERANKER_OUTPUT_DOCUMENTS: Final = "reranker.output_documents."
OPENINFERENCE_DOCUMENT_ID: Final = "document.id"
OPENINFERENCE_DOCUMENT_SCORE: Final = "document.score"
OPENINFERENCE_DOCUMENT_CONTENT: Final = "document.content"
#: A document's key in ``gen_ai.retrieval.documents`` -> its name under ``retrieval.documents.{N}.`` (what spanfold
#: writes for Phoenix on its own retrieval spans).
OPENINFERENCE_DOCUMENT_FIELDS: Final = (
    ("id", OPENINFERENCE_DOCUMENT_ID),
    ("score", OPENINFERENCE_DOCUMENT_SCORE),
    ("content", OPENINFERENCE_DOCUMENT_CONTENT),
)
#: Indexed embeddings: ``embedding.embeddings.{N}.embedding.{text,vector}``.
OPENINFERENCE_EMBEDDINGS: Final = "embedding.embeddings."
OPENINFERENCE_EMBEDDING_TEXT: Final = "embedding.text"
OPENINFERENCE_EMBEDDING_VECTOR: Final = "embedding.vector"
OPENINFERENCE_EMBEDDING_MODEL: Final = "embedding.model_name"
OPENINFERENCE_RERANKER_MODEL: Final = "reranker.model_name"
OPENINFERENCE_RERANKER_QUERY: Final = "reranker.query"
OPENINFERENCE_RERANKER_TOP_K: Final = "reranker.top_k"

# --- GenAI per-message log events, semconv 1.28-1.30 (exporter/dialects/genai_events.py) --------------------
#: Log record attribute naming the event, for emitters older than the Logs API's event names.
EVENT_NAME: Final = "event.name"
#: Event name -> the role of the input message it carries (``gen_ai.choice`` is the output).
GENAI_INPUT_EVENTS: Final = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
GENAI_CHOICE_EVENT: Final = "gen_ai.choice"

# --- MCP client tool calls (instrumentation/frameworks/mcp.py), semconv MCP conventions ---------------------------
MCP_METHOD_NAME: Final = "mcp.method.name"
MCP_SESSION_ID: Final = "mcp.session.id"
MCP_PROTOCOL_VERSION: Final = "mcp.protocol.version"
MCP_TOOLS_CALL: Final = "tools/call"
#: ``error.type`` of a tool call whose result says it failed (MCP ``isError``, a framework's handled tool error).
TOOL_ERROR: Final = "tool_error"

# --- OpenAI Agents SDK (instrumentation/frameworks/openai_agents.py) ---------------------------------------------
#: A handoff's ``execute_tool`` span: the agent that hands off and the one it hands off to (no registry names them).
OPENAI_AGENTS_HANDOFF_FROM: Final = "openai_agents.handoff.from_agent"
OPENAI_AGENTS_HANDOFF_TO: Final = "openai_agents.handoff.to_agent"
#: The span event on the ``invoke_agent`` span a guardrail ran under.
OPENAI_AGENTS_GUARDRAIL_EVENT: Final = "openai_agents.guardrail"
OPENAI_AGENTS_GUARDRAIL_NAME: Final = "openai_agents.guardrail.name"
OPENAI_AGENTS_GUARDRAIL_TRIGGERED: Final = "openai_agents.guardrail.triggered"
#: The SDK's workflow name and trace id, on the run's root ``invoke_agent`` span.
OPENAI_AGENTS_WORKFLOW_NAME: Final = "openai_agents.workflow.name"
OPENAI_AGENTS_TRACE_ID: Final = "openai_agents.trace.id"
# --- framework spans (exporter/dialects/pydantic_ai.py, _strands, _adk, _vercel_ai, _langsmith) ------------
#: pydantic-ai: its instrumentation scope; the older span names and attributes (instrumentation versions 1-4).
PYDANTIC_AI_SCOPE: Final = "pydantic-ai"
PYDANTIC_AI_AGENT_SPAN: Final = "agent run"
PYDANTIC_AI_TOOL_SPAN: Final = "running tool"
PYDANTIC_AI_AGENT_NAME: Final = "agent_name"
PYDANTIC_AI_TOOL_ARGUMENTS: Final = "tool_arguments"
PYDANTIC_AI_TOOL_RESPONSE: Final = "tool_response"
#: Version 1: the model span's messages as one JSON list of GenAI events (``event.name`` + body fields).
PYDANTIC_AI_EVENTS: Final = "events"
PYDANTIC_AI_EVENT_NAME: Final = "event.name"
#: AWS Strands Agents: its tracer's scope; messages as span events (semconv 1.28 names) or, with
#: ``gen_ai_latest_experimental``, as ``gen_ai.client.inference.operation.details`` events holding the contract's
#: message attributes; Bedrock Converse content blocks (``text``, ``toolUse``, ``toolResult``).
STRANDS_SCOPE: Final = "strands.telemetry.tracer"
STRANDS_DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"
STRANDS_TOOL_STATUS: Final = "gen_ai.tool.status"
STRANDS_SYSTEM: Final = "strands-agents"
#: Google ADK: its tracer's scope and its own attributes (schema v1 ``call_llm`` spans, and tool spans).
ADK_SCOPE: Final = "gcp.vertex.agent"
ADK_CALL_LLM_SPAN: Final = "call_llm"
ADK_LLM_REQUEST: Final = "gcp.vertex.agent.llm_request"
ADK_LLM_RESPONSE: Final = "gcp.vertex.agent.llm_response"
ADK_TOOL_CALL_ARGS: Final = "gcp.vertex.agent.tool_call_args"
ADK_TOOL_RESPONSE: Final = "gcp.vertex.agent.tool_response"
ADK_SESSION_ID: Final = "gcp.vertex.agent.session_id"
#: The span ADK opens around a batch of parallel tool runs (not a tool run itself).
ADK_MERGED_TOOLS: Final = "(merged tools)"
#: Vercel AI SDK (``experimental_telemetry``): ``ai.operationId`` values and attributes.
VERCEL_OPERATION_ID: Final = "ai.operationId"
VERCEL_MODEL_OPERATIONS: Final = frozenset(
    {
        "ai.generateText.doGenerate",
        "ai.streamText.doStream",
        "ai.generateObject.doGenerate",
        "ai.streamObject.doStream",
    }
)
VERCEL_AGENT_OPERATIONS: Final = frozenset({"ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"})
VERCEL_TOOL_OPERATION: Final = "ai.toolCall"
VERCEL_FUNCTION_ID: Final = "ai.telemetry.functionId"
VERCEL_PROMPT_MESSAGES: Final = "ai.prompt.messages"
VERCEL_MODEL_ID: Final = "ai.model.id"
VERCEL_MODEL_PROVIDER: Final = "ai.model.provider"
VERCEL_RESPONSE_TEXT: Final = "ai.response.text"
VERCEL_RESPONSE_TOOL_CALLS: Final = "ai.response.toolCalls"
VERCEL_RESPONSE_FINISH_REASON: Final = "ai.response.finishReason"
VERCEL_RESPONSE_ID: Final = "ai.response.id"
VERCEL_RESPONSE_MODEL: Final = "ai.response.model"
VERCEL_TOOL_NAME: Final = "ai.toolCall.name"
VERCEL_TOOL_ID: Final = "ai.toolCall.id"
VERCEL_TOOL_ARGS: Final = "ai.toolCall.args"
VERCEL_TOOL_RESULT: Final = "ai.toolCall.result"
#: Usage: v5+ names, then the v4 names (each -> the contract's).
VERCEL_USAGE: Final = {
    "ai.usage.inputTokens": USAGE_INPUT_TOKENS,
    "ai.usage.outputTokens": USAGE_OUTPUT_TOKENS,
    "ai.usage.promptTokens": USAGE_INPUT_TOKENS,
    "ai.usage.completionTokens": USAGE_OUTPUT_TOKENS,
}
#: LangSmith's OTel export (``LANGSMITH_OTEL_ENABLED`` / ``LANGSMITH_TRACING_MODE=otel``): the run type, run name,
#: and the run's inputs / outputs as JSON in ``gen_ai.prompt`` / ``gen_ai.completion``.
LANGSMITH_SPAN_KIND: Final = "langsmith.span.kind"
LANGSMITH_NAME: Final = "langsmith.trace.name"
LANGSMITH_PROMPT: Final = "gen_ai.prompt"
LANGSMITH_COMPLETION: Final = "gen_ai.completion"

# --- metrics the instrumentation records (spanfold.semconv.written.METRICS: the entry each follows) ----------------
#: A model call's duration (seconds) and its tokens (``{token}``, by ``gen_ai.token.type``): the histograms the
#: official opentelemetry-util-genai records, with the conventions' bucket boundaries.
METRIC_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
METRIC_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
#: A stream's time to its first chunk (seconds), by the pinned registry's name.
METRIC_TIME_TO_FIRST_CHUNK: Final = "gen_ai.client.inference.time_to_first_chunk"
#: What model calls cost (a counter, priced on the fold's worker; no registry defines one).
METRIC_COST: Final = "spanfold.gen_ai.client.cost"
#: ``gen_ai.client.token.usage``'s attribute: ``input`` or ``output``.
TOKEN_TYPE: Final = "gen_ai.token.type"
#: The cost counter's attribute: the currency of the amounts (ISO 4217).
COST_CURRENCY: Final = "spanfold.cost.currency"

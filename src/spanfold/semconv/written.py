"""Every name spanfold writes on a span, with the registry entry it follows.

One row per attribute key, span event name and ``gen_ai.operation.name`` value spanfold's instrumentation writes: the
registry file of :mod:`.registry`'s pinned commit that defines it (``model/gen-ai/registry.yaml``,
``model/mcp/registry.yaml``, or a core attribute those reference), or ``vendor: <whose>`` for a name no registry has
(spanfold's own, a framework's, OpenInference's). ``tests/semconv/test_written_names.py`` holds the table to the
pinned registry and to what spanfold writes: a written name missing here, or a registry row the registry lacks,
fails it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from spanfold.semconv import names as n
from spanfold.semconv import registry as r

VENDOR: Final = "vendor: "


def vendor(whose: str) -> str:
    """The row of a name no registry defines, and whose name it is."""
    return VENDOR + whose


SPANFOLD: Final = vendor("spanfold")
#: OpenInference's span attributes, the ones Arize Phoenix and Langfuse show a span's input and output from.
OPENINFERENCE: Final = vendor("OpenInference (read by Arize Phoenix and Langfuse)")

#: Langfuse's trace-level names, as its own SDKs' ``propagate_attributes`` writes them.
LANGFUSE: Final = vendor("Langfuse (its SDKs' propagate_attributes)")
#: ``user.id``: OpenTelemetry's general registry (not referenced by the GenAI spans at the pinned commit); what
#: OpenInference's ``using_user`` writes and Arize Phoenix and Langfuse read.
USER: Final = vendor("OpenTelemetry's general registry (user.id), not the GenAI one; read by Phoenix and Langfuse")

#: A model call's cost, as open-telemetry/semantic-conventions-genai pull request 443 proposes (not in the registry at
#: the pinned commit).
PROPOSED_COST: Final = vendor("spanfold, as semantic-conventions-genai pull request 443 proposes gen_ai.usage.cost.*")

#: Attribute key -> the registry entry it follows.
ATTRIBUTES: Final[Mapping[str, str]] = {
    # every GenAI span
    n.OPERATION_NAME: r.GENAI,
    n.PROVIDER_NAME: r.GENAI,
    n.CONVERSATION_ID: r.GENAI,
    n.ERROR_TYPE: r.CORE,
    n.SERVER_ADDRESS: r.CORE,
    n.SERVER_PORT: r.CORE,
    # model call
    n.REQUEST_MODEL: r.GENAI,
    n.REQUEST_MAX_TOKENS: r.GENAI,
    n.REQUEST_TEMPERATURE: r.GENAI,
    n.REQUEST_TOP_P: r.GENAI,
    n.REQUEST_TOP_K: r.GENAI,
    n.REQUEST_SEED: r.GENAI,
    n.REQUEST_CHOICE_COUNT: r.GENAI,
    n.REQUEST_STOP_SEQUENCES: r.GENAI,
    n.REQUEST_FREQUENCY_PENALTY: r.GENAI,
    n.REQUEST_PRESENCE_PENALTY: r.GENAI,
    n.OUTPUT_TYPE: r.GENAI,
    n.RESPONSE_MODEL: r.GENAI,
    n.RESPONSE_ID: r.GENAI,
    n.RESPONSE_FINISH_REASONS: r.GENAI,
    n.USAGE_INPUT_TOKENS: r.GENAI,
    n.USAGE_OUTPUT_TOKENS: r.GENAI,
    n.USAGE_CACHE_READ_INPUT_TOKENS: r.GENAI,
    n.USAGE_CACHE_WRITE_INPUT_TOKENS: r.GENAI,
    n.USAGE_REASONING_OUTPUT_TOKENS: r.GENAI,
    n.USAGE_TEXT_INPUT_TOKENS: r.GENAI,
    n.USAGE_IMAGE_INPUT_TOKENS: r.GENAI,
    n.USAGE_AUDIO_INPUT_TOKENS: r.GENAI,
    n.USAGE_TEXT_OUTPUT_TOKENS: r.GENAI,
    n.USAGE_IMAGE_OUTPUT_TOKENS: r.GENAI,
    n.USAGE_AUDIO_OUTPUT_TOKENS: r.GENAI,
    n.USAGE_COST_AMOUNT: PROPOSED_COST,
    n.USAGE_COST_CURRENCY: PROPOSED_COST,
    n.USAGE_COST_SOURCE: PROPOSED_COST,
    n.SYSTEM_INSTRUCTIONS: r.GENAI,
    n.INPUT_MESSAGES: r.GENAI,
    n.OUTPUT_MESSAGES: r.GENAI,
    n.TOOL_DEFINITIONS: r.GENAI,
    n.OPENAI_PREVIOUS_RESPONSE_ID: vendor("openai (spanfold's; the registry's is gen_ai.request.previous_response.id)"),
    n.ANTHROPIC_PREVIOUS_MESSAGE_ID: vendor("anthropic (spanfold's)"),
    n.ANTHROPIC_REQUEST_ID: vendor("anthropic (the anthropic SDK's own spans' name)"),
    n.AWS_REQUEST_ID: r.CORE,
    n.SPANFOLD_STITCHED: SPANFOLD,
    n.SPANFOLD_RUN_ID: SPANFOLD,
    n.SPANFOLD_ENDED_BY: SPANFOLD,
    # what a backend shows first (model calls, tool runs, a run's root)
    n.OPENINFERENCE_INPUT_VALUE: OPENINFERENCE,
    n.OPENINFERENCE_INPUT_MIME_TYPE: OPENINFERENCE,
    n.OPENINFERENCE_OUTPUT_VALUE: OPENINFERENCE,
    n.OPENINFERENCE_OUTPUT_MIME_TYPE: OPENINFERENCE,
    n.OPENINFERENCE_SPAN_KIND: OPENINFERENCE,  # RETRIEVER, on a retrieval's span
    # tool run
    n.TOOL_NAME: r.GENAI,
    n.TOOL_CALL_ID: r.GENAI,
    n.TOOL_TYPE: r.GENAI,
    n.TOOL_DESCRIPTION: r.GENAI,
    n.TOOL_CALL_ARGUMENTS: r.GENAI,
    n.TOOL_CALL_RESULT: r.GENAI,
    n.MCP_METHOD_NAME: r.MCP,
    n.MCP_SESSION_ID: r.MCP,
    n.MCP_PROTOCOL_VERSION: r.MCP,
    # agent run
    n.AGENT_NAME: r.GENAI,
    n.WORKFLOW_NAME: r.GENAI,
    n.INVOCATION_IS_NESTED: r.GENAI,
    n.OPENAI_AGENTS_HANDOFF_FROM: vendor("OpenAI Agents SDK (a handoff's source agent; no registry name)"),
    n.OPENAI_AGENTS_HANDOFF_TO: vendor("OpenAI Agents SDK (a handoff's target agent; no registry name)"),
    n.OPENAI_AGENTS_WORKFLOW_NAME: vendor("OpenAI Agents SDK (RunConfig.workflow_name)"),
    n.OPENAI_AGENTS_TRACE_ID: vendor("OpenAI Agents SDK (its trace id)"),
    # embeddings and retrieval
    n.EMBEDDINGS_DIMENSION_COUNT: r.GENAI,
    n.REQUEST_ENCODING_FORMATS: r.GENAI,
    n.SPANFOLD_EMBEDDINGS_INPUT_COUNT: SPANFOLD,
    n.DATA_SOURCE_ID: r.GENAI,
    n.RETRIEVAL_QUERY_TEXT: r.GENAI,
    n.RETRIEVAL_TOP_K: r.GENAI,
    n.RETRIEVAL_DOCUMENTS: r.GENAI,
    # memory operations (a mem0 Memory's; its agent_id as gen_ai.agent.id, run_id as gen_ai.conversation.id, user_id
    # as user.id: the rows above and below)
    n.MEMORY_STORE_ID: r.GENAI,
    n.MEMORY_RECORD_ID: r.GENAI,
    n.MEMORY_RECORD_COUNT: r.GENAI,
    n.MEMORY_QUERY_TEXT: r.GENAI,
    n.MEMORY_RECORDS: r.GENAI,
    n.AGENT_ID: r.GENAI,
    # a run's context (spanfold.context), on every span started inside; gen_ai.conversation.id (above) for its session
    n.USER_ID: USER,
    n.OPENINFERENCE_SESSION_ID: OPENINFERENCE,
    n.OPENINFERENCE_TAGS: OPENINFERENCE,
    n.OPENINFERENCE_METADATA: OPENINFERENCE,
    n.LANGFUSE_TRACE_TAGS: LANGFUSE,
    n.PROMPT_NAME: r.GENAI,
    n.PROMPT_VERSION: r.GENAI,
}

#: Attribute keys written as a prefix and a key of the application's -> the registry entry each follows
#: (``langfuse.trace.metadata.<key>``: one per ``spanfold.context`` metadata key, with content capture on).
#: ``retrieval.documents.{N}.document.id|score|content``: a retrieval's documents as Phoenix reads them.
ATTRIBUTE_PREFIXES: Final[Mapping[str, str]] = {
    n.LANGFUSE_TRACE_METADATA_PREFIX: LANGFUSE,
    n.OPENINFERENCE_RETRIEVAL_DOCUMENTS: OPENINFERENCE,
}

#: Span event name -> the registry entry it follows.
SPAN_EVENTS: Final[Mapping[str, str]] = {
    n.EXCEPTION_EVENT: r.CORE,
    n.OPENAI_AGENTS_GUARDRAIL_EVENT: vendor("OpenAI Agents SDK"),
}

#: Log-record event name -> the registry entry it follows (``spanfold check`` / the pytest plugin's evaluation
#: results, :mod:`spanfold.checks.evaluation`; a model call's details event, :mod:`spanfold.instrumentation.toolkit.
#: details_event`).
LOG_EVENTS: Final[Mapping[str, str]] = {
    n.EVALUATION_RESULT_EVENT: r.GENAI_EVENTS,
    n.INFERENCE_DETAILS_EVENT: r.GENAI_EVENTS,
}

#: Attribute keys of span events and of log-record events -> the registry entry each follows.
EVENT_ATTRIBUTES: Final[Mapping[str, str]] = {
    n.EVALUATION_NAME: r.GENAI,
    n.EVALUATION_SCORE_VALUE: r.GENAI,
    n.EVALUATION_SCORE_LABEL: r.GENAI,
    n.EVALUATION_EXPLANATION: r.GENAI,
    n.EXCEPTION_TYPE: r.CORE,
    n.EXCEPTION_MESSAGE: r.CORE,
    n.EXCEPTION_STACKTRACE: r.CORE,
    n.OPENAI_AGENTS_GUARDRAIL_NAME: vendor("OpenAI Agents SDK"),
    n.OPENAI_AGENTS_GUARDRAIL_TRIGGERED: vendor("OpenAI Agents SDK"),
}

#: ``gen_ai.operation.name`` values spanfold writes (each one of the registry's members).
OPERATIONS: Final = frozenset(
    {
        n.OP_CHAT,
        n.OP_TEXT_COMPLETION,
        n.OP_EXECUTE_TOOL,
        n.OP_INVOKE_AGENT,
        n.OP_INVOKE_WORKFLOW,
        n.OP_HANDLE_CONVERSATION_TURN,
        n.OP_EMBEDDINGS,
        n.OP_RETRIEVAL,
        n.OP_SEARCH_MEMORY,
        n.OP_CREATE_MEMORY,
        n.OP_UPDATE_MEMORY,
        n.OP_DELETE_MEMORY,
    }
)


#: The released semantic conventions (1.37, ``opentelemetry.semconv._incubating``) the official
#: ``opentelemetry-util-genai`` records its token histogram by: what GenAI dashboards read today.
RELEASED: Final = vendor("semantic-conventions 1.37, as opentelemetry-util-genai records it")

#: Metric name -> the registry entry it follows.
METRICS: Final[Mapping[str, str]] = {
    n.METRIC_OPERATION_DURATION: r.GENAI_METRICS_FILE,
    n.METRIC_TIME_TO_FIRST_CHUNK: r.GENAI_METRICS_FILE,
    n.METRIC_TOKEN_USAGE: RELEASED,
    n.METRIC_COST: SPANFOLD,
}
#: Attribute keys only the metrics carry (the others are span attributes' rows above).
METRIC_ATTRIBUTES: Final[Mapping[str, str]] = {n.TOKEN_TYPE: RELEASED, n.COST_CURRENCY: SPANFOLD}


def is_vendor(row: str) -> bool:
    return row.startswith(VENDOR)

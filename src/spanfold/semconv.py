"""The contract between instrumentation/ and exporter/: GenAI semantic-convention names and shapes.

spanfold follows the latest experimental OpenTelemetry GenAI semantic conventions
(``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``). Nothing here imports OpenTelemetry.

Message JSON (``gen_ai.input.messages`` / ``gen_ai.output.messages``)::

    [{"role": "user", "parts": [{"type": "text", "content": "hi"}]},
     {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "f", "arguments": {"x": 1}}]},
     {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "42"}]}]

Output messages carry ``finish_reason``. ``gen_ai.system_instructions`` is a list of parts.
Part types: ``text{content}``, ``tool_call{id, name, arguments}``, ``tool_call_response{id, response}``,
``reasoning{content}``, ``blob{modality, mime_type, content}``, ``uri{modality, mime_type?, uri}``,
``file{modality, file_id}``. Unknown parts are kept as they come.
"""

from __future__ import annotations

from typing import Final

# --- span names and operations -------------------------------------------------------------------------
OP_CHAT: Final = "chat"
OP_EXECUTE_TOOL: Final = "execute_tool"
OP_INVOKE_AGENT: Final = "invoke_agent"

# --- common attributes ---------------------------------------------------------------------------------
OPERATION_NAME: Final = "gen_ai.operation.name"
PROVIDER_NAME: Final = "gen_ai.provider.name"
SYSTEM_LEGACY: Final = "gen_ai.system"  # older conventions; read, never written
CONVERSATION_ID: Final = "gen_ai.conversation.id"
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
USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
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

# --- providers (gen_ai.provider.name values) -------------------------------------------------------------
PROVIDER_OPENAI: Final = "openai"
PROVIDER_ANTHROPIC: Final = "anthropic"

#: Anthropic ``stop_reason`` -> the semconv output-message ``finish_reason`` enum; others are kept as they come.
#: (spanfold's own Anthropic spans and the anthropic SDK's native-span dialect map it alike.)
ANTHROPIC_FINISH_REASONS: Final = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_call",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}

# --- part types ----------------------------------------------------------------------------------------
PART_TEXT: Final = "text"
PART_TOOL_CALL: Final = "tool_call"
PART_TOOL_CALL_RESPONSE: Final = "tool_call_response"
PART_REASONING: Final = "reasoning"
PART_BLOB: Final = "blob"
PART_URI: Final = "uri"
PART_FILE: Final = "file"

#: Attributes that carry prompt, completion or tool content. With content capture off none is written.
CONTENT_ATTRIBUTES: Final = frozenset(
    {
        SYSTEM_INSTRUCTIONS,
        INPUT_MESSAGES,
        OUTPUT_MESSAGES,
        TOOL_CALL_ARGUMENTS,
        TOOL_CALL_RESULT,
    }
)


def span_name(operation: str, target: str | None) -> str:
    """``"{operation} {target}"`` as the conventions name GenAI spans, or the bare operation."""
    return f"{operation} {target}" if target else operation

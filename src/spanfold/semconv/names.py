"""Every span attribute name either half of spanfold writes or reads: GenAI semantic conventions, and vendor names.

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

REQUEST_TOP_K: Final = "gen_ai.request.top_k"

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
#: The attributes that name the previous turn of a chain whose history lives on the server (the fold joins by them).
PREVIOUS_RESPONSE_ATTRIBUTES: Final = (OPENAI_PREVIOUS_RESPONSE_ID, ANTHROPIC_PREVIOUS_MESSAGE_ID)

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
        REQUEST_STOP_SEQUENCES,
    }
)


def span_name(operation: str, target: str | None) -> str:
    """``"{operation} {target}"`` as the conventions name GenAI spans, or the bare operation."""
    return f"{operation} {target}" if target else operation

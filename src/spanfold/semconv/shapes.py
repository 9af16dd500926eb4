"""Shape rules both halves of spanfold apply to semconv messages: one definition each.

* :func:`split_tool_responses`: each ``tool_call_response`` part is a ``tool`` message of its own, the other parts stay
  in messages of their role around it, in order (providers that carry tool results inside user or assistant content,
  Anthropic and Bedrock ``tool_result`` blocks, Gemini ``function_response`` parts, map onto the contract through it).
* :func:`first_choice`: several assistant output messages are the choices of one call (``n > 1``); the conversation
  goes on with the first.
* Finish-reason tables: a provider's stop reason -> the semconv output-message ``finish_reason`` enum
  (``stop``, ``length``, ``content_filter``, ``tool_call``, ``error``); reasons not in a table are kept as they come.
  :func:`output_finish_reason` picks the table by ``gen_ai.provider.name``: the toolkit writes its answer on every
  output message (a deprecated, optional field the conventions keep, and one consumers in use still require: Arize
  Phoenix drops a ``gen_ai.output.messages`` list whose messages lack it), "" when the provider gave no reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

from spanfold.semconv import names
from spanfold.semconv.names import PART_TOOL_CALL_RESPONSE

T = TypeVar("T")

#: OpenAI Chat Completions ``finish_reason``.
OPENAI_CHAT_FINISH_REASONS: Final = {"tool_calls": "tool_call", "function_call": "tool_call"}
#: Chat Completions as the OpenAI-compatible APIs send it (groq, mistral: ``model_length`` is its context limit).
OPENAI_COMPATIBLE_FINISH_REASONS: Final = {**OPENAI_CHAT_FINISH_REASONS, "model_length": "length"}
#: Cohere v2 chat ``finish_reason``.
COHERE_FINISH_REASONS: Final = {
    "COMPLETE": "stop",
    "STOP_SEQUENCE": "stop",
    "MAX_TOKENS": "length",
    "TOOL_CALL": "tool_call",
    "ERROR": "error",
    "TIMEOUT": "error",
}
#: OpenAI Responses ``incomplete_details.reason``.
OPENAI_RESPONSES_FINISH_REASONS: Final = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
    "failed": "error",  # the provider's reason is derived from the status (providers/openai/responses.py)
}
#: Anthropic ``stop_reason`` (spanfold's own Anthropic spans and the anthropic SDK's native-span dialect alike).
ANTHROPIC_FINISH_REASONS: Final = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_call",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}

#: Gemini ``finish_reason`` (``FinishReason`` enum values; google-genai and Vertex AI alike). ``STOP`` on a candidate
#: that calls functions is ``tool_call`` (the API has no reason of its own for it): see :data:`GEMINI_TOOL_CALL_STOP`.
GEMINI_FINISH_REASONS: Final = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MODEL_ARMOR": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    "MISSING_THOUGHT_SIGNATURE": "error",
    "MALFORMED_RESPONSE": "error",
}
#: The raw Gemini reason that means "tool_call" when the candidate holds function calls.
GEMINI_TOOL_CALL_STOP: Final = "STOP"


def finish_reason(table: Mapping[str, str], raw: Any) -> str:
    """The semconv ``finish_reason`` of a provider's raw reason ("" when there is none)."""
    if not raw:
        return ""
    return table.get(raw, raw) if isinstance(raw, str) else str(raw)


def split_tool_responses(role: Any, parts: Iterable[Any], make: Callable[[Any, list[Any]], T]) -> list[T]:
    """``make(role, parts)`` for each run of ordinary parts and ``make("tool", [part])`` for each tool-call response,
    in order; a message with no parts at all is one empty ``role`` message."""
    out: list[T] = []
    run: list[Any] = []
    for part in parts:
        if isinstance(part, dict) and part.get("type") == PART_TOOL_CALL_RESPONSE:
            if run:
                out.append(make(role, run))
                run = []
            out.append(make("tool", [part]))
        else:
            run.append(part)
    if run or not out:
        out.append(make(role, run))
    return out


def first_choice(outputs: Sequence[T]) -> tuple[Sequence[T], Sequence[T]]:
    """(the messages the conversation goes on with, the other choices): several output messages that are all the
    assistant's are the choices of one call, and only the first continues the conversation."""
    if len(outputs) > 1 and all(_role(m) == "assistant" for m in outputs):
        return outputs[:1], outputs[1:]
    return outputs, ()


def _role(message: Any) -> Any:
    return message.get("role", "assistant") if isinstance(message, dict) else "assistant"


#: Amazon Bedrock ``stopReason`` (Converse, ConverseStream, and the Amazon Nova model bodies).
BEDROCK_FINISH_REASONS: Final = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_call",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
    "malformed_model_output": "error",
    "malformed_tool_use": "error",
}


#: The finish-reason table of each provider (``gen_ai.provider.name``); a provider not listed answers in Chat
#: Completions' terms (the OpenAI-compatible APIs, LiteLLM).
FINISH_REASONS_BY_PROVIDER: Final[Mapping[str, Mapping[str, str]]] = {
    names.PROVIDER_OPENAI: {**OPENAI_CHAT_FINISH_REASONS, **OPENAI_RESPONSES_FINISH_REASONS},
    names.PROVIDER_ANTHROPIC: ANTHROPIC_FINISH_REASONS,
    names.PROVIDER_AWS_BEDROCK: BEDROCK_FINISH_REASONS,
    names.PROVIDER_GCP_GEMINI: GEMINI_FINISH_REASONS,
    names.PROVIDER_GCP_VERTEX_AI: GEMINI_FINISH_REASONS,
    names.PROVIDER_COHERE: COHERE_FINISH_REASONS,
}
#: Providers whose API stops with its plain "stop" reason when the model calls tools (no reason of its own for it).
STOP_CALLS_TOOLS: Final = frozenset({names.PROVIDER_GCP_GEMINI, names.PROVIDER_GCP_VERTEX_AI, names.PROVIDER_OLLAMA})


def output_finish_reason(provider: Any, raw: Any, calls_tools: bool = False) -> str:
    """The ``finish_reason`` of an output message of a call to ``provider`` that stopped for ``raw`` ("" when it
    gave none): its semconv value, ``tool_call`` for a plain stop of a message calling tools where the API has no
    reason of its own for it (:data:`STOP_CALLS_TOOLS`)."""
    reason = finish_reason(FINISH_REASONS_BY_PROVIDER.get(provider, OPENAI_COMPATIBLE_FINISH_REASONS), raw)
    if reason == "stop" and calls_tools and provider in STOP_CALLS_TOOLS:
        return "tool_call"
    return reason

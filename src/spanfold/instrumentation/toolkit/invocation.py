"""A model call as typed data: what a provider reads from the SDK's request and response, nothing more.

A provider's shape map fills a :class:`Request` from the call's keyword arguments and a :class:`Response` from the
SDK's answer (or a stream accumulator's), with message parts built by :mod:`spanfold.semconv.parts` as they come:
content untouched. It never names a span attribute, writes JSON or reads the content settings:
:mod:`~spanfold.instrumentation.toolkit.attributes` turns an invocation into span attributes and applies the
:class:`~spanfold.content.runtime.Runtime` (capture, redaction), the one place that does.

Request lists an agent re-sends on every call (messages, tool definitions) are handed over as a
:class:`~spanfold.instrumentation.toolkit.reading.history.Listed`: the provider's converter, applied to each item once
and remembered by identity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from spanfold.semconv import parts as p

if TYPE_CHECKING:
    from spanfold.instrumentation.toolkit.reading.history import Listed

#: The numeric request parameters the conventions name (``gen_ai.request.<name>``; ``choice_count``:
#: ``gen_ai.request.choice.count``).
Param = Literal[
    "temperature", "top_p", "top_k", "max_tokens", "seed", "frequency_penalty", "presence_penalty", "choice_count"
]


@dataclass(slots=True)
class Usage:
    """Token counts as the response reports them (None: not reported). ``input_tokens`` counts every input token,
    cached ones included; a breakdown count is set only when the response reports a non-zero one."""

    input_tokens: Any = None
    output_tokens: Any = None
    cache_read_input_tokens: Any = None
    cache_write_input_tokens: Any = None
    reasoning_output_tokens: Any = None
    text_input_tokens: Any = None
    image_input_tokens: Any = None
    audio_input_tokens: Any = None
    text_output_tokens: Any = None
    image_output_tokens: Any = None
    audio_output_tokens: Any = None


def usage_with_cache(input_tokens: Any, output_tokens: Any, cache_read: Any, cache_write: Any) -> Usage:
    """The usage of an API whose input count leaves the cache reads and writes out (Anthropic, Bedrock Converse):
    ``input_tokens`` counts them, as the conventions say; each cache count only when non-zero."""
    if isinstance(input_tokens, int):
        input_tokens += (cache_read or 0) + (cache_write or 0)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_input_tokens=cache_read or None,
        cache_write_input_tokens=cache_write or None,
    )


@dataclass(frozen=True, slots=True)
class Cost:
    """What a call cost, as the library that made it computed it (LiteLLM's ``response_cost``)."""

    amount: float
    currency: str = "USD"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a client sends its requests; ``provider``: the provider it reaches, when one SDK reaches several
    (google-genai: the Gemini Developer API or Vertex AI)."""

    address: str | None = None
    port: int | None = None
    provider: str | None = None


@dataclass(slots=True)
class Request:
    """What a model call asks for."""

    model: str | None = None
    #: The numeric parameters given (never the SDKs' "not given" markers, never booleans).
    params: dict[Param, int | float] = field(default_factory=dict)
    #: One string or several; content (recorded with capture on, redacted).
    stop_sequences: list[Any] | None = None
    #: ``"text"`` or ``"json"`` when the request asks for a format.
    output_type: str | None = None
    system: list[p.Part] | None = None
    messages: Listed | list[p.Message] | None = None
    #: Tool definitions (recorded with capture on; structure, not redacted).
    tools: Listed | list[Any] | None = None
    #: The conversation the application names (the Responses API's ``conversation``), never a generated id.
    conversation_id: str | None = None
    #: The stored response this one continues (the Responses API's ``previous_response_id``, an Anthropic thread's
    #: previous message).
    previous_response_id: str | None = None
    #: The provider a router reaches (LiteLLM), when it is not the API's own.
    provider: str | None = None
    #: Where the call itself sends this request, when the call names it rather than its client (a router's
    #: ``api_base``: LiteLLM).
    endpoint: Endpoint | None = None
    #: What the span is named after when the request names no model (Mistral's agent completions: ``agent <id>``).
    target: str | None = None
    #: An embeddings request: how many inputs it sends (texts, token arrays, images), the vector length it asks for
    #: and the encodings it asks for (``float``, ``base64``).
    input_count: int | None = None
    dimension_count: int | None = None
    encoding_formats: list[str] | None = None
    #: A rerank (Cohere's ``rerank``): its query (content: recorded with capture on, redacted) and how many documents
    #: it asks back; ``reranks`` says the call is one (Phoenix shows its span as a reranker; the fold, a rerank step).
    query: str | None = None
    top_k: int | None = None
    reranks: bool = False


@dataclass(slots=True)
class Response:
    """What a model call answered (a complete response, or what a stream gave)."""

    id: Any = None
    model: Any = None
    #: The provider's own finish reasons, one per choice (the semconv enum goes to the fold through them).
    finish_reasons: list[Any] | None = None
    #: The output messages; None when the answer's content is unknown (a Bedrock ``invoke_model`` body of a family
    #: spanfold does not read, or never read): no output messages are recorded.
    messages: list[p.Message] | None = field(default_factory=list)
    usage: Usage | None = None
    #: The provider's id of the HTTP request (Anthropic's ``request-id`` header, AWS's ``RequestId``).
    request_id: Any = None
    conversation_id: str | None = None
    provider: str | None = None
    cost: Cost | None = None
    #: An embeddings response: the length of the vectors it gave (read from their size, never their values).
    dimension_count: int | None = None
    #: A rerank's answer: the documents in the order it ranked them.
    documents: list[Ranked] | None = None


@dataclass(slots=True)
class Ranked:
    """One document a rerank (or a search) gave back: its id (the index it was sent at, where it has no other), its
    score, and its text where the response carries it (content: recorded with capture on)."""

    id: str | None = None
    score: float | None = None
    text: str | None = None

"""Hypothesis strategies for the other providers' wire formats (well-typed, and malformed through
:func:`.strategies.malformed`), and every kind of answer in each one's stream framing: SSE (groq, mistral, gemini,
litellm's openai route; cohere's named by event type), NDJSON lines (ollama), AWS event-stream frames (Bedrock's
ConverseStream events, and ``invoke_model_with_response_stream`` chunks whose bytes are a model family's own events).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
from botocore.exceptions import ConnectionClosedError, EndpointConnectionError, ReadTimeoutError
from hypothesis import strategies as st

from spanfold.testing.wire.eventstream import EventMessage

from .conftest import Answer, Boom
from .strategies import (
    ANTHROPIC_BODY,
    ANTHROPIC_EVENT,
    ARGS,
    CHAT_BODY,
    CHAT_CHUNK,
    ERROR_BODIES,
    IDS,
    JSON,
    JSON_SCALARS,
    TEXT,
    TOKENS,
    TRANSPORT_ERRORS,
    malformed,
)

# --- groq and mistral: OpenAI's chat shapes (groq's usage in ``x_groq``) ---------------------------------------

_X_GROQ = st.fixed_dictionaries(
    {"id": IDS},
    optional={"usage": st.fixed_dictionaries({"prompt_tokens": TOKENS, "completion_tokens": TOKENS})},
)
GROQ_BODY = CHAT_BODY
GROQ_CHUNK = st.builds(
    lambda chunk, extra: {**chunk, **extra}, CHAT_CHUNK, st.just({}) | _X_GROQ.map(lambda x: {"x_groq": x})
)

# --- ollama ------------------------------------------------------------------------------------------------------

_OLLAMA_CALL = st.fixed_dictionaries(
    {"function": st.fixed_dictionaries({"name": IDS, "arguments": st.dictionaries(IDS, JSON_SCALARS, max_size=3)})}
)
OLLAMA_BODY = st.fixed_dictionaries(
    {
        "model": IDS,
        "created_at": st.just("2025-01-01T00:00:00Z"),
        "message": st.fixed_dictionaries(
            {"role": st.just("assistant"), "content": TEXT},
            optional={"thinking": TEXT, "tool_calls": st.lists(_OLLAMA_CALL, max_size=2)},
        ),
        "done": st.booleans(),
    },
    optional={"done_reason": st.sampled_from(["stop", "length"]), "prompt_eval_count": TOKENS, "eval_count": TOKENS},
)

# --- cohere v2 ---------------------------------------------------------------------------------------------------

_CO_CALL = st.fixed_dictionaries(
    {"id": IDS, "type": st.just("function"), "function": st.fixed_dictionaries({"name": IDS, "arguments": ARGS})}
)
_CO_USAGE = st.fixed_dictionaries({"tokens": st.fixed_dictionaries({"input_tokens": TOKENS, "output_tokens": TOKENS})})
_CO_REASONS = st.sampled_from(["COMPLETE", "MAX_TOKENS", "TOOL_CALL", "ERROR"])
COHERE_BODY = st.fixed_dictionaries(
    {
        "id": IDS,
        "finish_reason": _CO_REASONS,
        "message": st.fixed_dictionaries(
            {"role": st.just("assistant")},
            optional={
                "content": st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}), max_size=2),
                "tool_plan": TEXT,
                "tool_calls": st.lists(_CO_CALL, max_size=2),
            },
        ),
    },
    optional={"usage": _CO_USAGE},
)


def _co(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


COHERE_EVENT = st.one_of(
    st.builds(lambda i: _co("message-start", id=i, delta={"message": {"role": "assistant"}}), IDS),
    st.builds(
        lambda i, kind, t: _co("content-start", index=i, delta={"message": {"content": {"type": kind, kind: t}}}),
        st.integers(0, 2),
        st.sampled_from(["text", "thinking"]),
        TEXT,
    ),
    st.builds(
        lambda i, t: _co("content-delta", index=i, delta={"message": {"content": {"text": t}}}), st.integers(0, 2), TEXT
    ),
    st.builds(lambda i: _co("content-end", index=i), st.integers(0, 2)),
    st.builds(lambda t: _co("tool-plan-delta", delta={"message": {"tool_plan": t}}), TEXT),
    st.builds(
        lambda i, call: _co("tool-call-start", index=i, delta={"message": {"tool_calls": call}}),
        st.integers(0, 2),
        _CO_CALL,
    ),
    st.builds(
        lambda i, a: _co("tool-call-delta", index=i, delta={"message": {"tool_calls": {"function": {"arguments": a}}}}),
        st.integers(0, 2),
        TEXT,
    ),
    st.builds(lambda i: _co("tool-call-end", index=i), st.integers(0, 2)),
    st.builds(lambda r, u: _co("message-end", delta={"finish_reason": r, "usage": u}), _CO_REASONS, _CO_USAGE),
)

# --- gemini ------------------------------------------------------------------------------------------------------

_G_PART = st.one_of(
    st.builds(lambda t: {"text": t}, TEXT),
    st.builds(lambda t: {"text": t, "thought": True}, TEXT),
    st.builds(
        lambda n, a, i: {"functionCall": {"name": n, "args": a, **({"id": i} if i else {})}},
        IDS,
        st.dictionaries(IDS, JSON_SCALARS, max_size=3),
        st.none() | IDS,
    ),
    st.builds(lambda c: {"executableCode": {"language": "PYTHON", "code": c}}, TEXT),
    st.builds(lambda o: {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": o}}, TEXT),
    st.builds(
        lambda d: {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(d).decode()}}, st.binary(max_size=8)
    ),
)
GEMINI_BODY = st.fixed_dictionaries(
    {
        "candidates": st.lists(
            st.fixed_dictionaries(
                {"content": st.fixed_dictionaries({"role": st.just("model"), "parts": st.lists(_G_PART, max_size=3)})},
                optional={
                    "finishReason": st.sampled_from(["STOP", "MAX_TOKENS", "SAFETY"]),
                    "index": st.integers(0, 1),
                },
            ),
            max_size=2,
        ),
        "modelVersion": IDS,
        "responseId": IDS,
    },
    optional={
        "usageMetadata": st.fixed_dictionaries(
            {"promptTokenCount": TOKENS}, optional={"candidatesTokenCount": TOKENS, "thoughtsTokenCount": TOKENS}
        )
    },
)

# --- Bedrock -----------------------------------------------------------------------------------------------------

_BLOCK = st.one_of(
    st.builds(lambda t: {"text": t}, TEXT),
    st.builds(
        lambda i, n, a: {"toolUse": {"toolUseId": i, "name": n, "input": a}},
        IDS,
        IDS,
        st.dictionaries(IDS, JSON_SCALARS, max_size=3),
    ),
    st.builds(lambda t: {"reasoningContent": {"reasoningText": {"text": t, "signature": "c2ln"}}}, TEXT),
    st.builds(lambda d: {"reasoningContent": {"redactedContent": base64.b64encode(d).decode()}}, st.binary(max_size=8)),
    st.builds(lambda t: {"citationsContent": {"content": [{"text": t}], "citations": []}}, TEXT),
)
_B_USAGE = st.fixed_dictionaries(
    {"inputTokens": TOKENS, "outputTokens": TOKENS, "totalTokens": TOKENS},
    optional={"cacheReadInputTokens": TOKENS, "cacheWriteInputTokens": TOKENS},
)
_STOPS = st.sampled_from(["end_turn", "tool_use", "max_tokens", "guardrail_intervened"])
CONVERSE_BODY = st.fixed_dictionaries(
    {
        "output": st.fixed_dictionaries(
            {"message": st.fixed_dictionaries({"role": st.just("assistant"), "content": st.lists(_BLOCK, max_size=3)})}
        ),
        "stopReason": _STOPS,
        "usage": _B_USAGE,
        "metrics": st.just({"latencyMs": 1}),
    }
)
_INDEX = st.integers(0, 2)
CONVERSE_EVENT = st.one_of(
    st.just({"messageStart": {"role": "assistant"}}),
    st.builds(
        lambda i, t, n: {
            "contentBlockStart": {"contentBlockIndex": i, "start": {"toolUse": {"toolUseId": t, "name": n}}}
        },
        _INDEX,
        IDS,
        IDS,
    ),
    st.builds(
        lambda i, d: {"contentBlockDelta": {"contentBlockIndex": i, "delta": d}},
        _INDEX,
        st.one_of(
            st.builds(lambda t: {"text": t}, TEXT),
            st.builds(lambda t: {"toolUse": {"input": t}}, TEXT),
            st.builds(lambda t: {"reasoningContent": {"text": t}}, TEXT),
            st.builds(
                lambda d: {"reasoningContent": {"redactedContent": base64.b64encode(d).decode()}}, st.binary(max_size=4)
            ),
        ),
    ),
    st.builds(lambda i: {"contentBlockStop": {"contentBlockIndex": i}}, _INDEX),
    st.builds(lambda r: {"messageStop": {"stopReason": r}}, _STOPS),
    st.builds(lambda u: {"metadata": {"usage": u, "metrics": {"latencyMs": 1}}}, _B_USAGE),
)
_METRICS = st.fixed_dictionaries({"inputTokenCount": TOKENS, "outputTokenCount": TOKENS})
LLAMA_BODY = st.fixed_dictionaries(
    {"generation": TEXT, "prompt_token_count": st.none() | TOKENS, "generation_token_count": TOKENS},
    optional={"stop_reason": st.none() | st.just("stop")},
)
#: invoke_model bodies of the families spanfold reads (Claude, Nova) and one it does not (Llama).
INVOKE_BODY = ANTHROPIC_BODY | CONVERSE_BODY | LLAMA_BODY
#: The JSON one ``chunk`` of invoke_model_with_response_stream carries: a family's own stream event, maybe with the
#: invocation metrics of the last chunk.
INVOKE_CHUNK = st.builds(
    lambda event, metrics: {**event, **metrics},
    ANTHROPIC_EVENT | CONVERSE_EVENT | LLAMA_BODY,
    st.just({}) | _METRICS.map(lambda m: {"amazon-bedrock-invocationMetrics": m}),
)

# --- answers -----------------------------------------------------------------------------------------------------

HTTPX_ERRORS = st.sampled_from(
    [
        httpx.ConnectError("connection refused"),
        httpx.ReadTimeout("read timed out"),
        httpx.RemoteProtocolError("peer closed connection"),
        Boom("transport exploded"),
        ValueError("a bad value in the transport"),
    ]
)
BOTOCORE_ERRORS = st.sampled_from(
    [
        EndpointConnectionError(endpoint_url="http://mock.test"),
        ReadTimeoutError(endpoint_url="http://mock.test"),
        ConnectionClosedError(endpoint_url="http://mock.test"),
        Boom("transport exploded"),
    ]
)
MID_STREAM = {
    "httpx": st.sampled_from([httpx.ReadError("connection reset mid-stream"), Boom("mid-stream")]),
    "httpx2": TRANSPORT_ERRORS,
    "botocore": st.sampled_from([ReadTimeoutError(endpoint_url="http://mock.test"), Boom("mid-stream")]),
}
_STATUSES = st.sampled_from([400, 401, 403, 404, 409, 422, 429, 500, 503])


def _sse(named: bool, done: bool) -> Any:
    def frame(data: str) -> bytes:
        head = ""
        if named:
            try:
                kind = json.loads(data).get("type")
            except (ValueError, AttributeError):
                kind = None
            head = f"event: {kind}\n" if isinstance(kind, str) else ""
        return (head + "".join(f"data: {line}\n" for line in data.split("\n")) + "\n").encode()

    return frame, (b"data: [DONE]\n\n" if done else None), "text/event-stream"


def _event_frame(data: str) -> bytes:
    try:
        value = json.loads(data)
    except ValueError:
        value = None
    if isinstance(value, dict) and len(value) == 1:
        ((kind, payload),) = value.items()
        if isinstance(payload, dict):
            return EventMessage(str(kind), payload).encode()
    return EventMessage("contentBlockDelta", {"raw": data}).encode()


def _chunk_frame(data: str) -> bytes:
    return EventMessage("chunk", {"bytes": base64.b64encode(data.encode()).decode()}).encode()


FRAMINGS = {
    "sse": lambda done: _sse(False, done),
    "sse-named": lambda done: _sse(True, done),
    "ndjson": lambda done: ((lambda data: data.encode() + b"\n"), None, "application/x-ndjson"),
    "eventstream": lambda done: (_event_frame, None, "application/vnd.amazon.eventstream"),
    "eventstream-chunks": lambda done: (_chunk_frame, None, "application/vnd.amazon.eventstream"),
}
TRANSPORTS = {"httpx": HTTPX_ERRORS, "httpx2": TRANSPORT_ERRORS, "botocore": BOTOCORE_ERRORS}


@st.composite
def _stream_answer(draw: st.DrawFn, event: Any, framing: str, transport: str) -> Answer:
    frame, done, content_type = FRAMINGS[framing](draw(st.booleans()))
    data = st.one_of(event, event, event, malformed(event), JSON).map(json.dumps) | st.sampled_from(["not json", "{"])
    pieces = [frame(item) for item in draw(st.lists(data, min_size=1, max_size=6))]
    if done is not None:
        pieces.append(done)
    if draw(st.integers(0, 9)) == 0:
        pieces.append(draw(st.binary(min_size=1, max_size=12)))  # bytes no framing reads
    fail = draw(st.none() | MID_STREAM[transport])
    return Answer(200, content_type, tuple(pieces), fail)


def provider_answers(body: Any, event: Any, stream: bool, framing: str, transport: str) -> Any:
    """Every kind of answer to one request: errors and garbage, and a body (``stream``: a stream in ``framing``;
    a body where a stream was asked for)."""
    errors = st.one_of(
        TRANSPORTS[transport].map(lambda exc: Answer(raise_now=exc)),
        st.builds(Answer.json, ERROR_BODIES, _STATUSES),
        st.binary(max_size=40).map(lambda data: Answer(200, "application/json", (data,))),
    )
    if not stream:
        return st.one_of(
            body.map(Answer.json),
            malformed(body).map(Answer.json),
            JSON.map(Answer.json),
            errors,
            body.map(lambda b: Answer(200, "application/json", (json.dumps(b).encode()[:-3],))),  # truncated
        )
    streams = _stream_answer(event, framing, transport)
    return st.one_of(streams, streams, errors, body.map(Answer.json))  # streams twice as often

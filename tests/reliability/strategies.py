"""Hypothesis strategies: provider-shaped bodies and stream events (well-typed), the same with random subtrees
replaced or removed (malformed), garbage, HTTP errors and transport exceptions."""

from __future__ import annotations

import json
import string
from typing import Any

import httpx2
from hypothesis import strategies as st

from .conftest import Answer, Boom

JSON_SCALARS = (
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=12)
)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
TEXT = st.text(max_size=24)
IDS = st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=10)
TOKENS = st.integers(0, 10**6)
ARGS = st.dictionaries(IDS, JSON_SCALARS, max_size=3).map(json.dumps) | TEXT


@st.composite
def malformed(draw: st.DrawFn, base: st.SearchStrategy[Any]) -> Any:
    """``base`` with 1-3 random subtrees replaced by arbitrary JSON or removed."""
    value = draw(base)
    for _ in range(draw(st.integers(1, 3))):
        value = _mutate(draw, value)
    return value


def _mutate(draw: st.DrawFn, value: Any) -> Any:
    if isinstance(value, dict) and value and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(value)))
        action = draw(st.sampled_from(["replace", "delete", "descend"]))
        out = dict(value)
        if action == "delete":
            del out[key]
        elif action == "replace":
            out[key] = draw(JSON)
        else:
            out[key] = _mutate(draw, value[key])
        return out
    if isinstance(value, list) and value and draw(st.booleans()):
        i = draw(st.integers(0, len(value) - 1))
        out_list = list(value)
        out_list[i] = _mutate(draw, value[i]) if draw(st.booleans()) else draw(JSON)
        return out_list
    return draw(JSON)


# --- OpenAI Chat Completions -------------------------------------------------------------------------------

_CHAT_CALL = st.fixed_dictionaries(
    {"id": IDS, "type": st.just("function"), "function": st.fixed_dictionaries({"name": IDS, "arguments": ARGS})}
)
_CHAT_MESSAGE = st.fixed_dictionaries(
    {"role": st.just("assistant"), "content": st.none() | TEXT},
    optional={"tool_calls": st.lists(_CHAT_CALL, max_size=2), "refusal": st.none() | TEXT},
)
_CHAT_USAGE = st.fixed_dictionaries({"prompt_tokens": TOKENS, "completion_tokens": TOKENS, "total_tokens": TOKENS})
CHAT_BODY = st.fixed_dictionaries(
    {
        "id": IDS,
        "object": st.just("chat.completion"),
        "created": TOKENS,
        "model": IDS,
        "choices": st.lists(
            st.fixed_dictionaries(
                {
                    "index": st.integers(0, 2),
                    "message": _CHAT_MESSAGE,
                    "finish_reason": st.sampled_from(["stop", "tool_calls", "length", "content_filter"]),
                }
            ),
            max_size=2,
        ),
    },
    optional={"usage": _CHAT_USAGE},
)
_CHAT_DELTA = st.fixed_dictionaries(
    {},
    optional={
        "role": st.just("assistant"),
        "content": st.none() | TEXT,
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {"index": st.integers(0, 2)},
                optional={
                    "id": IDS,
                    "type": st.just("function"),
                    "function": st.fixed_dictionaries({}, optional={"name": IDS, "arguments": TEXT}),
                },
            ),
            max_size=2,
        ),
    },
)
CHAT_CHUNK = st.fixed_dictionaries(
    {
        "id": IDS,
        "object": st.just("chat.completion.chunk"),
        "created": TOKENS,
        "model": IDS,
        "choices": st.lists(
            st.fixed_dictionaries(
                {
                    "index": st.integers(0, 2),
                    "delta": _CHAT_DELTA,
                    "finish_reason": st.none() | st.sampled_from(["stop", "tool_calls"]),
                }
            ),
            max_size=2,
        ),
    },
    optional={"usage": st.none() | _CHAT_USAGE},
)

# --- OpenAI Responses --------------------------------------------------------------------------------------

_RESP_MESSAGE = st.fixed_dictionaries(
    {
        "type": st.just("message"),
        "id": IDS,
        "role": st.just("assistant"),
        "status": st.just("completed"),
        "content": st.lists(
            st.fixed_dictionaries({"type": st.just("output_text"), "text": TEXT, "annotations": st.just([])}),
            max_size=2,
        ),
    }
)
_RESP_CALL = st.fixed_dictionaries(
    {
        "type": st.just("function_call"),
        "id": IDS,
        "call_id": IDS,
        "name": IDS,
        "arguments": ARGS,
        "status": st.just("completed"),
    }
)
RESPONSES_BODY = st.fixed_dictionaries(
    {
        "id": IDS,
        "object": st.just("response"),
        "created_at": TOKENS,
        "model": IDS,
        "status": st.sampled_from(["completed", "incomplete"]),
        "output": st.lists(_RESP_MESSAGE | _RESP_CALL, max_size=3),
        "parallel_tool_calls": st.booleans(),
        "tool_choice": st.just("auto"),
        "tools": st.just([]),
    },
    optional={
        "usage": st.fixed_dictionaries(
            {
                "input_tokens": TOKENS,
                "output_tokens": TOKENS,
                "total_tokens": TOKENS,
                "input_tokens_details": st.just({"cached_tokens": 0}),
                "output_tokens_details": st.just({"reasoning_tokens": 0}),
            }
        )
    },
)
RESPONSES_EVENT = st.one_of(
    st.builds(
        lambda d, i, n: {
            "type": "response.output_text.delta",
            "delta": d,
            "item_id": i,
            "output_index": 0,
            "content_index": 0,
            "sequence_number": n,
            "logprobs": [],
        },
        TEXT,
        IDS,
        TOKENS,
    ),
    st.builds(
        lambda item, n: {"type": "response.output_item.done", "item": item, "output_index": 0, "sequence_number": n},
        _RESP_MESSAGE | _RESP_CALL,
        TOKENS,
    ),
    st.builds(
        lambda body, n: {"type": "response.created", "response": body, "sequence_number": n}, RESPONSES_BODY, TOKENS
    ),
    st.builds(
        lambda body, n: {"type": "response.completed", "response": body, "sequence_number": n}, RESPONSES_BODY, TOKENS
    ),
)

# --- Anthropic Messages ------------------------------------------------------------------------------------

_A_TEXT = st.fixed_dictionaries({"type": st.just("text"), "text": TEXT})
_A_TOOL = st.fixed_dictionaries(
    {"type": st.just("tool_use"), "id": IDS, "name": IDS, "input": st.dictionaries(IDS, JSON_SCALARS, max_size=3)}
)
_A_USAGE = st.fixed_dictionaries({"input_tokens": TOKENS, "output_tokens": TOKENS})
ANTHROPIC_BODY = st.fixed_dictionaries(
    {
        "id": IDS,
        "type": st.just("message"),
        "role": st.just("assistant"),
        "model": IDS,
        "content": st.lists(_A_TEXT | _A_TOOL, max_size=3),
        "stop_reason": st.sampled_from(["end_turn", "tool_use", "max_tokens"]),
        "stop_sequence": st.none(),
        "usage": _A_USAGE,
    }
)
ANTHROPIC_EVENT = st.one_of(
    st.builds(lambda body: {"type": "message_start", "message": {**body, "content": []}}, ANTHROPIC_BODY),
    st.builds(
        lambda i, block: {"type": "content_block_start", "index": i, "content_block": block},
        st.integers(0, 2),
        _A_TEXT | _A_TOOL.map(lambda b: {**b, "input": {}}),
    ),
    st.builds(
        lambda i, delta: {"type": "content_block_delta", "index": i, "delta": delta},
        st.integers(0, 2),
        st.builds(lambda t: {"type": "text_delta", "text": t}, TEXT)
        | st.builds(lambda t: {"type": "input_json_delta", "partial_json": t}, TEXT),
    ),
    st.builds(lambda i: {"type": "content_block_stop", "index": i}, st.integers(0, 2)),
    st.builds(
        lambda r, n: {
            "type": "message_delta",
            "delta": {"stop_reason": r, "stop_sequence": None},
            "usage": {"output_tokens": n},
        },
        st.sampled_from(["end_turn", "tool_use"]),
        TOKENS,
    ),
    st.just({"type": "message_stop"}),
)

# --- answers ------------------------------------------------------------------------------------------------

TRANSPORT_ERRORS = st.sampled_from(
    [
        httpx2.ConnectError("connection refused"),
        httpx2.ReadTimeout("read timed out"),
        httpx2.RemoteProtocolError("peer closed connection"),
        Boom("transport exploded"),
        ValueError("a bad value in the transport"),
    ]
)
ERROR_BODIES = st.one_of(
    st.builds(lambda msg: {"error": {"message": msg, "type": "invalid_request_error", "code": None}}, TEXT),
    st.builds(lambda msg: {"type": "error", "error": {"type": "api_error", "message": msg}}, TEXT),
    JSON,
)


def answers(body: st.SearchStrategy[Any], event: st.SearchStrategy[Any], stream: bool, named_events: bool) -> Any:
    """Every kind of answer to one request; ``stream``: the request asked for SSE."""
    errors = st.one_of(
        TRANSPORT_ERRORS.map(lambda exc: Answer(raise_now=exc)),
        st.builds(Answer.json, ERROR_BODIES, st.sampled_from([400, 401, 403, 404, 409, 422, 429, 500, 503])),
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
    data = st.one_of(event, event, malformed(event), JSON).map(lambda e: json.dumps(e))
    data = data | st.sampled_from(["not json", "{", ""])
    if named_events:
        entry = st.tuples(data, st.none() | st.sampled_from(["ping", "error", "message_stop"])).map(
            lambda t: (_event_name(t[0]) if t[1] is None else t[1], t[0])
        )
    else:
        entry = data.map(lambda d: (None, d))
    done = st.sampled_from([[], [(None, "[DONE]")]])
    return st.one_of(
        st.builds(
            lambda events, end, fail: Answer.sse(events + end, fail),
            st.lists(entry, max_size=6),
            done,
            st.none() | st.sampled_from([httpx2.ReadError("connection reset mid-stream"), Boom("mid-stream")]),
        ),
        errors,
        body.map(Answer.json),  # JSON where a stream was asked for
    )


def _event_name(data: str) -> str | None:
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value.get("type") if isinstance(value, dict) and isinstance(value.get("type"), str) else None

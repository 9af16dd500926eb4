"""JSON values -> :class:`~spanfold.trace.model.Trace`: one decoder for every trace shape spanfold reads.

=====================  ==============================================================================
shape                  JSON value
=====================  ==============================================================================
``invariant``          a bare Invariant event list (what ``traces.jsonl`` holds)
``invariant-object``   ``{"messages": [event, ...], "metadata": {...}}`` (the Invariant importer's object line)
``invariant-document`` ``{"trace": [event, ...], "metadata": ..., "summary": ...}`` (a per-trace JSON file)
``agentv``             ``{"trace": [TraceEvent, ...], "trace_summary": ..., "metadata": ...}``
``agentv-summary``     ``{"trace_summary": ..., "metadata": ...}`` (``convert --summary-only``): no events
``compact``            AgentV's message list: ``[{role, content, tool_calls: [{tool, input, output, ...}]}]``
``agentv-cli``         what a CLI agent hands AgentV: ``{text, output: [compact message], token_usage, duration_ms}``
``agentv-transcript``  AgentV transcript rows of one run (a row, or the list of a run's rows, as the reader groups them)
``metadata``           ``{"metadata": ...}`` alone: an Invariant dataset line or a ``traces.meta.jsonl`` record
=====================  ==============================================================================

Decoding is lenient where the formats' documents differ (tool-call arguments as a dict or a JSON string, ids as
numbers, a tool call without its ``function`` wrapper) and strict about structure: a wrong type raises
:class:`~spanfold.trace.errors.TraceError` naming the event (from 1). Decoding is total: any JSON value decodes or
raises :class:`~spanfold.trace.errors.TraceError`, never another exception (``tests/trace/test_decode_total.py``).
Trace metadata is read leniently (a field of the wrong type is left out: :meth:`TraceMeta.from_dict`).
:mod:`spanfold.trace.validate` is the strict schema check.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from spanfold.trace.errors import TraceError
from spanfold.trace.model import (
    CONTEXT_KEYS,
    TIMESTAMP_INFERRED,
    Content,
    Message,
    StepTime,
    ToolCall,
    Trace,
    TraceMeta,
    TraceSummary,
    Usage,
    finite_number,
    parse_arguments,
)

NOT_A_TRACE = "a trace must be an event list (or an AgentV document with a 'trace' list)"
#: AgentV event types and the role a message of that type gets when its metadata names none.
AGENTV_TYPES = {"model_step": "assistant", "message": "user", "error": "error", "tool_call": "", "tool_result": ""}
_EVENT_KEYS = frozenset(("role", "content", "tool_calls", "tool_call_id", "name", "error", "timestamp"))


@dataclass(slots=True)
class Decoded:
    """One decoded JSON value. ``trace`` is None for records without events (``metadata``, ``agentv-summary``)."""

    shape: str
    trace: Trace | None
    meta: TraceMeta | None = None
    summary: TraceSummary | None = None
    raw_metadata: dict[str, Any] | None = None


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _content(raw: Any, n: int) -> Content:
    if raw is None or isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        for k, chunk in enumerate(raw):
            if not isinstance(chunk, dict) or not isinstance(chunk.get("type"), str):
                raise TraceError(f"event {n}: content chunk {k} must be an object with a type")
        return raw
    raise TraceError(f"event {n}: content must be a string, a list of chunks or null")


def _tool_call(raw: Any, n: int) -> ToolCall:
    if not isinstance(raw, dict):
        raise TraceError(f"event {n}: a tool call must be an object")
    fn = raw.get("function", raw)
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise TraceError(f"event {n}: a tool call needs function.name")
    kind = raw.get("type")
    return ToolCall(
        _opt_str(raw.get("id")),
        fn["name"],
        parse_arguments(fn.get("arguments")),
        kind if isinstance(kind, str) else "function",
    )


def _list(raw: Any, what: str) -> list[Any]:
    """A list that may be absent (None: empty)."""
    if raw is None:
        return []
    return _events_list(raw, what)


def _events_list(raw: Any, what: str) -> list[Any]:
    """A list that must be there."""
    if not isinstance(raw, list):
        raise TraceError(f"{what} must be a list")
    return raw


def invariant_event(raw: Any, n: int) -> Message:
    """Event ``n`` (from 1) of an Invariant event list."""
    if not isinstance(raw, dict):
        raise TraceError(f"event {n} is not an object")
    role = raw.get("role")
    if not isinstance(role, str):
        raise TraceError(f"event {n} has no role")
    error = raw.get("error")
    if error is not None and not isinstance(error, dict):
        raise TraceError(f"event {n}: error must be an object")
    timestamp = raw.get("timestamp")
    return Message(
        role=role,
        content=_content(raw.get("content"), n),
        tool_calls=[_tool_call(c, n) for c in _list(raw.get("tool_calls"), f"event {n}: tool_calls")],
        tool_call_id=_opt_str(raw.get("tool_call_id")),
        name=_opt_str(raw.get("name")),
        error=error,
        timestamp=timestamp if isinstance(timestamp, str) else None,
        metadata={k: v for k, v in raw.items() if k not in _EVENT_KEYS},
    )


def invariant_events(raw: list[Any]) -> list[Message]:
    return [invariant_event(ev, n) for n, ev in enumerate(raw, start=1)]


def _is_chunks(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(c, dict) and isinstance(c.get("type"), str) for c in value)


def _json_text(value: Any) -> Content:
    """A tool output as message content: strings and chunk lists as they are, other JSON encoded."""
    if value is None or isinstance(value, str):
        return value
    if value and _is_chunks(value):
        chunks: list[dict[str, Any]] = value
        return chunks
    return json.dumps(value, ensure_ascii=False)


def agentv_events(raw: list[Any]) -> list[Message]:
    """AgentV TraceEvents as messages: a ``tool_call`` joins the assistant message before it (or starts one)."""
    out: list[Message] = []
    last: Message | None = None  # the assistant message later tool_call events belong to
    for n, ev in enumerate(raw, start=1):
        if not isinstance(ev, dict) or not isinstance(ev.get("type"), str):
            raise TraceError(f"event {n} is not an AgentV TraceEvent (no type)")
        kind = ev["type"]
        if kind not in AGENTV_TYPES:
            raise TraceError(f"event {n}: type must be one of {', '.join(AGENTV_TYPES)} (got {kind!r})")
        meta = ev.get("metadata")
        meta = dict(meta) if isinstance(meta, dict) else {}
        ts = ev.get("timestamp")
        ts = ts if isinstance(ts, str) and not meta.pop(TIMESTAMP_INFERRED, False) else None
        if kind == "tool_call":
            role = meta.pop("role", None)
            if last is None or isinstance(role, str):  # a message with only calls: its first carries its metadata
                last = Message(role=role if isinstance(role, str) else "assistant", timestamp=ts, metadata=meta)
                out.append(last)
            name = ev.get("name")
            if not isinstance(name, str):
                raise TraceError(f"event {n}: a tool_call needs a name")
            last.tool_calls.append(ToolCall(_opt_str(ev.get("id")), name, parse_arguments(ev.get("input"))))
            continue
        last = None
        if kind == "tool_result":
            error = meta.pop("error", None)
            out.append(
                Message(
                    role="tool",
                    content=_json_text(ev.get("output")),
                    tool_call_id=_opt_str(ev.get("id")),
                    name=_opt_str(ev.get("name")),
                    error=error if isinstance(error, dict) else None,
                    timestamp=ts,
                    metadata=meta,
                )
            )
            continue
        role = meta.pop("role", None)
        role = role if isinstance(role, str) else AGENTV_TYPES[kind]
        chunks = meta.pop("content", None)
        content = _content(chunks if isinstance(chunks, list) else ev.get("text"), n)
        error = None
        if kind == "error":
            found = meta.pop("error", None)
            if found is None:  # the error itself as the metadata (as the first agentv writer had it)
                found, meta = meta, {}
            error = found if isinstance(found, dict) else {"type": "error", "message": str(found)}
        msg = Message(role=role, content=content, error=error, timestamp=ts, metadata=meta)
        out.append(msg)
        if role == "assistant":
            last = msg
    return out


def compact_message(item: Any, n: int) -> tuple[Message, list[Message]]:
    """Compact message ``n`` (from 1): the message with its calls, and the results of the calls that hold an output."""
    if not isinstance(item, dict):
        raise TraceError(f"event {n} is not an object")
    role = item.get("role")
    if not isinstance(role, str):
        raise TraceError(f"event {n} has no role")
    msg = Message(role=role, content=_content(item.get("content"), n))
    results: list[Message] = []
    for call in _list(item.get("tool_calls"), f"event {n}: tool_calls"):
        if not isinstance(call, dict):
            raise TraceError(f"event {n}: a tool call must be an object")
        if "function" in call:  # an Invariant call inside a compact list
            msg.tool_calls.append(_tool_call(call, n))
            continue
        if not isinstance(call.get("tool"), str):
            raise TraceError(f"event {n}: a tool call needs tool (its name)")
        call_id = _opt_str(call.get("id"))
        start = call.get("start_time")
        if isinstance(start, str) and msg.timestamp is None:
            msg.timestamp = start
        msg.tool_calls.append(ToolCall(call_id, call["tool"], parse_arguments(call.get("input"))))
        if "output" in call:
            end = call.get("end_time")
            result = Message(
                role="tool",
                content=_json_text(call["output"]),
                tool_call_id=call_id,
                name=call["tool"],
                timestamp=end if isinstance(end, str) else None,
            )
            if isinstance(call.get("duration_ms"), (int, float)):
                result.metadata["duration_ms"] = call["duration_ms"]
            if call.get("status") == "error":
                result.error = {"type": "error", "message": result.text()}
            results.append(result)
    return msg, results


def compact_messages(raw: list[Any]) -> list[Message]:
    """AgentV compact messages: each ``{tool, input, output}`` call becomes a call plus (with ``output``) its result."""
    out: list[Message] = []
    for n, item in enumerate(raw, start=1):
        msg, results = compact_message(item, n)
        out.append(msg)
        out.extend(results)
    return out


def is_transcript_row(value: Any) -> bool:
    """Whether a JSON value is one AgentV transcript row (a ``test_id``, a ``message_index`` and a ``role``)."""
    return isinstance(value, dict) and "test_id" in value and "message_index" in value and "role" in value


def _row_usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    given, produced = _count(raw.get("input")), _count(raw.get("output"))
    return None if given is None or produced is None else Usage(given, produced)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _took(value: Any) -> float | None:
    took = finite_number(value)
    return took if took is not None and took >= 0 else None


def transcript_events(rows: list[Any]) -> tuple[list[Message], list[StepTime]]:
    """A run's transcript rows (in ``message_index`` order): each a compact message, its time and metadata kept; an
    assistant row whose metadata holds an error (a failed model call) is an error event again. The steps: each
    assistant row's model call and each call's tool run that the rows time."""
    ordered = sorted(rows, key=lambda r: _count(_object(r).get("message_index")) or 0)
    out: list[Message] = []
    steps: list[StepTime] = []
    for n, row in enumerate(ordered, start=1):
        msg, results = compact_message(row, n)
        start = row.get("start_time")
        if isinstance(start, str):
            msg.timestamp = start
        metadata = row.get("metadata")
        if isinstance(metadata, dict):
            msg.metadata.update(metadata)
            error = metadata.get("error")
            if msg.role == "assistant" and isinstance(error, dict) and msg.content is None and not msg.tool_calls:
                msg.role, msg.error = "error", msg.metadata.pop("error")
        usage, took = _row_usage(row.get("token_usage")), _took(row.get("duration_ms"))
        if msg.role in ("assistant", "error") and (usage is not None or took is not None):
            model = msg.metadata.get("model")
            steps.append(
                StepTime(
                    "model",
                    start=start if isinstance(start, str) else None,
                    duration_ms=took,
                    model=model if isinstance(model, str) else None,
                    usage=usage,
                    error=msg.error,
                    event=len(out),
                )
            )
        out.append(msg)
        calls = [c for c in row.get("tool_calls") or () if isinstance(c, dict) and "output" in c]
        for call, result in zip(calls, results, strict=False):
            call_start, call_took = call.get("start_time"), _took(call.get("duration_ms"))
            if isinstance(call_start, str) and call_took is not None:
                steps.append(
                    StepTime(
                        "tool",
                        start=call_start,
                        duration_ms=call_took,
                        name=result.name,
                        call_id=result.tool_call_id,
                        error=result.error,
                        event=len(out),
                    )
                )
            out.append(result)
    steps.sort(key=lambda step: step.start or "")
    return out, steps


def _transcript(value: Any) -> tuple[list[Message], TraceMeta]:
    rows = value if isinstance(value, list) else [value]
    events, steps = transcript_events(rows)
    meta = _transcript_meta(rows)
    meta.steps = steps
    return events, meta


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _transcript_meta(rows: list[Any]) -> TraceMeta:
    first = rows[0]
    source = _object(first.get("source"))
    facts = _object(source.get("metadata"))
    ref = _object(first.get("trace"))
    trace_id = ref.get("trace_id") or source.get("session_id") or ""
    raw: dict[str, Any] = {
        "trace_id": str(trace_id),
        "name": facts.get("name"),
        "service": facts.get("service"),
        "models": facts.get("models"),
        "start": source.get("timestamp"),
        "duration_ms": first.get("transcript_duration_ms"),
        "test_id": first.get("test_id"),
        "target": first.get("target"),
    }
    if facts.get("status") is not None:
        raw["status"] = facts["status"]
    raw.update({key: facts[key] for key in CONTEXT_KEYS if facts.get(key) is not None})
    if first.get("transcript_cost_usd") is not None:
        raw["transcript_cost_usd"] = first["transcript_cost_usd"]
    meta = TraceMeta.from_dict({k: v for k, v in raw.items() if v is not None})
    usage = first.get("transcript_token_usage")
    if usage is not None and not isinstance(usage, dict):
        raise TraceError("transcript_token_usage must be an object")
    if usage is not None:
        meta.usage.input_tokens = _tokens(usage, "input")
        meta.usage.output_tokens = _tokens(usage, "output")
    return meta


def _is_compact(events: list[Any]) -> bool:
    for ev in events:
        calls = ev.get("tool_calls") if isinstance(ev, dict) else None
        if isinstance(calls, list) and any(isinstance(c, dict) and "tool" in c and "function" not in c for c in calls):
            return True
    return False


def _has_roles(events: list[Any]) -> bool:
    return bool(events) and isinstance(events[0], dict) and "role" in events[0] and "type" not in events[0]


def shape_of(value: Any) -> str:
    """Which shape ``value`` is (see the module table); :class:`TraceError` when none."""
    if isinstance(value, list):
        if value and is_transcript_row(value[0]):
            return "agentv-transcript"
        return "compact" if _is_compact(value) else "invariant"
    if is_transcript_row(value):
        return "agentv-transcript"
    if not isinstance(value, dict):
        raise TraceError(NOT_A_TRACE)
    if "messages" in value:
        _events_list(value["messages"], "messages")
        return "invariant-object"
    if "trace" in value:
        events = value["trace"]
        if not isinstance(events, list):
            raise TraceError("trace must be a list of events")
        return "invariant-document" if _has_roles(events) else "agentv"
    if "output" in value and ("text" in value or isinstance(value["output"], list)):
        _events_list(value["output"], "output")
        return "agentv-cli"
    if "trace_summary" in value:
        return "agentv-summary"
    if "metadata" in value:
        return "metadata"
    raise TraceError(NOT_A_TRACE)


def _meta(value: Any) -> TraceMeta:
    raw = value.get("metadata") if isinstance(value, dict) else None
    return TraceMeta.from_dict(raw) if isinstance(raw, dict) else TraceMeta(trace_id="")


def _tokens(usage: dict[str, Any], key: str) -> int:
    value = usage.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 2**63:
        raise TraceError(f"token_usage.{key} must be a whole number")
    return int(value)


def _cli_meta(value: dict[str, Any]) -> TraceMeta:
    meta = _meta(value)
    usage = value.get("token_usage")
    if usage is not None and not isinstance(usage, dict):
        raise TraceError("token_usage must be an object")
    if usage is not None:
        meta.usage.input_tokens = _tokens(usage, "input")
        meta.usage.output_tokens = _tokens(usage, "output")
    took = finite_number(value.get("duration_ms"))
    if took is not None:
        meta.duration_ms = took
    return meta


#: shape -> (events of the value, its trace metadata)
_TRACES: dict[str, Callable[[Any], tuple[list[Message], TraceMeta]]] = {
    "invariant": lambda v: (invariant_events(v), TraceMeta(trace_id="")),
    "invariant-object": lambda v: (invariant_events(v["messages"]), _meta(v)),
    "invariant-document": lambda v: (invariant_events(v["trace"]), _meta(v)),
    "agentv": lambda v: (agentv_events(v["trace"]), _meta(v)),
    "compact": lambda v: (compact_messages(v), TraceMeta(trace_id="")),
    "agentv-cli": lambda v: (compact_messages(v["output"]), _cli_meta(v)),
    "agentv-transcript": _transcript,
}


def decode(value: Any) -> Decoded:
    """Decode one JSON value of any shape; :class:`TraceError` says what is wrong."""
    shape = shape_of(value)
    if shape in _TRACES:
        events, meta = _TRACES[shape](value)
        return Decoded(shape, Trace(events=events, meta=meta), meta=meta)
    raw = value.get("metadata")
    if raw is not None and not isinstance(raw, dict):
        raise TraceError("metadata must be an object")
    summary = value.get("trace_summary")
    return Decoded(
        shape,
        None,
        meta=_meta(value),
        summary=TraceSummary.from_dict(summary) if isinstance(summary, Mapping) else None,
        raw_metadata=raw,
    )


def decode_trace(value: Any) -> Trace:
    """The trace in ``value``; :class:`TraceError` when it holds none (a metadata record)."""
    decoded = decode(value)
    if decoded.trace is None:
        raise TraceError(f"a {decoded.shape} record holds no trace events")
    return decoded.trace

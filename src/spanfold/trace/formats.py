"""Encode traces for files: every format as a JSON value, and as one JSONL line. (Reading: :mod:`.decode`.)

=================  =============================================================================
format             one trace as
=================  =============================================================================
``invariant``      a bare Invariant event list (``style="object"``: ``{"messages": [...], "metadata"}``)
``agentv``         ``{"trace": [TraceEvent], "trace_summary": TraceSummary, <AgentV's trace fields>, "metadata"}``
``agentv-transcript`` AgentV transcript rows, one line per message (:mod:`.transcript`)
``compact``        AgentV compact messages ``[{role, content, tool_calls: [{tool, input, output, ...}]}]``
``agentv-cli``     ``{text, output: [compact message], token_usage, duration_ms}``
=================  =============================================================================

The ``agentv`` document keeps the seed design's events and summary (``eventCount`` counts every event there) and adds
AgentV 4.42's names beside them (:mod:`.agentv`): ``toolCalls``, ``llmCallCount`` and ``toolDurations`` in the
summary, ``tokenUsage``, ``costUsd``, ``durationMs``, ``startTime`` and ``endTime`` in the document, each when known.

Every text this module returns can be written as UTF-8: a lone surrogate (half of an emoji cut by a provider, a file
name decoded with ``surrogateescape``), which UTF-8 cannot hold, is written as its JSON escape (``"\\ud800"``), so
the trace is kept and reads back the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spanfold.codecs import jsonio
from spanfold.trace.model import TIMESTAMP_INFERRED, Message, Trace
from spanfold.trace.timing import steps_by_event

FORMATS = ("invariant", "agentv", "agentv-transcript", "compact", "agentv-cli")
#: Invariant line styles: a bare event list, or the importer's ``{messages, metadata}`` object.
INVARIANT_STYLES = ("list", "object")
#: When nothing at all dates an event (an Invariant file without timestamps or metadata), AgentV still needs one.
UNKNOWN_TIME = "1970-01-01T00:00:00Z"


def _dumps(value: Any, *, pretty: bool = False) -> str:
    """JSON text (compact, or indented), objects as their ``str``, NaN and Infinity as null
    (:mod:`spanfold.codecs.jsonio`)."""
    return writable(jsonio.dumps(value, str, indent=pretty))


def writable(text: str) -> str:
    """JSON ``text`` with every lone surrogate as its escape (``\\udXXX``): text that UTF-8 can encode. (Outside a
    JSON string the escape would mean something else; in JSON text every non-ASCII character is inside one.)"""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def invariant_line(trace: Trace) -> str:
    """One JSONL line: exactly the Invariant event list (a bare JSON list)."""
    return _dumps(trace.to_invariant())


def meta_dict(trace: Trace) -> dict[str, Any]:
    """The trace's metadata as it is written: each step with the position of its first event (``event``) where the
    events tell it (:func:`spanfold.trace.timing.steps_by_event`: a fold's events name their spans)."""
    meta = trace.meta.to_dict()
    if not trace.meta.steps:
        return meta
    linked = {id(step): n for n, step in steps_by_event(trace.meta.steps, trace.events).items()}
    raws = meta["steps"]  # to_dict's, one per step in order
    for i, step in enumerate(trace.meta.steps):
        n = linked.get(id(step))
        if n is not None:
            raws[i]["event"] = n
    return meta


def invariant_object(trace: Trace, *, timestamps: bool = True) -> dict[str, Any]:
    """The Invariant importer's object line: ``{"messages": [event, ...], "metadata": {...}}``."""
    return {"messages": trace.to_invariant(timestamps=timestamps), "metadata": meta_dict(trace)}


def _tool_names(trace: Trace) -> dict[str, str]:
    return {tc.id: tc.name for tc in trace.tool_calls() if tc.id is not None}


def _message_event(msg: Message, kind: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"role": msg.role, **msg.metadata}
    if kind == "error":
        meta["error"] = msg.error or {"type": "error"}
    if isinstance(msg.content, list):
        meta["content"] = msg.content  # the chunks (images too); text holds their text
    event: dict[str, Any] = {"type": kind, "timestamp": msg.timestamp}
    if msg.content is not None:  # no text at all (content capture off) is not an empty text
        event["text"] = msg.text()
    event["metadata"] = meta
    return event


def agentv_events(trace: Trace) -> list[dict[str, Any]]:
    """The trace as AgentV TraceEvents: a message with calls is its text (when any) then one ``tool_call`` each."""
    names = _tool_names(trace)
    events: list[dict[str, Any]] = []
    for msg in trace.events:
        ts = msg.timestamp
        if msg.role == "error":
            events.append(_message_event(msg, "error"))
            continue
        if msg.role == "tool":
            ev: dict[str, Any] = {
                "type": "tool_result",
                "timestamp": ts,
                "id": msg.tool_call_id,
                "name": msg.name if msg.name is not None else names.get(msg.tool_call_id or ""),
                "output": msg.content,
            }
            meta = dict(msg.metadata)
            if msg.error is not None:
                meta["error"] = msg.error
            if meta:
                ev["metadata"] = meta
            events.append(ev)
            continue
        step = bool(msg.content) or not msg.tool_calls
        if step:
            events.append(_message_event(msg, "model_step" if msg.role == "assistant" else "message"))
        for tc in msg.tool_calls:
            events.append({"type": "tool_call", "timestamp": ts, "id": tc.id, "name": tc.name, "input": tc.arguments})
            if not step:  # no model_step event: its first call starts the message and carries its metadata
                events[-1]["metadata"] = {"role": msg.role, **msg.metadata}
                step = True
    last = trace.meta.start or trace.meta.end or UNKNOWN_TIME
    for ev in events:  # an undated event takes the time of the one before it (the first: the trace's start)
        if ev["timestamp"] is None:
            ev["timestamp"] = last
            ev.setdefault("metadata", {})[TIMESTAMP_INFERRED] = True  # so reading it back does not invent a time
        last = ev["timestamp"]
    return events


def agentv_document(trace: Trace, *, summary_only: bool = False) -> dict[str, Any]:
    """``{trace: [TraceEvent], trace_summary: TraceSummary, metadata}`` (``summary_only``: without ``trace``)."""
    from spanfold.trace.agentv import run_metrics

    metrics = run_metrics(trace)
    out: dict[str, Any] = {} if summary_only else {"trace": agentv_events(trace)}
    out["trace_summary"] = {**trace.summary().to_dict(), **metrics.summary_fields()}
    out.update(metrics.trace_fields())
    out["metadata"] = meta_dict(trace)
    return out


def agentv_line(trace: Trace) -> str:
    return _dumps(agentv_document(trace))


def transcript_lines(trace: Trace, *, test_id: str | None = None, target: str | None = None) -> str:
    """The run's AgentV transcript rows, one JSON line each (no newline after the last; empty for no events)."""
    from spanfold.trace.transcript import transcript_rows

    return "\n".join(_dumps(row) for row in transcript_rows(trace, test_id=test_id, target=target))


ENCODERS: dict[str, Callable[[Trace], str]] = {
    "invariant": invariant_line,
    "agentv": agentv_line,
    "agentv-transcript": transcript_lines,
}


def encode_line(trace: Trace, fmt: str) -> str:
    """The trace as one JSON line (no newline) in format ``fmt`` (as the exporter's writers write it; an
    ``agentv-transcript`` run is one line per message)."""
    try:
        return ENCODERS[fmt](trace)
    except KeyError:
        raise ValueError(f"unknown trace format {fmt!r}; expected one of {', '.join(ENCODERS)}") from None


def meta_line(trace: Trace) -> str:
    """The sibling metadata record of a trace."""
    return _dumps(meta_record(trace))


def meta_record(trace: Trace) -> dict[str, Any]:
    return {"metadata": meta_dict(trace), "summary": trace.summary().to_dict()}


def to_value(trace: Trace, fmt: str, *, style: str = "list", summary_only: bool = False) -> Any:
    """The trace as a JSON value in ``fmt`` (what ``spanfold convert`` writes; Invariant events keep timestamps)."""
    if summary_only and fmt != "agentv":
        raise ValueError("summary-only output is an AgentV record (--to agentv)")
    if fmt == "invariant":
        return invariant_object(trace) if style == "object" else trace.to_invariant(timestamps=True)
    if fmt == "agentv":
        return agentv_document(trace, summary_only=summary_only)
    if fmt == "agentv-transcript":  # a list of rows, each written as a line of its own
        from spanfold.trace.transcript import transcript_rows

        return transcript_rows(trace)
    if fmt in ("compact", "agentv-cli"):  # the CLI's formats: loaded when asked for (not by init()'s writers)
        from spanfold.trace.compact import agentv_cli_document, compact_messages

        return compact_messages(trace) if fmt == "compact" else agentv_cli_document(trace)
    raise ValueError(f"unknown trace format {fmt!r}; expected one of {', '.join(FORMATS)}")


def dumps(value: Any, *, pretty: bool = False) -> str:
    """One compact JSON line (no newline), non-ASCII kept (lone surrogates escaped); ``pretty``: indented."""
    return _dumps(value, pretty=pretty)

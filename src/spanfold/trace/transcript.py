"""AgentV transcript rows (``agentv.transcript.v1``): what ``agentv eval run EVAL.yaml --transcript FILE`` grades.

One JSON line per message of a run, the run's rows together and in order::

    {"schema_version": "agentv.transcript.v1", "test_id": "weather-4bf92f35...", "target": "spanfold",
     "message_index": 2, "role": "assistant",
     "tool_calls": [{"tool": "get_weather", "input": {"city": "Paris"}, "output": "18°C", "id": "call_1",
                     "status": "ok", "start_time": "...", "end_time": "...", "duration_ms": 0.05}],
     "start_time": "...", "end_time": "...", "duration_ms": 15.9, "token_usage": {"input": 58, "output": 14},
     "metadata": {...}, "transcript_token_usage": {"input": 474, "output": 51}, "transcript_duration_ms": 91.9,
     "trace": {"trace_id": "4bf92f35..."}, "source": {"kind": "otlp", "provider": "spanfold", "session_id": ...}}

The messages are :func:`spanfold.trace.agentv.agentv_messages` (each tool's output inside its call: no tool rows).
AgentV groups rows by ``test_id``; ``agentv eval run --transcript`` hands the N-th run to the N-th test of the eval
file. A run's ``test_id`` is its agent's name and its trace id (``weather-4bf92f35...``; the trace id alone when the
run has no agent name) unless the caller names it. The run-level fields (``transcript_token_usage``,
``transcript_duration_ms``, ``transcript_cost_usd``) are on every row, as AgentV writes them, and only when known;
who the run is for and what it belongs to (``user_id``, ``session_id``, ``tags``, ``metadata``, ``prompt``, when set)
ride in ``source.metadata``, the row's run-level facts (``source.session_id`` stays the run's id: AgentV's one
transcript per session).
"""

from __future__ import annotations

from typing import Any

from spanfold.trace.agentv import agentv_messages, run_cost, run_duration, run_tokens
from spanfold.trace.model import Trace

SCHEMA_VERSION = "agentv.transcript.v1"
#: ``target`` of the rows unless the caller names one.
DEFAULT_TARGET = "spanfold"
#: ``source.kind``: spanfold's runs are folded from OpenTelemetry spans.
SOURCE_KIND = "otlp"


def default_test_id(trace: Trace, n: int | None = None) -> str:
    """``<agent name>-<trace id>``; the trace id alone without a name. A trace without an id (a file without its
    metadata) is ``<agent name or "trace">-<n>``, its place among the runs written (``n``)."""
    meta = trace.meta
    if not meta.trace_id:
        return f"{meta.name or 'trace'}-{n if n is not None else 1}"
    return f"{meta.name}-{meta.trace_id}" if meta.name else meta.trace_id


def _source(trace: Trace) -> dict[str, Any]:
    meta = trace.meta
    source: dict[str, Any] = {"kind": SOURCE_KIND, "provider": "spanfold", "session_id": meta.trace_id or "trace"}
    if meta.models:
        source["model"] = meta.models[0]
    if meta.start is not None:
        source["timestamp"] = meta.start
    facts = {"name": meta.name, "service": meta.service, "models": meta.models or None, "status": meta.status}
    source["metadata"] = {**{k: v for k, v in facts.items() if v is not None}, **meta.context()}
    return source


def transcript_rows(trace: Trace, *, test_id: str | None = None, target: str | None = None) -> list[dict[str, Any]]:
    """The run as transcript rows, one per message (JSON-ready)."""
    run: dict[str, Any] = {}
    tokens = run_tokens(trace)
    if tokens is not None:
        run["transcript_token_usage"] = tokens
    took = run_duration(trace.meta)
    if took is not None:
        run["transcript_duration_ms"] = took
    cost = run_cost(trace.meta)
    if cost is not None:
        run["transcript_cost_usd"] = cost
    source = _source(trace)
    name = default_test_id(trace) if test_id is None else test_id
    rows: list[dict[str, Any]] = []
    for index, message in enumerate(agentv_messages(trace)):
        row: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "test_id": name,
            "target": DEFAULT_TARGET if target is None else target,
            "message_index": index,
            **message,
            **run,
        }
        if trace.meta.trace_id:
            ref = {"trace_id": trace.meta.trace_id}
            span = message.get("metadata", {}).get("span_id")
            if isinstance(span, str):
                ref["span_id"] = span
            row["trace"] = ref
        row["source"] = source
        rows.append(row)
    return rows

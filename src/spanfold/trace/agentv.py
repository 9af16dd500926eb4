"""A run as AgentV 4.42 reads it: its messages and the metrics its graders score.

AgentV's own view of a run is a list of messages, each tool's output inside its call (no tool messages), each
message and call with its timing and tokens, plus the run's token usage, cost and duration. Its graders read that:
``tool-trajectory`` the calls in order, ``execution-metrics`` a summary computed from the messages (tool calls by
name, LLM calls as the assistant messages, tool durations) and the run's tokens, cost and duration. This module
computes both once, for every writer and check that speaks AgentV's current names:

* :func:`agentv_messages`: the messages, as a transcript row carries them (``role``, ``content``, ``tool_calls``
  ``[{tool, input, output, id, status, start_time, end_time, duration_ms}]``, ``start_time``, ``end_time``,
  ``duration_ms``, ``token_usage``, ``metadata``). A failed model call is an assistant message without content,
  its error in ``metadata.error``: it was an LLM call. Timing comes from the trace's steps (a model call's and a
  tool run's own start and duration) where the metadata has them, else from the events' times.
* :func:`run_metrics`: what AgentV's ``TraceSummary`` and its execution metrics hold for those messages.

The run's cost is read from its metadata (``costUsd``, ``cost_usd`` or ``transcript_cost_usd``) when present and
left out otherwise; tokens are left out when no model call reported any, never written as zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from spanfold.trace.compact import Folded, duration_ms, fold, parse_time
from spanfold.trace.model import Message, StepTime, Trace, TraceMeta, finite_number
from spanfold.trace.timing import steps_by_event

#: Metadata keys a run's cost in US dollars is read from, first found wins.
COST_KEYS = ("costUsd", "cost_usd", "transcript_cost_usd")


def _end(start: str | None, took: float | None) -> str | None:
    at = parse_time(start)
    if at is None or took is None:
        return None
    return (at + timedelta(milliseconds=took)).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _usage(step: StepTime | None, event: Message) -> dict[str, int] | None:
    if step is not None and step.usage is not None:
        return {"input": step.usage.input_tokens, "output": step.usage.output_tokens}
    raw = event.metadata.get("usage")
    if isinstance(raw, dict):
        tokens = {"input": raw.get("input_tokens"), "output": raw.get("output_tokens")}
        if all(isinstance(v, int) and not isinstance(v, bool) for v in tokens.values()):
            return {k: int(v) for k, v in tokens.items() if v is not None}
    return None


def _timed(out: dict[str, Any], step: StepTime | None, fallback: str | None) -> None:
    """``start_time``, ``end_time`` and ``duration_ms`` of a message or call from its step, else its own time."""
    if step is not None and step.start is not None:
        out["start_time"] = step.start
        end = _end(step.start, step.duration_ms)
        if end is not None:
            out["end_time"] = end
        if step.duration_ms is not None:
            out["duration_ms"] = step.duration_ms
    elif fallback is not None:
        out["start_time"] = fallback


def _calls(folded: Folded, trace: Trace, steps: dict[int, StepTime]) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    for pending in folded.calls:
        compact = pending.call
        call: dict[str, Any] = {"tool": compact["tool"], "input": compact["input"]}
        if "output" in compact:
            call["output"] = compact["output"]
        if "id" in compact:
            call["id"] = compact["id"]
        answer = pending.answer
        if answer is not None:
            call["status"] = "error" if trace.events[answer].error is not None else "ok"
        step = steps.get(answer) if answer is not None else None
        if step is not None and step.kind == "tool" and step.start is not None:
            _timed(call, step, None)
        else:
            for key in ("start_time", "end_time", "duration_ms"):
                if key in compact:
                    call[key] = compact[key]
        calls.append(call)
    return calls


def agentv_messages(trace: Trace) -> list[dict[str, Any]]:
    """The run as AgentV's messages (JSON-ready; the module docstring says what each holds)."""
    steps = steps_by_event(trace.meta.steps, trace.events) if trace.meta.steps else {}
    out: list[dict[str, Any]] = []
    for folded in fold(trace):
        event = trace.events[folded.position]
        failed = event.role == "error"
        message: dict[str, Any] = {"role": "assistant" if failed else event.role}
        if not failed and event.content is not None:
            message["content"] = event.text()
        if folded.calls:
            message["tool_calls"] = _calls(folded, trace, steps)
        step = steps.get(folded.position)
        model_step = step if step is not None and step.kind == "model" else None
        _timed(message, model_step, event.timestamp)
        usage = _usage(model_step, event) if message["role"] == "assistant" else None
        if usage is not None:
            message["token_usage"] = usage
        metadata = dict(event.metadata)
        if failed:
            metadata["error"] = event.error or {"type": "error"}
        if metadata:
            message["metadata"] = metadata
        out.append(message)
    return out


# ---- metrics -------------------------------------------------------------------------------------------------


def run_cost(meta: TraceMeta) -> float | None:
    """The run's cost in US dollars as its metadata states it (:data:`COST_KEYS`), or None: never a guess."""
    for key in COST_KEYS:
        cost = finite_number(meta.extra.get(key))
        if cost is not None and cost >= 0:
            return cost
    return None


def run_tokens(trace: Trace) -> dict[str, int] | None:
    """``{input, output}`` tokens of the run, or None when no model call reported usage."""
    usage = trace.meta.usage
    reported = any(s.kind == "model" and s.usage is not None for s in trace.meta.steps)
    if not reported and not (usage.input_tokens or usage.output_tokens):
        return None
    return {"input": usage.input_tokens, "output": usage.output_tokens}


def run_duration(meta: TraceMeta) -> float | None:
    """The run's duration in milliseconds (its own, else from its start and end), or None."""
    return meta.duration_ms if meta.duration_ms is not None else duration_ms(meta.start, meta.end)


@dataclass(frozen=True, slots=True)
class RunMetrics:
    """What AgentV's graders read of a run: its TraceSummary (``toolCalls``, ``llmCallCount``,
    ``toolDurations``), the number of tool calls (AgentV's ``eventCount``), and its execution metrics."""

    tool_calls: dict[str, int]
    tool_call_count: int
    llm_calls: int
    tool_durations: dict[str, list[float]] | None
    tokens: dict[str, int] | None
    cost_usd: float | None
    duration_ms: float | None
    start: str | None
    end: str | None
    calls: list[dict[str, Any]]  # every call in order (the messages' tool_calls)

    def summary_fields(self) -> dict[str, Any]:
        """AgentV's current TraceSummary fields that the seed design's summary lacks."""
        out: dict[str, Any] = {"toolCalls": self.tool_calls, "llmCallCount": self.llm_calls}
        if self.tool_durations is not None:
            out["toolDurations"] = self.tool_durations
        return out

    def trace_fields(self) -> dict[str, Any]:
        """AgentV's trace-level execution fields, each only when known."""
        out: dict[str, Any] = {}
        if self.tokens is not None:
            out["tokenUsage"] = self.tokens
        if self.cost_usd is not None:
            out["costUsd"] = self.cost_usd
        if self.duration_ms is not None:
            out["durationMs"] = self.duration_ms
        if self.start is not None:
            out["startTime"] = self.start
        if self.end is not None:
            out["endTime"] = self.end
        return out


def _call_duration(call: dict[str, Any]) -> float | None:
    took = finite_number(call.get("duration_ms"))
    if took is not None:
        return took
    return duration_ms(call.get("start_time"), call.get("end_time"))


def run_metrics(trace: Trace, messages: list[dict[str, Any]] | None = None) -> RunMetrics:
    """The metrics of ``trace`` as AgentV computes them from its messages (:func:`agentv_messages`, passed in when
    already made) and its metadata."""
    messages = agentv_messages(trace) if messages is None else messages
    counts: dict[str, int] = {}
    durations: dict[str, list[float]] = {}
    calls: list[dict[str, Any]] = []
    llm_calls = 0
    for message in messages:
        if message["role"] == "assistant":
            llm_calls += 1
        for call in message.get("tool_calls", ()):
            calls.append(call)
            name = call["tool"]
            counts[name] = counts.get(name, 0) + 1
            took = _call_duration(call)
            if took is not None:
                durations.setdefault(name, []).append(took)
    meta = trace.meta
    return RunMetrics(
        tool_calls=counts,
        tool_call_count=len(calls),
        llm_calls=llm_calls,
        tool_durations=durations or None,
        tokens=run_tokens(trace),
        cost_usd=run_cost(meta),
        duration_ms=run_duration(meta),
        start=meta.start,
        end=meta.end,
        calls=calls,
    )

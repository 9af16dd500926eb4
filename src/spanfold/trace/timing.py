"""Which event of a trace each of its metadata's steps (:class:`~spanfold.trace.model.StepTime`) belongs to, for
every reader that shows step times beside the events (``spanfold show``, ``spanfold ui``).

A step names its first event (``event``: its position in the event list) when it was written with one; else it is
found by its span (the first event of its kind whose metadata names that span, as the fold's events and AgentV's
carry it: an assistant or error event for a model call, a tool output for a tool run), and a tool run by its call
id (the tool output answering it). A step found neither way stays unlinked.

A step beside the conversation (embeddings, retrieval, rerank, memory) is no event's own: :func:`asides_by_event`
gives each the event it precedes.
"""

from __future__ import annotations

from collections.abc import Sequence

from spanfold.trace.model import ASIDE_KINDS, Message, StepTime


def asides_by_event(steps: Sequence[StepTime], events: Sequence[Message]) -> dict[int | None, list[StepTime]]:
    """Event position -> the steps beside the conversation that precede it, in the metadata's order (None: after
    the last event, or unlinked)."""
    out: dict[int | None, list[StepTime]] = {}
    for step in steps:
        if step.kind in ASIDE_KINDS:
            at = step.event if step.event is not None and 0 <= step.event < len(events) else None
            out.setdefault(at, []).append(step)
    return out


def steps_by_event(steps: Sequence[StepTime], events: Sequence[Message]) -> dict[int, StepTime]:
    """Event position -> the model call or tool run whose first event it is (one pass over the events, to the last
    one needed)."""
    steps = [s for s in steps if s.kind not in ASIDE_KINDS]
    out: dict[int, StepTime] = {}
    unlinked = [s for s in steps if s.event is None or not 0 <= s.event < len(events)]
    for step in steps:
        if step.event is not None and 0 <= step.event < len(events):
            out.setdefault(step.event, step)
    if not unlinked:
        return out
    by_span: dict[tuple[str, str], int] = {}  # (kind, span id) -> event
    by_call: dict[str, int] = {}
    wanted = {(s.kind, s.span_id or "") for s in unlinked}  # once each is found, the call ids are not needed
    for n, event in enumerate(events):
        role = event.role
        if role == "tool":
            kind = "tool"
            if event.tool_call_id is not None:
                by_call.setdefault(event.tool_call_id, n)
        elif role == "assistant" or role == "error":
            kind = "model"
        else:  # no step's event
            continue
        span = event.metadata.get("span_id")
        if isinstance(span, str) and (kind, span) not in by_span:
            by_span[kind, span] = n
            wanted.discard((kind, span))
            if not wanted:
                break
    for step in unlinked:
        found = by_span.get((step.kind, step.span_id or ""))
        if found is None and step.kind == "tool" and step.call_id is not None:
            found = by_call.get(step.call_id)
        if found is not None:
            out.setdefault(found, step)
    return out

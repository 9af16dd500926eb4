"""Which event of a trace each of its metadata's steps (:class:`~spanfold.trace.model.StepTime`) belongs to, for
every reader that shows step times beside the events (``spanfold show``, ``spanfold ui``).

A step names its first event (``event``: its position in the event list) when the fold linked them; else a tool
run is found by its call id (the tool output answering it) and a model call by its span (the first assistant or
error event whose metadata names that span, as AgentV events carry it). A step found neither way stays unlinked.
"""

from __future__ import annotations

from collections.abc import Sequence

from spanfold.trace.model import Message, StepTime


def steps_by_event(steps: Sequence[StepTime], events: Sequence[Message]) -> dict[int, StepTime]:
    """Event position -> the step whose first event it is (one pass over the events)."""
    out: dict[int, StepTime] = {}
    unlinked = [s for s in steps if s.event is None or not 0 <= s.event < len(events)]
    for step in steps:
        if step.event is not None and 0 <= step.event < len(events):
            out.setdefault(step.event, step)
    if not unlinked:
        return out
    by_span: dict[str, int] = {}
    by_call: dict[str, int] = {}
    for n, event in enumerate(events):
        span = event.metadata.get("span_id")
        if event.role in ("assistant", "error") and isinstance(span, str):
            by_span.setdefault(span, n)
        elif event.role == "tool" and event.tool_call_id is not None:
            by_call.setdefault(event.tool_call_id, n)
    for step in unlinked:
        if step.kind == "tool":
            found = by_call.get(step.call_id) if step.call_id is not None else None
        else:
            found = by_span.get(step.span_id) if step.span_id is not None else None
        if found is not None:
            out.setdefault(found, step)
    return out

"""Dialect: pydantic-ai's own instrumentation (``Agent.instrument_all()``, ``Agent(instrument=True)``, the
``Instrumentation`` capability), recognised by its scope ``pydantic-ai`` (one comparison).

Versions 5 and 6 of its attribute format (the default) write the contract: ``chat {model}`` spans with
``gen_ai.input.messages`` / ``gen_ai.output.messages``, ``execute_tool {name}`` with ``gen_ai.tool.call.*``,
``invoke_agent {name}`` with ``gen_ai.agent.name`` and ``gen_ai.conversation.id``; those fold untouched. This
module reads what the older formats write:

versions 2-4 (``InstrumentationSettings(version=2)``, and pydantic-ai releases before version 5 was the default)
    tool spans named ``running tool`` with the arguments in ``tool_arguments`` and the result in ``tool_response``;
    agent spans named ``agent run`` with ``agent_name``.
version 1 (``event_mode="attributes"``)
    the model span's messages as one ``events`` attribute: a JSON list of the GenAI events
    (``gen_ai.system.message`` / ``gen_ai.user.message`` / ``gen_ai.assistant.message`` / ``gen_ai.tool.message``
    / ``gen_ai.choice``, ``event.name`` beside the body's fields), read as the log-event dialect reads them
    (:func:`spanfold.exporter.dialects.genai_events.messages`).

Its model spans beside an SDK patch's span of the same call (spanfold's own openai patch under pydantic-ai's
``chat`` span) are one model step: the fold keeps one (:func:`spanfold.exporter.fold.folding.drop_duplicate_calls`).
Never imports :mod:`spanfold.instrumentation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from spanfold import semconv
from spanfold.exporter.dialects import genai_events as dialect_genai_events
from spanfold.exporter.dialects.shapes import dumps, loads
from spanfold.exporter.records import SpanRecord

SCOPE: Final = semconv.PYDANTIC_AI_SCOPE
EVENTS: Final = semconv.PYDANTIC_AI_EVENTS


def _tool(attrs: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(attrs)
    out[semconv.OPERATION_NAME] = semconv.OP_EXECUTE_TOOL
    if semconv.PYDANTIC_AI_TOOL_ARGUMENTS in attrs:
        out.setdefault(semconv.TOOL_CALL_ARGUMENTS, attrs[semconv.PYDANTIC_AI_TOOL_ARGUMENTS])
    if semconv.PYDANTIC_AI_TOOL_RESPONSE in attrs:
        out.setdefault(semconv.TOOL_CALL_RESULT, attrs[semconv.PYDANTIC_AI_TOOL_RESPONSE])
    return out


def _agent(attrs: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(attrs)
    out[semconv.OPERATION_NAME] = semconv.OP_INVOKE_AGENT
    if semconv.PYDANTIC_AI_AGENT_NAME in attrs:
        out.setdefault(semconv.AGENT_NAME, attrs[semconv.PYDANTIC_AI_AGENT_NAME])
    return out


def _events(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Version 1: the ``events`` attribute written into the contract's message attributes."""
    out = dict(attrs)
    raw = loads(attrs[EVENTS])
    events = [
        (str(e.get(semconv.PYDANTIC_AI_EVENT_NAME)), e)
        for e in (raw if isinstance(raw, list) else ())
        if isinstance(e, dict)
    ]
    inputs, outputs, reasons = dialect_genai_events.messages(events)
    if inputs:
        out.setdefault(semconv.INPUT_MESSAGES, dumps(inputs))
    if outputs:
        out.setdefault(semconv.OUTPUT_MESSAGES, dumps(outputs))
    if reasons:
        out.setdefault(semconv.RESPONSE_FINISH_REASONS, reasons)
    out.setdefault(semconv.OPERATION_NAME, semconv.OP_CHAT)
    return out


def rewrite(record: SpanRecord) -> tuple[str, dict[str, Any]] | None:
    """A pydantic-ai span of an older attribute format in the contract's attributes; None for any other span
    (and for pydantic-ai's current spans, which need nothing)."""
    if record.scope_name != SCOPE:
        return None
    attrs = record.attributes
    name = record.name
    if name == semconv.PYDANTIC_AI_TOOL_SPAN or semconv.PYDANTIC_AI_TOOL_ARGUMENTS in attrs:
        out = _tool(attrs)
        return semconv.span_name(semconv.OP_EXECUTE_TOOL, _text(out.get(semconv.TOOL_NAME))), out
    if name == semconv.PYDANTIC_AI_AGENT_SPAN:
        out = _agent(attrs)
        return semconv.span_name(semconv.OP_INVOKE_AGENT, _text(out.get(semconv.AGENT_NAME))), out
    if EVENTS in attrs and semconv.INPUT_MESSAGES not in attrs:
        return name, _events(attrs)
    return None


def _text(value: Any) -> str | None:
    return str(value) if value is not None else None

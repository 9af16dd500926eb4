"""Dialect: Google ADK's own spans (scope ``gcp.vertex.agent``), recognised by their scope (one comparison).

ADK opens ``invoke_workflow`` (not a step), ``invoke_agent {name}`` (``gen_ai.agent.name``,
``gen_ai.conversation.id``), model spans and ``execute_tool {name}`` spans:

telemetry schema 2 (the default since ADK 2.x; ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=2``)
    ``generate_content {model}`` spans in the contract's attributes (``gen_ai.input.messages`` ... with
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY``); tool spans with ``gen_ai.tool.call.arguments``
    / ``result``.
schema 1 (``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``, and ADK 1.x)
    a ``call_llm`` span with the request and response as JSON in ``gcp.vertex.agent.llm_request`` (``contents``
    and ``config.system_instruction`` of the Gemini API: ``text``, ``function_call``, ``function_response``
    parts) and ``gcp.vertex.agent.llm_response`` (``content``, ``finish_reason``, ``usage_metadata``), rewritten
    here into a model step; its child ``generate_content`` span (no content) describes the same call and the fold
    keeps one (:func:`spanfold.exporter.fold.folding.drop_duplicate_calls`). Tool spans carry
    ``gcp.vertex.agent.tool_call_args`` / ``tool_response``.

ADK wraps a tool's plain return value as ``{"result": value}``: a result (and a ``function_response``) that is
exactly that is read as the value. Another producer's model spans under an ADK span (spanfold's litellm or
google-genai patch of the calls ADK's model makes) send the same wrapper, ADK's ``LiteLlm`` as its JSON text in the
``tool`` message: :func:`unwrap_sent_outputs` reads it the same way, so a run gives one trace however it was traced.
Outside ADK (no ADK span above the call) a tool output is what the model was sent, whatever it looks like.

ADK's tool spans carry ADK's own call id (``adk-...``) with Gemini, whose messages have none: the id is left out, and
the fold pairs each tool span with the model's call by name and arguments. The span ADK opens around parallel tool
runs (``execute_tool (merged)``) is not a tool run.
Never imports :mod:`spanfold.instrumentation`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Any, Final

from spanfold import semconv
from spanfold.exporter.dialects.shapes import dumps, loads, tool_call
from spanfold.exporter.records import SpanRecord
from spanfold.exporter.steps import ModelStep, SemconvMessage, Step

SCOPE: Final = semconv.ADK_SCOPE
#: The operation a merged-tools span is given: not one the fold reads.
NOT_A_STEP: Final = "adk.merged_tools"


def unwrap(value: Any) -> Any:
    """ADK's ``{"result": value}`` wrapping of a tool's plain return value, as the value."""
    if isinstance(value, dict) and len(value) == 1 and "result" in value:
        return value["result"]
    return value


def _result(raw: Any) -> Any:
    value = unwrap(loads(raw))
    if isinstance(value, str):
        return value
    return raw if value is None else dumps(value)


def _tool(attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    out = dict(attrs)
    if out.get(semconv.TOOL_NAME) == semconv.ADK_MERGED_TOOLS:
        out[semconv.OPERATION_NAME] = NOT_A_STEP
        return NOT_A_STEP, out
    out.pop(semconv.TOOL_CALL_ID, None)
    args = out.get(semconv.TOOL_CALL_ARGUMENTS, attrs.get(semconv.ADK_TOOL_CALL_ARGS))
    if args is not None:
        out[semconv.TOOL_CALL_ARGUMENTS] = args
    result = out.get(semconv.TOOL_CALL_RESULT, attrs.get(semconv.ADK_TOOL_RESPONSE))
    if result is not None:
        out[semconv.TOOL_CALL_RESULT] = _result(result)
    name = out.get(semconv.TOOL_NAME)
    return semconv.span_name(semconv.OP_EXECUTE_TOOL, str(name) if name is not None else None), out


def _unwrap_responses(raw: Any) -> Any:
    """Contract messages with each ``tool_call_response`` unwrapped (:func:`unwrap`)."""
    messages = loads(raw)
    if not isinstance(messages, list):
        return raw
    for msg in messages:
        for part in (msg.get("parts") or ()) if isinstance(msg, dict) else ():
            if isinstance(part, dict) and part.get("type") == semconv.PART_TOOL_CALL_RESPONSE:
                part["response"] = unwrap(part.get("response"))
    return dumps(messages)


# --- other producers' model calls under ADK's spans ------------------------------------------------------------


def _sent(value: Any) -> Any:
    """A tool output as a model call under ADK sent it, the wrapper unwrapped: the wrapper itself (a Gemini
    ``function_response``), or its JSON text (ADK's ``LiteLlm`` sends ``json.dumps`` of it as the ``tool`` message).
    Anything else as it is (the same object)."""
    if not isinstance(value, str):
        return unwrap(value)
    if '"result"' not in value:
        return value
    parsed = loads(value)
    if isinstance(parsed, dict) and len(parsed) == 1 and "result" in parsed:
        return parsed["result"]
    return value


def _sent_message(msg: SemconvMessage) -> SemconvMessage:
    """A message with its tool outputs unwrapped (:func:`_sent`): a new message when one changes (the messages are
    shared between steps: never mutated), else the same one."""
    parts = msg.get("parts")
    if not isinstance(parts, list):
        return msg
    out: list[Any] | None = None
    for i, part in enumerate(parts):
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == semconv.PART_TOOL_CALL_RESPONSE:
            key = "response"
        elif kind == semconv.PART_TEXT and msg.get("role") == "tool":  # a tool message's plain text output
            key = "content"
        else:
            continue
        value = _sent(part.get(key))
        if value is part.get(key):
            continue
        if key == "content" and not isinstance(value, str):
            value = dumps(value)
        out = out if out is not None else list(parts)
        out[i] = {**part, key: value}
    return msg if out is None else {**msg, "parts": out}


def _below_adk(records: Sequence[SpanRecord]) -> dict[int, bool]:
    """Each span: whether an ADK span is above it (its parent, or further up; cycles in bad input end the walk)."""
    parents = {r.span_id: r.parent_id for r in records}
    adk = {r.span_id for r in records if r.scope_name == SCOPE}
    below: dict[int, bool] = {}  # span -> it, or a span above it, is ADK's
    out: dict[int, bool] = {}
    for r in records:
        path: list[int] = []
        seen: set[int] = set()
        found = False
        current = r.parent_id
        while current is not None and current not in seen:
            if current in below:
                found = below[current]
                break
            if current in adk:
                found = True
                break
            path.append(current)
            seen.add(current)
            current = parents.get(current)
        for sid in path:
            below[sid] = found
        out[r.span_id] = found
    return out


def unwrap_sent_outputs(
    records: Sequence[SpanRecord], steps: MutableMapping[int, Step | None], read: Iterable[int]
) -> None:
    """The model steps another producer made of the calls ADK's model sends (a span under an ADK span: spanfold's
    litellm patch under ADK's ``generate_content``), among the steps just ``read`` (by span id; each unwrapped once),
    with the tool outputs their inputs send unwrapped as ADK's own spans are (:func:`_sent`). The evidence is ADK's
    span above the call: a trace with no ADK span is left as it is, at the cost of one comparison per span."""
    if not any(r.scope_name == SCOPE for r in records):
        return
    scopes = {r.span_id: r.scope_name for r in records}
    below = _below_adk(records)
    done: dict[int, SemconvMessage] = {}  # by identity: a history shared by the steps that re-send it, read once
    for span_id in read:
        step = steps.get(span_id)
        if not isinstance(step, ModelStep) or scopes.get(span_id) == SCOPE or not below.get(span_id):
            continue
        inputs = []
        for msg in step.inputs:
            new = done.get(id(msg))
            if new is None:
                new = done[id(msg)] = _sent_message(msg)
            inputs.append(new)
        if any(new is not old for new, old in zip(inputs, step.inputs, strict=True)):
            steps[span_id] = dataclasses.replace(step, inputs=inputs)


# --- schema 1: call_llm --------------------------------------------------------------------------------------


def _gemini_parts(parts: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Gemini parts as (contract parts, tool responses as their own ``tool`` messages)."""
    out: list[dict[str, Any]] = []
    responses: list[dict[str, Any]] = []
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, dict):
            continue
        if part.get("text") is not None and not part.get("thought"):
            out.append({"type": semconv.PART_TEXT, "content": part["text"]})
        elif isinstance(call := part.get("function_call"), dict):
            out.append(tool_call(call.get("id"), call.get("name"), call.get("args")))
        elif isinstance(response := part.get("function_response"), dict):
            body = unwrap(response.get("response"))
            tool = {"type": semconv.PART_TOOL_CALL_RESPONSE, "id": response.get("id"), "response": body}
            responses.append({"role": "tool", "parts": [tool]})
    return out, responses


def _content(content: Any, finish_reason: str | None = None) -> list[dict[str, Any]]:
    if not isinstance(content, dict):
        return []
    role = "assistant" if content.get("role") == "model" else str(content.get("role") or "user")
    parts, responses = _gemini_parts(content.get("parts"))
    extra = {"finish_reason": finish_reason} if finish_reason is not None else {}
    return ([{"role": role, "parts": parts, **extra}] if parts or not responses else []) + responses


def _call_llm(attrs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    out = dict(attrs)
    out[semconv.OPERATION_NAME] = semconv.OP_GENERATE_CONTENT
    request = loads(attrs.get(semconv.ADK_LLM_REQUEST))
    if isinstance(request, dict) and request.get("contents") is not None:
        config = request.get("config")
        system = config.get("system_instruction") if isinstance(config, dict) else None
        if isinstance(system, str):
            out.setdefault(semconv.SYSTEM_INSTRUCTIONS, dumps([{"type": semconv.PART_TEXT, "content": system}]))
        inputs = [m for c in request.get("contents") or () for m in _content(c)]
        out.setdefault(semconv.INPUT_MESSAGES, dumps(inputs))
    response = loads(attrs.get(semconv.ADK_LLM_RESPONSE))
    if isinstance(response, dict) and response.get("content") is not None:
        reason = response.get("finish_reason")
        reason_text = str(reason).lower() if reason is not None else None
        out.setdefault(semconv.OUTPUT_MESSAGES, dumps(_content(response.get("content"), reason_text)))
        if response.get("model_version"):
            out.setdefault(semconv.RESPONSE_MODEL, response["model_version"])
    if attrs.get(semconv.SYSTEM_LEGACY) == SCOPE:  # ADK names itself as the system; the model is Gemini's
        out.pop(semconv.SYSTEM_LEGACY)
    if semconv.ADK_SESSION_ID in attrs:
        out.setdefault(semconv.CONVERSATION_ID, attrs[semconv.ADK_SESSION_ID])
    model = out.get(semconv.REQUEST_MODEL)
    return semconv.span_name(semconv.OP_GENERATE_CONTENT, str(model) if model is not None else None), out


def rewrite(record: SpanRecord) -> tuple[str, dict[str, Any]] | None:
    """An ADK span in the contract's name and attributes; None for other spans."""
    if record.scope_name != SCOPE:
        return None
    attrs = record.attributes
    if record.name == semconv.ADK_CALL_LLM_SPAN:
        return _call_llm(attrs)
    op = attrs.get(semconv.OPERATION_NAME)
    if op == semconv.OP_EXECUTE_TOOL:
        return _tool(attrs)
    if op in (semconv.OP_GENERATE_CONTENT, semconv.OP_CHAT) and semconv.INPUT_MESSAGES in attrs:
        out = dict(attrs)
        out[semconv.INPUT_MESSAGES] = _unwrap_responses(attrs[semconv.INPUT_MESSAGES])
        return record.name, out
    return None

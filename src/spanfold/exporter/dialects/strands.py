"""Dialect: AWS Strands Agents' own spans (``strands.telemetry.tracer``), recognised by their scope (one comparison).

Strands opens ``invoke_agent {name}`` (``gen_ai.agent.name``), ``execute_event_loop_cycle`` (not a step),
``chat`` (a model call) and ``execute_tool {name}`` (``gen_ai.tool.name``, ``gen_ai.tool.call.id``) spans, and
writes the messages as **span events**, the content being the JSON of Bedrock Converse content blocks
(``{"text"}``, ``{"toolUse": {"toolUseId", "name", "input"}}``, ``{"toolResult": {"toolUseId", "status",
"content": [{"text"} | {"json"}]}}``):

default (semconv 1.28 events)
    model span: ``gen_ai.system.message`` / ``gen_ai.user.message`` / ``gen_ai.assistant.message`` /
    ``gen_ai.tool.message`` (``content``), ``gen_ai.choice`` (``message``, ``finish_reason``);
    tool span: ``gen_ai.tool.message`` (``content``: the arguments' JSON, ``id``), ``gen_ai.choice``
    (``message``: the result's blocks).
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``
    ``gen_ai.client.inference.operation.details`` events carrying ``gen_ai.system_instructions`` /
    ``gen_ai.input.messages`` / ``gen_ai.output.messages`` in the contract's shape (tool results as lists of
    blocks, flattened to their text here); tool spans carry ``gen_ai.tool.call.arguments`` / ``result``.

Both are rewritten into the contract's attributes, so a Strands run folds like any other. One pass over the span's
events; never imports :mod:`spanfold.instrumentation`.
"""

from __future__ import annotations

from typing import Any, Final

from spanfold import semconv
from spanfold.exporter.dialects.anthropic_native import blocks_text
from spanfold.exporter.dialects.shapes import dumps, loads, tool_call
from spanfold.exporter.records import SpanRecord

SCOPE: Final = semconv.STRANDS_SCOPE
DETAILS: Final = semconv.STRANDS_DETAILS_EVENT
INPUT_EVENTS: Final = semconv.GENAI_INPUT_EVENTS
CHOICE: Final = semconv.GENAI_CHOICE_EVENT
TOOL_EVENT: Final = next(name for name, role in INPUT_EVENTS.items() if role == "tool")
#: What the latest-conventions events carry (copied onto the span when it has none).
DETAIL_ATTRIBUTES: Final = (semconv.SYSTEM_INSTRUCTIONS, semconv.INPUT_MESSAGES, semconv.OUTPUT_MESSAGES)


def result_text(content: Any) -> Any:
    """A tool result's content blocks (``[{"text"}, {"json"}]``) as text when they are all text, else as they are."""
    if isinstance(content, list) and all(isinstance(b, dict) and set(b) == {"text"} for b in content):
        return "".join(str(b["text"]) for b in content)
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict) and "json" in content[0]:
        return dumps(content[0]["json"])
    return content


def converse_messages(role: str, blocks: Any, finish_reason: str | None = None) -> list[dict[str, Any]]:
    """One Converse message (its content blocks) as contract messages: ``toolResult`` blocks split off as
    ``tool`` messages, the rest one message of ``role``."""
    if isinstance(blocks, str):
        blocks = [{"text": blocks}]
    parts: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    for block in blocks if isinstance(blocks, list) else ():
        if not isinstance(block, dict):
            continue
        if "text" in block:
            parts.append({"type": semconv.PART_TEXT, "content": block["text"]})
        elif isinstance(use := block.get("toolUse"), dict):
            parts.append(tool_call(use.get("toolUseId"), use.get("name"), use.get("input")))
        elif isinstance(result := block.get("toolResult"), dict):
            response = {
                "type": semconv.PART_TOOL_CALL_RESPONSE,
                "id": result.get("toolUseId"),
                "response": result_text(result.get("content")),
            }
            tools.append({"role": "tool", "parts": [response]})
    extra = {"finish_reason": finish_reason} if finish_reason is not None else {}
    out = [{"role": role, "parts": parts, **extra}] if parts or not tools else []
    return out + tools


def _flatten_results(raw: Any) -> Any:
    """Latest-conventions messages with each ``tool_call_response``'s list of blocks as its text."""
    messages = loads(raw)
    if not isinstance(messages, list):
        return raw
    for msg in messages:
        for part in msg.get("parts") or () if isinstance(msg, dict) else ():
            if isinstance(part, dict) and part.get("type") == semconv.PART_TOOL_CALL_RESPONSE:
                part["response"] = result_text(part.get("response"))
    return dumps(messages)


def _model(record: SpanRecord, out: dict[str, Any]) -> None:
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    reasons: list[str] = []
    for event in record.events:
        fields = event.attributes
        role = INPUT_EVENTS.get(event.name)
        if role is not None:
            inputs.extend(converse_messages(role, loads(fields.get("content"))))
        elif event.name == CHOICE:
            reason = fields.get("finish_reason")
            message = fields.get("message")
            blocks = loads(message) if isinstance(message, str) and message.startswith(("[", "{")) else message
            outputs.extend(converse_messages("assistant", blocks, str(reason) if reason else None))
            if reason:
                reasons.append(str(reason))
        elif event.name == DETAILS:
            for key in DETAIL_ATTRIBUTES:
                if key in fields and key not in out:
                    out[key] = _flatten_results(fields[key]) if key == semconv.INPUT_MESSAGES else fields[key]
    if inputs and semconv.INPUT_MESSAGES not in out:
        out[semconv.INPUT_MESSAGES] = dumps(inputs)
    if outputs and semconv.OUTPUT_MESSAGES not in out:
        out[semconv.OUTPUT_MESSAGES] = dumps(outputs)
    if reasons:
        out.setdefault(semconv.RESPONSE_FINISH_REASONS, reasons)


def _tool(record: SpanRecord, out: dict[str, Any]) -> None:
    for event in record.events:
        fields = event.attributes
        if event.name == TOOL_EVENT and "content" in fields:
            out.setdefault(semconv.TOOL_CALL_ARGUMENTS, fields["content"])
        elif event.name == CHOICE and "message" in fields:
            out.setdefault(semconv.TOOL_CALL_RESULT, fields["message"])
    result = out.get(semconv.TOOL_CALL_RESULT)
    if isinstance(result, str) and result.startswith("["):
        text = result_text(loads(result))
        out[semconv.TOOL_CALL_RESULT] = text if isinstance(text, str) else blocks_text(text)


def rewrite(record: SpanRecord) -> tuple[str, dict[str, Any]] | None:
    """A Strands span with its messages (events) written into the contract's attributes; None for other spans."""
    if record.scope_name != SCOPE:
        return None
    out = dict(record.attributes)
    op = out.get(semconv.OPERATION_NAME)
    if op == semconv.OP_CHAT:
        _model(record, out)
    elif op == semconv.OP_EXECUTE_TOOL:
        _tool(record, out)
    else:
        return None
    return record.name, out

"""The Runtime applied to built parts (semconv.parts.applied_message): capture off keeps structure only, redaction
redacts content, never types, ids, modalities or base64 data."""

from __future__ import annotations

from spanfold.content.redaction import Redaction
from spanfold.content.runtime import Runtime
from spanfold.semconv import parts as p

REDACTING = Runtime(redaction=Redaction(hook=lambda text: "[redacted]", builtin=False))  # every string it is given


def result_with_media() -> p.Message:
    inner = [p.text("mail ann@example.com"), p.blob("QUJD", "image/png", "image")]
    return p.message("tool", [p.tool_response("call_1", inner)], name="lookup")


def test_a_tool_result_made_of_parts_is_redacted_part_by_part() -> None:
    (part,) = p.applied_message(result_with_media(), REDACTING)["parts"]
    text, image = part["response"]  # type: ignore[typeddict-item]
    assert text == {"type": "text", "content": "[redacted]"}
    assert image == {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "QUJD"}


def test_capture_off_keeps_ids_and_the_tool_messages_name_only() -> None:
    message = p.applied_message(result_with_media(), Runtime(capture_content=False))
    assert message == {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1"}], "name": "lookup"}
    user = p.applied_message(p.message("user", [p.text("hi")], name="ann"), Runtime(capture_content=False))
    assert user == {"role": "user", "parts": [{"type": "text"}]}


def test_a_runtime_that_records_as_built_returns_the_very_message() -> None:
    message = result_with_media()
    assert p.applied_message(message, Runtime()) is message

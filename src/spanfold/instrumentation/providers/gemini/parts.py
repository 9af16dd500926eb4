"""Gemini (google-genai) parts -> GenAI semconv parts: one ``Part`` (a string, a ``Part``, a dict in snake_case or
the SDK's camelCase aliases, an uploaded ``File``) at a time, for
:mod:`~spanfold.instrumentation.providers.gemini.content`
(requests and responses) and :mod:`~spanfold.instrumentation.providers.gemini.stream` (chunks).

* ``text`` -> ``text``, a ``thought`` -> ``reasoning``; ``function_call`` -> ``tool_call`` (the id when the API gave
  one: often none); ``function_response`` -> ``tool_call_response``, its response ``{"result": text}`` /
  ``{"output": text}`` (the SDK's and the API's documented keys) read as that text, its own ``parts`` (media it
  returns) after its JSON;
* ``inline_data`` -> ``blob`` (base64), ``file_data`` and uploaded files -> ``uri``;
* the server's own tools, as a call followed by its result (how Anthropic's and OpenAI's built-in tools fold):
  ``executable_code`` -> a ``code_execution`` ``tool_call`` (``code``, ``language``), ``code_execution_result`` ->
  its ``tool_call_response`` (the output; with the outcome when it failed); ``tool_call`` / ``tool_response``
  (search, URL context, maps, ...) -> a ``tool_call`` named by its ``tool_type`` and its response;
* ``audio_transcription`` -> ``text``; parts without content (a bare ``thought_signature``) by their kind.
"""

from __future__ import annotations

import base64
from typing import Any, Final

from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.semconv import parts as p

#: Part fields read from dicts too, where the SDK accepts its camelCase aliases.
_CAMEL: Final = {
    "function_call": "functionCall",
    "function_response": "functionResponse",
    "inline_data": "inlineData",
    "file_data": "fileData",
    "mime_type": "mimeType",
    "file_uri": "fileUri",
    "function_declarations": "functionDeclarations",
    "parameters_json_schema": "parametersJsonSchema",
    "executable_code": "executableCode",
    "code_execution_result": "codeExecutionResult",
    "tool_call": "toolCall",
    "tool_response": "toolResponse",
    "tool_type": "toolType",
    "audio_transcription": "audioTranscription",
}
#: The tool call an ``executable_code`` part stands for (Gemini's built-in code execution).
CODE_EXECUTION: Final = "code_execution"
#: A code execution's outcome when it ran (any other is kept beside its output).
_OUTCOME_OK: Final = ("OUTCOME_OK", None)


def get(obj: Any, key: str) -> Any:
    """``m.get``, and for a dict the camelCase alias when the snake_case key is absent."""
    value = m.get(obj, key)
    if value is None and isinstance(obj, dict) and key in _CAMEL:
        value = obj.get(_CAMEL[key])
    return value


def _modality(mime: Any) -> str:
    kind = str(mime or "").partition("/")[0]
    return kind if kind in ("image", "audio", "video") else "document"


def _response(value: Any) -> Any:
    if isinstance(value, dict) and len(value) == 1:
        key, inner = next(iter(value.items()))
        if key in ("result", "output") and isinstance(inner, str):
            return inner
    return value


def _function_response(response: Any) -> Any:
    """A function response's ``response`` (a text result as its text); with media ``parts``, a list of parts: the
    JSON as a text part, then the media."""
    value = _response(m.get(response, "response"))
    media = m.as_list(m.get(response, "parts"))
    if not media:
        return value
    text = [] if value is None else [p.text(value if isinstance(value, str) else m.dumps(value))]
    return [*text, *(x for item in media for x in part_parts(item))]


def _enum(value: Any) -> Any:
    return getattr(value, "value", value)


def _server_tool_parts(part: Any) -> list[p.Part] | None:
    """A built-in tool's call or result, or None when ``part`` is neither."""
    code = get(part, "executable_code")
    if code is not None:
        arguments = {"code": m.get(code, "code"), "language": _enum(m.get(code, "language"))}
        return [p.tool_call(m.get(code, "id"), CODE_EXECUTION, arguments)]
    result = get(part, "code_execution_result")
    if result is not None:
        outcome, output = _enum(m.get(result, "outcome")), m.get(result, "output")
        answer = output if outcome in _OUTCOME_OK else {"outcome": outcome, "output": output}
        return [p.tool_response(m.get(result, "id"), answer)]
    call = get(part, "tool_call")
    if call is not None:
        name = _enum(get(call, "tool_type"))
        return [p.tool_call(m.get(call, "id"), str(name).lower() if name else None, m.get(call, "args"))]
    response = get(part, "tool_response")
    if response is not None:
        return [p.tool_response(m.get(response, "id"), m.get(response, "response"))]
    return None


def part_parts(part: Any) -> list[p.Part]:
    """The semconv part of one Gemini part (a string, a ``Part``, a dict, an uploaded ``File``)."""
    if isinstance(part, str):
        return [p.text(part)]
    text = m.get(part, "text")
    if text is not None:
        return [p.reasoning(text) if m.get(part, "thought") else p.text(text)]
    call = get(part, "function_call")
    if call is not None:
        return [p.tool_call(m.get(call, "id"), m.get(call, "name"), m.get(call, "args"))]
    response = get(part, "function_response")
    if response is not None:
        return [p.tool_response(m.get(response, "id"), _function_response(response))]
    server = _server_tool_parts(part)
    if server is not None:
        return server
    transcription = get(part, "audio_transcription")
    if transcription is not None:
        return [p.text(m.get(transcription, "text"))]
    blob = get(part, "inline_data")
    if blob is not None:
        data, mime = m.get(blob, "data"), get(blob, "mime_type")
        if isinstance(data, (bytes, bytearray)):
            data = base64.b64encode(data).decode("ascii")
        return [p.blob(data, mime, _modality(mime))]
    file = get(part, "file_data")
    if file is None and isinstance(m.get(part, "uri"), str):  # an uploaded ``types.File``
        file = {"file_uri": m.get(part, "uri"), "mime_type": get(part, "mime_type")}
    if file is not None:
        mime = get(file, "mime_type")
        return [p.uri(get(file, "file_uri"), _modality(mime), mime_type=mime)]
    fields = part if isinstance(part, dict) else getattr(part, "__dict__", {})
    kind = next((key for key, value in fields.items() if value is not None), type(part).__name__)
    return [p.other(kind)]

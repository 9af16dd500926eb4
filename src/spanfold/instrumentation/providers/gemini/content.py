"""Gemini (google-genai) shapes -> typed invocations: ``generate_content``'s request and response.

Mapping (latest experimental GenAI conventions):

* ``contents`` (a string, a ``Content``, a ``Part``, dicts, or a list of them; loose parts grouped into one message as
  the SDK groups them) -> the input messages, role ``model`` -> ``assistant``, consecutive model turns one message;
  ``config.system_instruction`` -> the system instructions;
* each part through :mod:`~spanfold.instrumentation.providers.gemini.parts`; each ``function_response`` (and each
  built-in tool's result) a ``tool`` message of its own (``shapes.split_tool_responses``);
* candidates -> output messages (choices), their raw ``finish_reason``;
* ``usage_metadata``: input = prompt (+ tool-use prompt) tokens, output = candidates + thoughts tokens, cache reads,
  reasoning tokens, per-modality counts; ``config.tools`` -> tool definitions (declarations and Python functions
  alike).
"""

from __future__ import annotations

import inspect
from typing import Any, Final

from spanfold import semconv
from spanfold.instrumentation.providers.gemini.parts import get, part_parts
from spanfold.instrumentation.toolkit.invocation import Param, Request, Response, Usage
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading import params
from spanfold.instrumentation.toolkit.reading.history import History, Listed
from spanfold.semconv import parts as p
from spanfold.semconv import shapes

REQUEST_PARAMS: Final[dict[str, Param]] = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "max_output_tokens": "max_tokens",
    "seed": "seed",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
}
_ROLES: Final = {"model": "assistant", "function": "tool", "tool": "tool"}


def content_messages(content: Any) -> list[p.Message]:
    """One ``Content`` (or content dict) as messages: its function responses ``tool`` messages of their own."""
    role = m.get(content, "role")
    parts = [x for part in m.as_list(m.field(content, "parts")) for x in part_parts(part)]
    return shapes.split_tool_responses(_ROLES.get(role, role or "user"), parts, p.message)


def _is_content(item: Any) -> bool:
    if isinstance(item, dict):
        return "parts" in item or "role" in item
    return not isinstance(item, str) and hasattr(item, "parts") and hasattr(item, "role")


#: The SDK's streamed history (automatic function calling, chats) holds a ``model`` content per chunk, which is one
#: model turn, shown as the one output message it was: consecutive model turns are one message.
_HISTORY: Final = History(content_messages, merge=True)


def _loose_parts(items: list[Any]) -> list[p.Message]:
    """Parts not in a ``Content``, grouped as the SDK groups them: consecutive function calls one ``model`` message,
    the other consecutive parts one ``user`` message (a nested list is one ``user`` message)."""
    groups: list[tuple[bool, list[p.Part]]] = []
    for item in items:
        parts = [x for part in item for x in part_parts(part)] if isinstance(item, list) else part_parts(item)
        is_call = not isinstance(item, list) and all(x.get("type") == semconv.PART_TOOL_CALL for x in parts)
        if groups and groups[-1][0] == is_call and not isinstance(item, list):
            groups[-1][1].extend(parts)
        else:
            groups.append((is_call, parts))
    out: list[p.Message] = []
    for is_call, parts in groups:
        out.extend(shapes.split_tool_responses("assistant" if is_call else "user", parts, p.message))
    return out


def _merged_turns(messages: list[p.Message]) -> list[p.Message]:
    """Consecutive ``assistant`` messages as one (as :data:`_HISTORY` merges them)."""
    out: list[p.Message] = []
    for msg in messages:
        last = out[-1] if out else None
        if last is not None and msg.get("role") == last.get("role") == "assistant":
            out[-1] = p.message("assistant", [*last.get("parts", ()), *msg.get("parts", ())])
        else:
            out.append(msg)
    return out


def input_messages(contents: Any) -> Listed | list[p.Message]:
    items = contents if isinstance(contents, list) else [contents]
    if all(_is_content(item) for item in items):  # the common case (chats, AFC turns, agents): each Content once
        return _HISTORY.of(items)
    messages: list[p.Message] = []
    run: list[Any] = []
    for item in [*items, None]:
        if item is not None and not _is_content(item):
            run.append(item)
            continue
        if run:
            messages.extend(_loose_parts(run))
            run = []
        if item is not None:
            messages.extend(content_messages(item))
    return _merged_turns(messages)


def system_parts(value: Any) -> list[p.Part]:
    if _is_content(value):
        return [x for part in m.as_list(m.field(value, "parts")) for x in part_parts(part)]
    return [x for part in (value if isinstance(value, list) else [value]) for x in part_parts(part)]


def tool_definitions(tool: Any) -> list[dict[str, Any]]:
    """One entry of ``config.tools``: its function declarations, a Python function, or a built-in tool by kind."""
    if callable(tool) and not hasattr(tool, "model_dump"):
        doc = inspect.getdoc(tool)
        return [
            {
                "type": "function",
                "name": getattr(tool, "__name__", None),
                "description": doc.strip().splitlines()[0] if doc else None,
                "parameters": _callable_parameters(tool),
            }
        ]
    out: list[dict[str, Any]] = []
    for decl in m.as_list(get(tool, "function_declarations")):
        schema = get(decl, "parameters_json_schema") or m.get(decl, "parameters")
        out.append(
            {
                "type": "function",
                "name": m.get(decl, "name"),
                "description": m.get(decl, "description"),
                "parameters": schema,
            }
        )
    fields = tool if isinstance(tool, dict) else getattr(tool, "__dict__", {})
    out.extend(
        {"type": key}
        for key, value in fields.items()
        if value is not None and key not in ("function_declarations", "functionDeclarations")
    )
    return out


def _callable_parameters(fn: Any) -> Any:
    """The JSON schema the SDK declares for a Python function (None when it cannot)."""
    try:
        from google.genai import types

        make = types.FunctionDeclaration.from_callable_with_api_option
        try:
            decl = make(callable=fn, use_json_schema=True)
        except TypeError:  # google-genai < 3: no use_json_schema
            decl = make(callable=fn)
    except Exception:  # an annotation the SDK rejects: it raises the same when it sends the request
        return None
    return decl.parameters_json_schema or decl.parameters


_TOOLS: Final = History(tool_definitions, messages=False, limit=1024)


def request(kwargs: dict[str, Any]) -> Request:
    """The request of ``generate_content`` (one API call)."""
    req = Request(model=params.model_name(kwargs.get("model")))
    config = kwargs.get("config")
    if config is not None:
        req.params = params.numbers(config, REQUEST_PARAMS)
        count = m.get(config, "candidate_count")
        if isinstance(count, int) and count != 1:
            req.params["choice_count"] = count
        req.stop_sequences = params.string_list(m.get(config, "stop_sequences"))
        schema = m.get(config, "response_schema") or m.get(config, "response_json_schema")
        if m.get(config, "response_mime_type") == "application/json" or schema is not None:
            req.output_type = "json"
        system = m.get(config, "system_instruction")
        if system is not None:
            req.system = system_parts(system)
        tools = m.get(config, "tools")
        if tools:
            req.tools = _TOOLS.of(m.as_list(tools))
    contents = kwargs.get("contents")
    if contents is not None:
        req.messages = input_messages(contents)
    return req


# --- output --------------------------------------------------------------------------------------------


def raw_reason(value: Any) -> str | None:
    if value is None:
        return None
    return str(getattr(value, "value", value))


def usage(value: Any) -> Usage | None:
    if value is None:
        return None
    prompt, tool_prompt = m.get(value, "prompt_token_count"), m.get(value, "tool_use_prompt_token_count")
    if isinstance(prompt, int) and isinstance(tool_prompt, int):
        prompt += tool_prompt
    output, thoughts = m.get(value, "candidates_token_count"), m.get(value, "thoughts_token_count")
    if isinstance(thoughts, int):
        output = (output or 0) + thoughts
    return Usage(
        input_tokens=prompt,
        output_tokens=output,
        cache_read_input_tokens=m.get(value, "cached_content_token_count") or None,
        reasoning_output_tokens=thoughts or None,
        **_by_modality(m.get(value, "prompt_tokens_details"), _INPUT_MODALITIES),
        **_by_modality(m.get(value, "candidates_tokens_details"), _OUTPUT_MODALITIES),
    )


#: Gemini's modality (``MediaModality``) -> the per-modality count it is (video and document have none).
_INPUT_MODALITIES: Final = {"TEXT": "text_input_tokens", "IMAGE": "image_input_tokens", "AUDIO": "audio_input_tokens"}
_OUTPUT_MODALITIES: Final = {
    "TEXT": "text_output_tokens",
    "IMAGE": "image_output_tokens",
    "AUDIO": "audio_output_tokens",
}


def _by_modality(details: Any, names: dict[str, str]) -> dict[str, int]:
    """``[{modality, token_count}, ...]`` as per-modality counts (the non-zero ones of the modalities named)."""
    out: dict[str, int] = {}
    for entry in m.as_list(details) or []:
        modality, count = m.get(entry, "modality"), m.get(entry, "token_count")
        name = names.get(str(getattr(modality, "value", modality)).upper())
        if name is not None and isinstance(count, int) and count > 0:
            out[name] = out.get(name, 0) + count
    return out


def result(
    response_id: Any, model: Any, outputs: list[tuple[list[p.Part], str | None]], usage_metadata: Any
) -> Response:
    """The response of each candidate's parts and raw finish reason, for a complete response and a stream alike."""
    return Response(
        id=response_id,
        model=model,
        finish_reasons=[reason for _, reason in outputs if reason] or None,
        messages=[p.message("assistant", parts) for parts, _ in outputs],
        usage=usage(usage_metadata),
    )


def response(value: Any) -> Response:
    """A complete ``GenerateContentResponse``."""
    candidates = sorted(m.as_list(m.get(value, "candidates")), key=lambda c: m.get(c, "index") or 0)
    outputs = [
        (
            [x for part in m.as_list(m.get(m.get(c, "content"), "parts")) for x in part_parts(part)],
            raw_reason(m.get(c, "finish_reason")),
        )
        for c in candidates
    ]
    return result(m.get(value, "response_id"), m.get(value, "model_version"), outputs, m.get(value, "usage_metadata"))

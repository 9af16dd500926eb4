"""Gemini (google-genai) shapes -> GenAI semconv span attributes (request, response, stream chunks).

Mapping (latest experimental GenAI conventions):

* ``contents`` (a string, a ``Content``, a ``Part``, dicts, or a list of them; loose parts grouped into one message as
  the SDK groups them) -> ``gen_ai.input.messages``, role ``model`` -> ``assistant``;
  ``config.system_instruction`` -> ``gen_ai.system_instructions``;
* each part through :mod:`~spanfold.instrumentation.providers.gemini.parts`; each ``function_response`` (and each
  built-in
  tool's result) a ``tool`` message of its own (``shapes.split_tool_responses``);
* candidates -> output messages (choices), ``finish_reason`` through ``shapes.GEMINI_FINISH_REASONS``;
* ``usage_metadata``: input = prompt (+ tool-use prompt) tokens, output = candidates + thoughts tokens, cache reads,
  reasoning tokens; ``config.tools`` -> ``gen_ai.tool.definitions`` (declarations and Python functions alike).
"""

from __future__ import annotations

import inspect
import itertools
from typing import Any, Final

from spanfold import semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.providers.gemini.parts import get, part_parts
from spanfold.instrumentation.toolkit.reading import messages as m
from spanfold.instrumentation.toolkit.reading import params
from spanfold.instrumentation.toolkit.reading.history import HistoryCache
from spanfold.semconv import parts as p
from spanfold.semconv import shapes

REQUEST_PARAMS: Final = {
    "temperature": semconv.REQUEST_TEMPERATURE,
    "top_p": semconv.REQUEST_TOP_P,
    "top_k": semconv.REQUEST_TOP_K,
    "max_output_tokens": semconv.REQUEST_MAX_TOKENS,
    "seed": semconv.REQUEST_SEED,
    "presence_penalty": semconv.REQUEST_PRESENCE_PENALTY,
    "frequency_penalty": semconv.REQUEST_FREQUENCY_PENALTY,
}
_ROLES: Final = {"model": "assistant", "function": "tool", "tool": "tool"}


def content_messages(content: Any, rt: Runtime) -> list[p.Message]:
    """One ``Content`` (or content dict) as messages: its function responses ``tool`` messages of their own."""
    role = m.get(content, "role")
    parts = [x for part in m.as_list(m.field(content, "parts")) for x in part_parts(part, rt)]
    return shapes.split_tool_responses(_ROLES.get(role, role or "user"), parts, p.message)


def _is_content(item: Any) -> bool:
    if isinstance(item, dict):
        return "parts" in item or "role" in item
    return not isinstance(item, str) and hasattr(item, "parts") and hasattr(item, "role")


_HISTORY = HistoryCache(content_messages)  # JSON fragments
_TURNS = HistoryCache(content_messages)  # the messages themselves, when turns are to be merged


def _loose_parts(items: list[Any], rt: Runtime) -> list[p.Message]:
    """Parts not in a ``Content``, grouped as the SDK groups them: consecutive function calls one ``model`` message,
    the other consecutive parts one ``user`` message (a nested list is one ``user`` message)."""
    groups: list[tuple[bool, list[p.Part]]] = []
    for item in items:
        parts = [x for part in item for x in part_parts(part, rt)] if isinstance(item, list) else part_parts(item, rt)
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
    """Consecutive ``assistant`` messages as one: the SDK's streamed history (automatic function calling, chats)
    holds a ``model`` content per chunk, which is one model turn, shown as the one output message it was."""
    out: list[p.Message] = []
    for msg in messages:
        last = out[-1] if out else None
        if last is not None and msg.get("role") == last.get("role") == "assistant":
            out[-1] = p.message("assistant", [*last.get("parts", ()), *msg.get("parts", ())])
        else:
            out.append(msg)
    return out


def input_messages_json(contents: Any, rt: Runtime) -> str:
    items = contents if isinstance(contents, list) else [contents]
    if all(_is_content(item) for item in items):  # the common case (chats, AFC turns, agents): cached by identity
        roles = [m.get(item, "role") for item in items]
        if not any(a == b == "model" for a, b in itertools.pairwise(roles)):
            return _HISTORY.json_flat_list(items, rt)
        return m.dumps(_merged_turns([msg for msgs in _TURNS.each(items, rt) for msg in msgs]))
    messages: list[p.Message] = []
    run: list[Any] = []
    for item in [*items, None]:
        if item is not None and not _is_content(item):
            run.append(item)
            continue
        if run:
            messages.extend(_loose_parts(run, rt))
            run = []
        if item is not None:
            messages.extend(content_messages(item, rt))
    return m.dumps(_merged_turns(messages))


def system_parts(value: Any, rt: Runtime) -> list[p.Part]:
    if _is_content(value):
        return [x for part in m.as_list(m.field(value, "parts")) for x in part_parts(part, rt)]
    return [x for part in (value if isinstance(value, list) else [value]) for x in part_parts(part, rt)]


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


_TOOLS = HistoryCache(lambda tool, rt: tool_definitions(tool), limit=1024)


def request_attributes(kwargs: dict[str, Any], rt: Runtime) -> tuple[str | None, dict[str, Any]]:
    """The span name target (the model) and the request attributes of ``generate_content`` (one API call)."""
    model = params.model_name(kwargs.get("model"))
    attrs: dict[str, Any] = {semconv.REQUEST_MODEL: model}
    config = kwargs.get("config")
    if config is not None:
        attrs.update(params.numbers(config, REQUEST_PARAMS))
        count = m.get(config, "candidate_count")
        if isinstance(count, int) and count != 1:
            attrs[semconv.REQUEST_CHOICE_COUNT] = count
        attrs[semconv.REQUEST_STOP_SEQUENCES] = params.string_list(m.get(config, "stop_sequences"))
        schema = m.get(config, "response_schema") or m.get(config, "response_json_schema")
        if m.get(config, "response_mime_type") == "application/json" or schema is not None:
            attrs[semconv.OUTPUT_TYPE] = "json"
        system = m.get(config, "system_instruction")
        if system is not None:
            attrs[semconv.SYSTEM_INSTRUCTIONS] = m.dumps(system_parts(system, rt))
        tools = m.get(config, "tools")
        if rt.capture_content and tools:
            attrs[semconv.TOOL_DEFINITIONS] = _TOOLS.json_flat_list(m.as_list(tools), rt)
    contents = kwargs.get("contents")
    if contents is not None:
        attrs[semconv.INPUT_MESSAGES] = input_messages_json(contents, rt)
    return model, attrs


# --- output --------------------------------------------------------------------------------------------


def raw_reason(value: Any) -> str | None:
    if value is None:
        return None
    return str(getattr(value, "value", value))


def output_message(parts: list[p.Part], raw_reason: str | None) -> p.Message:
    reason = shapes.finish_reason(shapes.GEMINI_FINISH_REASONS, raw_reason)
    kinds = [x.get("type") for x in parts]
    if raw_reason == shapes.GEMINI_TOOL_CALL_STOP and kinds.count(semconv.PART_TOOL_CALL) > kinds.count(
        semconv.PART_TOOL_CALL_RESPONSE
    ):  # a call waits for the client (a built-in tool's call comes with its result)
        reason = "tool_call"
    return p.message("assistant", parts, finish_reason=reason)


def usage_attributes(usage: Any) -> dict[str, Any]:
    if usage is None:
        return {}
    prompt, tool_prompt = m.get(usage, "prompt_token_count"), m.get(usage, "tool_use_prompt_token_count")
    if isinstance(prompt, int) and isinstance(tool_prompt, int):
        prompt += tool_prompt
    output, thoughts = m.get(usage, "candidates_token_count"), m.get(usage, "thoughts_token_count")
    if isinstance(thoughts, int):
        output = (output or 0) + thoughts
    return {
        semconv.USAGE_INPUT_TOKENS: prompt,
        semconv.USAGE_OUTPUT_TOKENS: output,
        # the breakdown counts only where the response reports a non-zero one
        semconv.USAGE_CACHE_READ_INPUT_TOKENS: m.get(usage, "cached_content_token_count") or None,
        semconv.USAGE_REASONING_OUTPUT_TOKENS: thoughts or None,
        **_by_modality(m.get(usage, "prompt_tokens_details"), _INPUT_MODALITIES),
        **_by_modality(m.get(usage, "candidates_tokens_details"), _OUTPUT_MODALITIES),
    }


#: Gemini's modality (``MediaModality``) -> the per-modality count it is recorded as (video and document have none).
_INPUT_MODALITIES: Final = {
    "TEXT": semconv.USAGE_TEXT_INPUT_TOKENS,
    "IMAGE": semconv.USAGE_IMAGE_INPUT_TOKENS,
    "AUDIO": semconv.USAGE_AUDIO_INPUT_TOKENS,
}
_OUTPUT_MODALITIES: Final = {
    "TEXT": semconv.USAGE_TEXT_OUTPUT_TOKENS,
    "IMAGE": semconv.USAGE_IMAGE_OUTPUT_TOKENS,
    "AUDIO": semconv.USAGE_AUDIO_OUTPUT_TOKENS,
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


def result_attributes(
    response_id: Any, model: Any, outputs: list[tuple[list[p.Part], str | None]], usage: Any
) -> dict[str, Any]:
    reasons = [reason for _, reason in outputs if reason]
    return m.result_attributes(
        response_id,
        model,
        reasons or None,
        m.dumps([output_message(parts, reason) for parts, reason in outputs]),
        usage_attributes(usage),
    )


def response_attributes(response: Any, rt: Runtime) -> dict[str, Any]:
    """Attributes of a complete ``GenerateContentResponse``."""
    candidates = sorted(m.as_list(m.get(response, "candidates")), key=lambda c: m.get(c, "index") or 0)
    outputs = [
        (
            [x for part in m.as_list(m.get(m.get(c, "content"), "parts")) for x in part_parts(part, rt)],
            raw_reason(m.get(c, "finish_reason")),
        )
        for c in candidates
    ]
    return result_attributes(
        m.get(response, "response_id"), m.get(response, "model_version"), outputs, m.get(response, "usage_metadata")
    )

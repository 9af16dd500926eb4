"""OpenAI Responses API shapes -> typed invocations (request, response, stream events).

Items map onto messages the same way on both sides, so a response's output and the same items re-sent as input
later give identical messages (the fold recognises history by them):

* ``message`` items keep their role; ``input_text`` / ``output_text`` / ``refusal`` -> text parts, ``input_image``
  -> blob (data URL) / uri / file parts, ``input_file`` and ``input_audio`` likewise;
* model-side items -- assistant messages, ``reasoning`` (its summary, else its reasoning text -> a reasoning part),
  ``function_call`` / ``custom_tool_call`` and the client-executed tool calls (``computer_call``, ``shell_call``,
  ``local_shell_call``, ``apply_patch_call``, ``tool_search_call``) -> ``tool_call`` parts -- that follow each other
  merge into one ``assistant`` message;
* ``function_call_output`` and the other ``*_output`` items -> one ``tool`` message each (``tool_call_response``);
* built-in tools that run on OpenAI's side (``web_search_call``, ``file_search_call``, ``code_interpreter_call``,
  ``image_generation_call``, ``mcp_call``) -> a ``tool_call`` part named by the tool (``web_search``, ... or the MCP
  tool's name), id = the item id, followed by a ``tool`` message with its results, so they fold as tool calls with
  their results.

``instructions`` -> ``gen_ai.system_instructions``; ``previous_response_id`` -> ``openai.request.previous_response_id``
and ``conversation`` -> ``gen_ai.conversation.id`` (the fold joins a chain whose history is not re-sent by them).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Final

from spanfold.instrumentation.toolkit.invocation import Param, Request, Response, Usage
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading import params
from spanfold.instrumentation.toolkit.reading.blocks import Block, IndexedBlocks
from spanfold.instrumentation.toolkit.reading.history import History
from spanfold.semconv import parts as p

REQUEST_PARAMS: Final[dict[str, Param]] = {
    "temperature": "temperature",
    "top_p": "top_p",
    "max_output_tokens": "max_tokens",
}

#: Model-made calls the client executes: item type -> (tool name, field holding the arguments).
CLIENT_CALLS: Final = {
    "function_call": (None, "arguments"),
    "custom_tool_call": (None, "input"),
    "computer_call": ("computer", "action"),
    "local_shell_call": ("local_shell", "action"),
    "shell_call": ("shell", "action"),
    "apply_patch_call": ("apply_patch", "operation"),
    "tool_search_call": ("tool_search", "arguments"),
}
#: Built-in tools run on OpenAI's side: item type -> (tool name, argument fields, result fields).
SERVER_CALLS: Final = {
    "web_search_call": ("web_search", ("action",), ("status",)),
    "file_search_call": ("file_search", ("queries",), ("results", "status")),
    "code_interpreter_call": ("code_interpreter", ("code", "container_id"), ("outputs", "status")),
    "image_generation_call": ("image_generation", ("revised_prompt",), ("result", "status")),
    "mcp_call": (None, ("arguments",), ("output", "error")),
}
#: Which field holds a tool output item's content.
OUTPUT_FIELDS: Final = {"computer_call_output": "output", "tool_search_output": "tools", "program_output": "result"}

_TEXT_PARTS: Final = frozenset({"input_text", "output_text", "text", "summary_text", "reasoning_text"})
_TOOL_CALL_FINISH: Final = frozenset(CLIENT_CALLS)

# --- content -------------------------------------------------------------------------------------------


def _json(value: Any) -> Any:
    """A value as JSON data (SDK objects dumped)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value


def content_part(part: Any) -> p.Part:
    kind = m.get(part, "type")
    if kind in _TEXT_PARTS:
        return p.text(m.get(part, "text"))
    if kind == "refusal":
        return p.text(m.get(part, "refusal"))
    if kind in ("input_image", "input_file"):
        modality = "image" if kind == "input_image" else "document"
        url = m.get(part, "image_url") or m.get(part, "file_url")
        if isinstance(url, str):
            return p.media(url, modality)
        data = m.get(part, "file_data")
        if isinstance(data, str):
            if data.startswith("data:"):
                return p.media(data, modality)
            return p.blob(data, None, modality)
        return p.file(m.get(part, "file_id"), modality)
    if kind == "input_audio":
        audio = m.get(part, "input_audio") or part
        return p.blob(m.get(audio, "data"), f"audio/{m.get(audio, 'format')}", "audio")
    return p.other(kind)


def content_parts(content: Any) -> list[p.Part]:
    if content is None:
        return []
    if isinstance(content, str):
        return [p.text(content)]
    return [content_part(part) for part in m.as_list(content)]


def output_response(output: Any) -> Any:
    """A tool output's content: a string, the text of text parts, else the parts (images, files)."""
    if output is None or isinstance(output, str):
        return output
    items = m.as_list(output)
    if items and all(m.get(p, "type") in _TEXT_PARTS for p in items):
        return "".join(str(m.get(p, "text") or "") for p in items)
    if all(isinstance(m.get(p, "type"), str) for p in items):
        return [content_part(p) for p in items]
    return _json(output)


def _reasoning_text(item: Any) -> str:
    summary = [str(m.get(s, "text") or "") for s in m.as_list(m.field(item, "summary"))]
    if summary:
        return "\n\n".join(summary)
    return "\n\n".join(str(m.get(c, "text") or "") for c in m.as_list(m.field(item, "content")))


# --- items -> messages ---------------------------------------------------------------------------------


def _assistant(part: p.Part) -> p.Message:
    """A model-side item's share: one part of the assistant message the model-side items around it make."""
    return p.message("assistant", [part])


def item_messages(item: Any) -> list[p.Message]:
    """What one input or output item contributes to the messages (consecutive assistant ones are one message)."""
    if isinstance(item, str):
        return [p.message("user", [p.text(item)])]
    kind = m.get(item, "type")
    if kind == "message" or (kind is None and m.get(item, "role") is not None):
        role = m.get(item, "role")
        return [p.message("assistant" if role == "assistant" else str(role), content_parts(m.field(item, "content")))]
    if kind == "reasoning":
        return [_assistant(p.reasoning(_reasoning_text(item)))]
    client = CLIENT_CALLS.get(kind)
    if client is not None:
        name, field = client
        return [_assistant(p.tool_call(m.get(item, "call_id"), name or m.get(item, "name"), _json(m.get(item, field))))]
    if kind == "function_call_output" or kind in OUTPUT_FIELDS or (isinstance(kind, str) and kind.endswith("_output")):
        content = m.field(item, OUTPUT_FIELDS.get(kind, "output"))
        return [p.message("tool", [p.tool_response(m.get(item, "call_id"), output_response(content))])]
    server = SERVER_CALLS.get(kind)
    if server is not None:
        name, argument_fields, result_fields = server
        if name is None:  # mcp_call: the MCP tool's own name and JSON arguments
            arguments: Any = m.get(item, "arguments")
        else:
            arguments = {f: _json(m.get(item, f)) for f in argument_fields if m.get(item, f) is not None}
        results = {f: _json(m.get(item, f)) for f in result_fields if m.get(item, f) is not None}
        call_id = m.get(item, "id")
        return [
            _assistant(p.tool_call(call_id, name or m.get(item, "name"), arguments)),
            p.message("tool", [p.tool_response(call_id, results)]),
        ]
    if kind == "item_reference":  # a pointer to an item the server holds: nothing to show
        return []
    return [_assistant(p.other(kind))]


def merged(items: Iterable[Any]) -> list[p.Message]:
    """The messages of output items, consecutive assistant ones joined into one (as :data:`HISTORY` joins them on
    the input side)."""
    out: list[p.Message] = []
    for item in items:
        for message in item_messages(item):
            if out and message["role"] == "assistant" and out[-1]["role"] == "assistant":
                out[-1]["parts"].extend(message["parts"])
            else:
                out.append(message)
    return out


def tool_definition(tool: Any) -> dict[str, Any]:
    kind = m.get(tool, "type")
    if kind == "function":
        return {
            "type": "function",
            "name": m.get(tool, "name"),
            "description": m.get(tool, "description"),
            "parameters": m.get(tool, "parameters"),
        }
    if kind == "custom":
        return {"type": "custom", "name": m.get(tool, "name"), "description": m.get(tool, "description")}
    if kind == "mcp":
        return {"type": "mcp", "name": m.get(tool, "server_label")}
    return {"type": kind}


HISTORY: Final = History(item_messages, merge=True)
TOOLS: Final = History(tool_definition, messages=False, limit=1024)


def _output_type(kwargs: dict[str, Any]) -> str | None:
    text = kwargs.get("text")
    fmt = m.get(m.get(text, "format"), "type") if params.given(text) else None
    if params.given(kwargs.get("text_format")) or fmt in ("json_schema", "json_object"):
        return "json"
    return "text" if fmt == "text" else None


def request(kwargs: dict[str, Any]) -> Request:
    """The typed request of ``create`` / ``parse``."""
    m.materialize(kwargs, "tools")
    items = kwargs.get("input")
    if isinstance(items, Iterator):  # read a copy; the SDK (which rejects a generator here) still gets one
        items = list(items)
        kwargs["input"] = (item for item in items)
    model = kwargs.get("model")
    previous = kwargs.get("previous_response_id")
    conversation = kwargs.get("conversation")
    conversation = conversation if isinstance(conversation, str) else m.get(conversation, "id")
    instructions = kwargs.get("instructions")
    tools = kwargs.get("tools")
    messages: Any = None
    if isinstance(items, str):
        messages = item_messages(items)
    elif params.given(items):
        messages = HISTORY.of(m.as_list(items))
    return Request(
        model=model if isinstance(model, str) else None,
        params=params.numbers(kwargs, REQUEST_PARAMS),
        output_type=_output_type(kwargs),
        system=[p.text(instructions)] if isinstance(instructions, str) else None,
        messages=messages,
        tools=TOOLS.of(m.as_list(tools)) if params.given(tools) else None,
        conversation_id=conversation if isinstance(conversation, str) else None,
        previous_response_id=previous if isinstance(previous, str) else None,
    )


# --- output --------------------------------------------------------------------------------------------


def finish_reason(status: Any, incomplete: Any, items: list[Any]) -> str | None:
    """The raw finish reason for ``gen_ai.response.finish_reasons``: the API has none; it is derived from the status,
    the incomplete reason and whether the model called a tool."""
    if status == "incomplete":
        return m.get(incomplete, "reason") or "incomplete"
    if status == "failed":
        return "failed"
    if status == "completed":
        return "tool_call" if any(m.get(item, "type") in _TOOL_CALL_FINISH for item in items) else "stop"
    return None


def usage(value: Any) -> Usage | None:
    """The breakdown counts only where the response reports a non-zero one."""
    if value is None:
        return None
    tokens = Usage(m.get(value, "input_tokens"), m.get(value, "output_tokens"))
    details = m.get(value, "input_tokens_details")
    if details is not None:
        tokens.cache_read_input_tokens = m.get(details, "cached_tokens") or None
        tokens.cache_write_input_tokens = m.get(details, "cache_write_tokens") or None
    out = m.get(value, "output_tokens_details")
    if out is not None:
        tokens.reasoning_output_tokens = m.get(out, "reasoning_tokens") or None
    return tokens


def items_response(
    response_id: Any, model: Any, items: list[Any], status: Any, incomplete: Any, tokens: Usage | None
) -> Response:
    raw = finish_reason(status, incomplete, items)
    return Response(
        id=response_id,
        model=model,
        finish_reasons=[raw] if raw else None,
        messages=merged(items),
        usage=tokens,
    )


def response(result: Any) -> Response:
    """A complete ``Response`` / ``ParsedResponse``."""
    out = items_response(
        m.get(result, "id"),
        m.get(result, "model"),
        m.as_list(m.get(result, "output")),
        m.get(result, "status"),
        m.get(result, "incomplete_details"),
        usage(m.get(result, "usage")),
    )
    conversation = m.get(m.get(result, "conversation"), "id")
    if isinstance(conversation, str):
        out.conversation_id = conversation
    return out


def _streamed_item(block: Block) -> Any:
    """An output item as the stream built it: the ``output_item.done`` item when it came, else the added item
    completed by its deltas."""
    if block.done is not None:
        return block.done
    added = block.start
    kind = m.get(added, "type")
    joined = block.text()
    if kind == "message":
        return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": joined}]}
    if kind in ("function_call", "custom_tool_call"):
        field = CLIENT_CALLS[kind][1]
        return {
            "type": kind,
            "call_id": m.get(added, "call_id"),
            "name": m.get(added, "name"),
            field: joined or m.get(added, field),
        }
    if kind == "reasoning" and block.parts:
        return {"type": "reasoning", "summary": [{"type": "summary_text", "text": t} for t in block.part_texts()]}
    return added


class ResponseStreamAccumulator:
    """Accumulates Responses stream events. The final ``response.completed`` (or ``.incomplete`` / ``.failed``)
    carries the whole response and is used when it came; a stream cut short is rebuilt from the item events."""

    __slots__ = ("final", "id", "items", "model")

    def __init__(self) -> None:
        self.id: Any = None
        self.model: Any = None
        self.final: Any = None
        self.items = IndexedBlocks()

    def add(self, event: Any) -> None:
        kind = event.type
        if kind in (
            "response.output_text.delta",
            "response.refusal.delta",
            "response.function_call_arguments.delta",
            "response.custom_tool_call_input.delta",
        ):
            self.items.add(event.output_index, event.delta)
        elif kind == "response.reasoning_summary_text.delta":
            self.items.add_part(event.output_index, event.summary_index, event.delta)
        elif kind == "response.output_item.added":
            self.items.start(event.output_index, event.item)
        elif kind == "response.output_item.done":
            self.items.stop(event.output_index, event.item)
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            self.final = event.response
        elif kind in ("response.created", "response.in_progress", "response.queued"):
            response = event.response
            self.id = response.id
            self.model = response.model

    def result(self) -> Response:
        if self.final is not None:
            return response(self.final)
        items = [_streamed_item(block) for block in self.items.ordered()]
        return items_response(self.id, self.model, items, None, None, None)

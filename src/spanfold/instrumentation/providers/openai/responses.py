"""OpenAI Responses API shapes -> GenAI semconv span attributes (request, response, stream events).

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

from spanfold import semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit.reading import messages as m
from spanfold.instrumentation.toolkit.reading import params
from spanfold.instrumentation.toolkit.reading.blocks import Block, IndexedBlocks
from spanfold.instrumentation.toolkit.reading.history import HistoryCache
from spanfold.semconv import parts as p
from spanfold.semconv import shapes

REQUEST_PARAMS: Final = {
    "temperature": semconv.REQUEST_TEMPERATURE,
    "top_p": semconv.REQUEST_TOP_P,
    "max_output_tokens": semconv.REQUEST_MAX_TOKENS,
}

FINISH_REASONS: Final = shapes.OPENAI_RESPONSES_FINISH_REASONS

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


def content_part(part: Any, rt: Runtime) -> p.Part:
    kind = m.get(part, "type")
    if kind in _TEXT_PARTS:
        return p.text(m.get(part, "text"), rt)
    if kind == "refusal":
        return p.text(m.get(part, "refusal"), rt)
    if kind in ("input_image", "input_file"):
        modality = "image" if kind == "input_image" else "document"
        url = m.get(part, "image_url") or m.get(part, "file_url")
        if isinstance(url, str):
            return p.media(url, modality, rt)
        data = m.get(part, "file_data")
        if isinstance(data, str):
            if data.startswith("data:"):
                return p.media(data, modality, rt)
            return p.blob(data, None, modality, rt)
        return p.file(m.get(part, "file_id"), modality)
    if kind == "input_audio":
        audio = m.get(part, "input_audio") or part
        return p.blob(m.get(audio, "data"), f"audio/{m.get(audio, 'format')}", "audio", rt)
    return p.other(kind)


def content_parts(content: Any, rt: Runtime) -> list[p.Part]:
    if content is None:
        return []
    if isinstance(content, str):
        return [p.text(content, rt)]
    return [content_part(part, rt) for part in m.as_list(content)]


def output_response(output: Any, rt: Runtime) -> Any:
    """A tool output's content: a string, the text of text parts, else the parts (images, files)."""
    if output is None or isinstance(output, str):
        return output
    items = m.as_list(output)
    if items and all(m.get(p, "type") in _TEXT_PARTS for p in items):
        return "".join(str(m.get(p, "text") or "") for p in items)
    if all(isinstance(m.get(p, "type"), str) for p in items):
        return [content_part(p, rt) for p in items]
    return _json(output)


def _reasoning_text(item: Any) -> str:
    summary = [str(m.get(s, "text") or "") for s in m.as_list(m.field(item, "summary"))]
    if summary:
        return "\n\n".join(summary)
    return "\n\n".join(str(m.get(c, "text") or "") for c in m.as_list(m.field(item, "content")))


# --- items -> messages ---------------------------------------------------------------------------------

#: One item's share of the messages: (role, its parts as JSON without the brackets). Role None: the parts join the
#: assistant message of the model-side items around it.
Piece = tuple[str | None, str]


def _inner(parts: list[p.Part]) -> str:
    return ",".join(m.dumps(part) for part in parts)


def item_pieces(item: Any, rt: Runtime) -> list[Piece]:
    """What one input or output item contributes to the messages."""
    if isinstance(item, str):
        return [("user", _inner([p.text(item, rt)]))]
    kind = m.get(item, "type")
    if kind == "message" or (kind is None and m.get(item, "role") is not None):
        role = m.get(item, "role")
        parts = _inner(content_parts(m.field(item, "content"), rt))
        return [(None, parts)] if role == "assistant" else [(str(role), parts)]
    if kind == "reasoning":
        return [(None, _inner([p.reasoning(_reasoning_text(item), rt)]))]
    client = CLIENT_CALLS.get(kind)
    if client is not None:
        name, field = client
        call = p.tool_call(m.get(item, "call_id"), name or m.get(item, "name"), _json(m.get(item, field)), rt)
        return [(None, _inner([call]))]
    if kind == "function_call_output" or kind in OUTPUT_FIELDS or (isinstance(kind, str) and kind.endswith("_output")):
        content = m.field(item, OUTPUT_FIELDS.get(kind, "output"))
        response = p.tool_response(m.get(item, "call_id"), output_response(content, rt), rt)
        return [("tool", _inner([response]))]
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
            (None, _inner([p.tool_call(call_id, name or m.get(item, "name"), arguments, rt)])),
            ("tool", _inner([p.tool_response(call_id, results, rt)])),
        ]
    if kind == "item_reference":  # a pointer to an item the server holds: nothing to show
        return []
    return [(None, _inner([p.other(kind)]))]


def messages_json(pieces: Iterable[list[Piece]]) -> str:
    """The messages the items' pieces make, as a JSON list (no ``finish_reason``: the span's
    ``gen_ai.response.finish_reasons`` holds it)."""
    out: list[str] = []
    run: list[str] | None = None  # the open assistant message's parts
    for item in pieces:
        for role, inner in item:
            if role is None:
                if run is None:
                    run = []
                if inner:
                    run.append(inner)
                continue
            if run is not None:
                out.append('{"role":"assistant","parts":[' + ",".join(run) + "]}")
                run = None
            out.append('{"role":' + m.dumps(role) + ',"parts":[' + inner + "]}")
    if run is not None:
        out.append('{"role":"assistant","parts":[' + ",".join(run) + "]}")
    return "[" + ",".join(out) + "]"


_HISTORY = HistoryCache(item_pieces)
_TOOLS = HistoryCache(lambda tool, rt: tool_definition(tool), limit=1024)


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


def request_attributes(kwargs: dict[str, Any], rt: Runtime) -> tuple[str | None, dict[str, Any]]:
    """The span name target (the model) and the request attributes of ``create`` / ``parse``."""
    m.materialize(kwargs, "tools")
    items = kwargs.get("input")
    if isinstance(items, Iterator):  # read a copy; the SDK (which rejects a generator here) still gets one
        items = list(items)
        kwargs["input"] = (item for item in items)
    model = kwargs.get("model")
    model = model if isinstance(model, str) else None
    attrs: dict[str, Any] = {semconv.REQUEST_MODEL: model}
    attrs.update(params.numbers(kwargs, REQUEST_PARAMS))
    previous = kwargs.get("previous_response_id")
    if isinstance(previous, str):
        attrs[semconv.OPENAI_PREVIOUS_RESPONSE_ID] = previous
    conversation = kwargs.get("conversation")
    conversation = conversation if isinstance(conversation, str) else m.get(conversation, "id")
    if isinstance(conversation, str):
        attrs[semconv.CONVERSATION_ID] = conversation
    text = kwargs.get("text")
    fmt = m.get(m.get(text, "format"), "type") if params.given(text) else None
    if params.given(kwargs.get("text_format")) or fmt in ("json_schema", "json_object"):
        attrs[semconv.OUTPUT_TYPE] = "json"
    elif fmt == "text":
        attrs[semconv.OUTPUT_TYPE] = "text"
    instructions = kwargs.get("instructions")
    if isinstance(instructions, str):
        attrs[semconv.SYSTEM_INSTRUCTIONS] = m.dumps([p.text(instructions, rt)])
    if isinstance(items, str):
        attrs[semconv.INPUT_MESSAGES] = messages_json([item_pieces(items, rt)])
    elif params.given(items):
        attrs[semconv.INPUT_MESSAGES] = messages_json(_HISTORY.each(m.as_list(items), rt))
    tools = kwargs.get("tools")
    if rt.capture_content and params.given(tools):
        attrs[semconv.TOOL_DEFINITIONS] = _TOOLS.json_list(m.as_list(tools), rt)
    return model, attrs


# --- output --------------------------------------------------------------------------------------------


def finish_reason(status: Any, incomplete: Any, items: list[Any]) -> tuple[str | None, str]:
    """(the raw finish reason for ``gen_ai.response.finish_reasons``, the semconv one): the API has no finish
    reason; it is derived from the status, the incomplete reason and whether the model called a tool."""
    if status == "incomplete":
        raw = m.get(incomplete, "reason") or "incomplete"
        return raw, FINISH_REASONS.get(raw, raw)
    if status == "failed":
        return "failed", "error"
    if status == "completed":
        called = any(m.get(item, "type") in _TOOL_CALL_FINISH for item in items)
        return ("tool_call", "tool_call") if called else ("stop", "stop")
    return None, ""


def usage_attributes(usage: Any) -> dict[str, Any]:
    if usage is None:
        return {}
    details, out = m.get(usage, "input_tokens_details"), m.get(usage, "output_tokens_details")
    return {
        semconv.USAGE_INPUT_TOKENS: m.get(usage, "input_tokens"),
        semconv.USAGE_OUTPUT_TOKENS: m.get(usage, "output_tokens"),
        # the breakdown counts only where the response reports a non-zero one
        semconv.USAGE_CACHE_READ_INPUT_TOKENS: m.get(details, "cached_tokens") or None if details is not None else None,
        semconv.USAGE_CACHE_WRITE_INPUT_TOKENS: m.get(details, "cache_write_tokens") or None
        if details is not None
        else None,
        semconv.USAGE_REASONING_OUTPUT_TOKENS: m.get(out, "reasoning_tokens") or None if out is not None else None,
    }


def result_attributes(
    response_id: Any, model: Any, items: list[Any], status: Any, incomplete: Any, usage: Any, rt: Runtime
) -> dict[str, Any]:
    raw, _ = finish_reason(status, incomplete, items)
    return m.result_attributes(
        response_id,
        model,
        [raw] if raw else None,
        messages_json(item_pieces(item, rt) for item in items),
        usage_attributes(usage),
    )


def response_attributes(response: Any, rt: Runtime) -> dict[str, Any]:
    """Attributes of a complete ``Response`` / ``ParsedResponse``."""
    attrs = result_attributes(
        m.get(response, "id"),
        m.get(response, "model"),
        m.as_list(m.get(response, "output")),
        m.get(response, "status"),
        m.get(response, "incomplete_details"),
        m.get(response, "usage"),
        rt,
    )
    conversation = m.get(m.get(response, "conversation"), "id")
    if isinstance(conversation, str):
        attrs[semconv.CONVERSATION_ID] = conversation
    return attrs


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

    __slots__ = ("final", "id", "items", "model", "rt")

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
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

    def attributes(self) -> dict[str, Any]:
        if self.final is not None:
            return response_attributes(self.final, self.rt)
        items = [_streamed_item(block) for block in self.items.ordered()]
        return result_attributes(self.id, self.model, items, None, None, None, self.rt)

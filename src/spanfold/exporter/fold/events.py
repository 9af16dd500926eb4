"""Semconv messages and parts -> Invariant events (:class:`~spanfold.trace.model.Message`), and their fingerprints.

* ``text`` parts -> the content string (several joined); with media, a content list of
  ``{"type": "text", "text"}`` / ``{"type": "image", "image_url"}`` chunks (a ``blob`` becomes a ``data:`` URL, a
  ``uri`` its URI);
* ``tool_call`` parts -> :class:`ToolCall`; each ``tool_call_response`` part -> a tool-output event of its own;
* ``reasoning`` parts -> the event's ``metadata["reasoning"]``, never its content;
* with content capture off the parts carry no content: events keep roles, tool names and ids, content None;
* roles the flat formats do not know are written as the one they stand for (:data:`ROLES`: OpenAI's ``developer``
  is ``system``), the producer's own in ``metadata["original_role"]``.

:data:`INPUTS` keeps the events of input messages that the calls of several traces send (:class:`EventCache`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias

from spanfold import semconv
from spanfold.semconv import shapes
from spanfold.trace.formats import dumps
from spanfold.trace.model import Content, Message, ToolCall, parse_arguments

Part: TypeAlias = dict[str, Any]
#: Message roles written as another: OpenAI's ``developer`` messages (o-series models, Agno's ``OpenAIChat``) are the
#: system prompt, which Invariant and Guardrails policies know as ``system``.
ROLES: dict[str, str] = {"developer": "system"}
#: What identifies a message in a history: role + content + tool-call ids (tool outputs: role + call id only).
Fingerprint: TypeAlias = tuple[Any, ...]


def response_text(value: Any) -> str | None:
    """A tool result as event content: a string as it is, anything else compact JSON."""
    if value is None or isinstance(value, str):
        return value
    return dumps(value)


def _arguments(raw: Any) -> dict[str, Any] | str | None:
    if raw is None or isinstance(raw, (dict, str)):
        return parse_arguments(raw)
    return dumps(raw)


class _Body:
    """Accumulates the non-tool-output parts of one message."""

    __slots__ = ("chunks", "has_media", "reasoning", "texts", "tool_calls")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.chunks: list[dict[str, Any]] = []
        self.has_media = False
        self.reasoning: list[str] = []
        self.tool_calls: list[ToolCall] = []

    def __bool__(self) -> bool:
        return bool(self.texts or self.chunks or self.reasoning or self.tool_calls)

    def media(self, chunk: dict[str, Any]) -> None:
        self.chunks.append(chunk)
        self.has_media = True

    def content(self) -> Content:
        if self.has_media:
            return self.chunks
        text = "".join(self.texts)
        return text or None

    def message(self, role: str) -> Message:
        msg = Message(role=role, content=self.content(), tool_calls=self.tool_calls)
        if self.reasoning:
            msg.metadata["reasoning"] = "".join(self.reasoning)
        return msg


def _text(body: _Body, part: Part) -> None:
    text = part.get("content")
    if text is not None:
        text = text if isinstance(text, str) else dumps(text)
        body.texts.append(text)
        body.chunks.append({"type": "text", "text": text})


def _reasoning(body: _Body, part: Part) -> None:
    text = part.get("content")
    if text is not None:
        body.reasoning.append(text if isinstance(text, str) else dumps(text))


def _tool_call(body: _Body, part: Part) -> None:
    call_id = part.get("id")
    name = part.get("name")
    raw = part.get("arguments")
    body.tool_calls.append(
        ToolCall(
            str(call_id) if call_id is not None else None,
            str(name) if name is not None else "",
            raw if raw is None or type(raw) is dict else _arguments(raw),  # a dict as it is (parse_arguments)
        )
    )


def _media_chunk(modality: Any, url: str) -> dict[str, Any]:
    if modality in (None, "image"):
        return {"type": "image", "image_url": url}
    return {"type": str(modality), "url": url}


def _blob(body: _Body, part: Part) -> None:
    data = part.get("content")
    if data is None:  # content capture off, or a placeholder for media the producer left out
        return
    mime = part.get("mime_type") or "application/octet-stream"
    modality = part.get("modality") or (str(mime).split("/")[0] if "/" in str(mime) else None)
    body.media(_media_chunk(modality, f"data:{mime};base64,{data}"))


def _uri(body: _Body, part: Part) -> None:
    uri = part.get("uri")
    if uri is not None:
        body.media(_media_chunk(part.get("modality"), str(uri)))


def _file(body: _Body, part: Part) -> None:
    if part.get("file_id") is not None:
        body.media({"type": "file", "file_id": part.get("file_id")})


def _other(body: _Body, part: Part) -> None:
    """Unknown parts are kept as they come, when they carry anything beyond their type."""
    if any(key not in ("type", "modality") for key in part):
        body.media(part)


#: Part type -> how it lands in the event.
PART_HANDLERS: dict[str, Callable[[_Body, Part], None]] = {
    semconv.PART_TEXT: _text,
    semconv.PART_REASONING: _reasoning,
    semconv.PART_TOOL_CALL: _tool_call,
    semconv.PART_BLOB: _blob,
    semconv.PART_URI: _uri,
    semconv.PART_FILE: _file,
}


def tool_output(call_id: Any, response: Any, call_names: Mapping[str, str], name: str | None = None) -> Message:
    """A tool-output event, named after the call it answers (else ``name``: the tool its message names)."""
    cid = str(call_id) if call_id is not None else None
    return Message(
        role="tool",
        content=response_text(response),
        tool_call_id=cid,
        name=call_names.get(cid, name) if cid is not None else name,
    )


def _tool_name(role: str, msg: Mapping[str, Any]) -> str | None:
    """The tool a ``tool`` message names (Ollama's ``tool_name``): its outputs pair by name when they carry no id."""
    name = msg.get("name") if role == "tool" else None
    return name if isinstance(name, str) else None


def message_events(msg: Mapping[str, Any], call_names: Mapping[str, str]) -> list[Message]:
    """The events one semconv message stands for: each tool-call response an event of its own, the other parts
    one event of the message's role around them, in order (:func:`~spanfold.semconv.shapes.split_tool_responses`);
    parts that make nothing (no content: capture off) make no event, unless nothing else does."""
    role = msg.get("role") or "user"
    if isinstance(role, str) and role in ROLES:
        events = _events(ROLES[role], msg, call_names)
        for event in events:
            if event.role != "tool":
                event.metadata["original_role"] = role
        return events
    return _events(role, msg, call_names)


def _events(role: str, msg: Mapping[str, Any], call_names: Mapping[str, str]) -> list[Message]:
    parts: Sequence[Any] = msg.get("parts") or ()
    if len(parts) == 1:  # fast paths for the common one-part messages (the same events as the general path)
        part = parts[0]
        kind = part.get("type")
        if kind == semconv.PART_TOOL_CALL_RESPONSE:
            return [tool_output(part.get("id"), part.get("response"), call_names, _tool_name(role, msg))]
        if kind == semconv.PART_TEXT and role != "tool":
            text = part.get("content")
            if text is None or isinstance(text, str):
                return [Message(role=role, content=text or None)]
    for part in parts:  # (a loop, not any(): no generator for the usual message without one)
        if part.get("type") == semconv.PART_TOOL_CALL_RESPONSE:
            break
    else:  # no tool-call response: one event, as below
        return [_own(role, msg, _body(parts), call_names)]
    pieces = shapes.split_tool_responses(role, parts, _piece)
    out: list[Message] = []
    last = len(pieces) - 1
    for i, piece in enumerate(pieces):
        if not isinstance(piece, _Body):
            out.append(tool_output(piece.get("id"), piece.get("response"), call_names, _tool_name(role, msg)))
        elif i == last and (piece or not out):
            out.append(_own(role, msg, piece, call_names))
        elif piece:
            out.append(piece.message(role))
    return out


def _body(parts: Iterable[Part]) -> _Body:
    body = _Body()
    for part in parts:
        PART_HANDLERS.get(part.get("type"), _other)(body, part)  # type: ignore[arg-type]
    return body


def _piece(role: Any, parts: list[Part]) -> _Body | Part:
    """A tool-call response part as it is; a run of other parts as the body they make."""
    if len(parts) == 1 and parts[0].get("type") == semconv.PART_TOOL_CALL_RESPONSE:
        return parts[0]
    return _body(parts)


def _own(role: str, msg: Mapping[str, Any], body: _Body, call_names: Mapping[str, str]) -> Message:
    """A message's last event of its own role (the only one, without tool-call responses): a tool message with a
    plain body is a tool output."""
    if role == "tool" and not body.tool_calls:
        return tool_output(msg.get("tool_call_id") or msg.get("id"), body.content(), call_names, _tool_name(role, msg))
    return body.message(role)


def made_call_id(span_id: int, index: int | str) -> str:
    """The id the fold gives a tool call its producer gave none (Gemini, Ollama, text-protocol agents): made of the
    model step's span id and the call's place in it, so every fold of the same spans gives the same id."""
    return f"call_{span_id:016x}_{index}"


def name_calls(msg: Message, span_id: int, prefix: str = "", start: int = 0) -> int:
    """Give the message's tool calls without an id their made ids (:func:`made_call_id`: ``prefix`` and the call's
    index, counted from ``start``); the index after its calls."""
    for tc in msg.tool_calls:
        if tc.id is None:
            tc.id = made_call_id(span_id, f"{prefix}{start}")
        start += 1
    return start


def note_calls(call_names: dict[str, str], msg: Message) -> None:
    """Remember the names of a message's tool calls by id (tool outputs are named after the call they answer)."""
    for tc in msg.tool_calls:
        if tc.id is not None:
            call_names[tc.id] = tc.name


def system_event(parts: Iterable[Part]) -> Message:
    """``gen_ai.system_instructions`` as one ``system`` event."""
    return Message(role="system", content=_body(parts).content())


def fingerprint(msg: Message) -> Fingerprint:
    """Role + content + tool-call ids; a tool output by role + call id only (its text may be re-encoded)."""
    if msg.role == "tool":
        return ("tool", msg.tool_call_id)
    content = msg.content if not isinstance(msg.content, list) else dumps(msg.content)
    calls = tuple([(tc.id, tc.name) for tc in msg.tool_calls]) if msg.tool_calls else ()
    return (msg.role, content, calls)


_NO_NAMES: Mapping[str, str] = {}

#: What :class:`EventCache` keeps of a converted input message: the message (an entry holds it, so its id is never
#: reused while cached), its events as prototypes (converted without tool names: :func:`fresh_event` names them),
#: their fingerprints, and the (id, name) of the tool calls they make.
Converted: TypeAlias = tuple[
    Mapping[str, Any], tuple[Message, ...], tuple[Fingerprint, ...], tuple[tuple[str, str], ...]
]


class EventCache:
    """The events of input messages sent again by the calls of later traces, converted once per message object.

    A parsed history shares its message objects between the calls that re-send it
    (:mod:`spanfold.codecs.json_prefix`); calls that are runs of their own (a fold each: every call of the same
    system prompt and examples, un-stitched calls) would convert them again in each fold. A message is kept the
    second time a fold converts it: the first sight only notes its id, so traces that send nothing twice (most
    agent runs: a fold converts each message once however often its calls re-send it) pay a set insert, not a copy.
    Bounded by entries and by content characters, emptied when full: an entry whose message the parse no longer
    hands out (its prefix cache was emptied, its run ended) is dead weight until then, so the bounds are the few
    messages many first calls share (a process's system prompts and examples), not a history (1,024 entries and
    500k characters: a few MB at most; ``bench/memory.py`` reads +1.3 % from 100k to 1M spans, +5.7 % with 4,096 and
    2M). Thread-safe without a lock: entries are immutable tuples, their events never handed out (:func:`fresh_event`
    copies them).
    """

    __slots__ = ("_chars", "_entries", "_once", "max_chars", "max_entries")

    def __init__(self, max_entries: int = 1024, max_chars: int = 500_000) -> None:
        self._entries: dict[int, Converted] = {}
        #: The ids of messages converted once (not held: a reused id only makes an entry sooner).
        self._once: set[int] = set()
        self._chars = 0
        self.max_entries = max_entries
        self.max_chars = max_chars

    def __contains__(self, raw: Mapping[str, Any]) -> bool:
        """Whether ``raw`` is kept."""
        entry = self._entries.get(id(raw))
        return entry is not None and entry[0] is raw

    def get(self, raw: Mapping[str, Any]) -> Converted | None:
        """``raw``'s entry, made now when this is its second conversion; None on its first."""
        key = id(raw)
        entry = self._entries.get(key)
        if entry is not None and entry[0] is raw:
            return entry
        once = self._once
        if key not in once:
            if len(once) >= self.max_entries:
                once.clear()
            once.add(key)
            return None
        once.discard(key)
        return self.put(raw)

    def put(self, raw: Mapping[str, Any]) -> Converted:
        """Convert ``raw`` and keep it."""
        events = tuple(message_events(raw, _NO_NAMES))
        prints = tuple([fingerprint(e) for e in events])
        calls = tuple([(tc.id, tc.name) for e in events for tc in e.tool_calls if tc.id is not None])
        chars = sum(len(e.content) for e in events if isinstance(e.content, str))
        if len(self._entries) >= self.max_entries or self._chars + chars > self.max_chars:
            self._entries, self._chars = {}, 0
        entry = self._entries[id(raw)] = (raw, events, prints, calls)
        self._chars += chars
        return entry

    def clear(self) -> None:
        self._entries, self._once, self._chars = {}, set(), 0


def fresh_event(proto: Message, call_names: Mapping[str, str]) -> Message:
    """A new event from a cached prototype: what :func:`message_events` makes with ``call_names`` (only a tool output
    has a call id, and it is named after the call it answers, else the tool its message names)."""
    cid = proto.tool_call_id
    return Message(
        proto.role,
        proto.content,
        [ToolCall(tc.id, tc.name, tc.arguments, tc.type) for tc in proto.tool_calls] if proto.tool_calls else [],
        cid,
        call_names.get(cid, proto.name) if cid is not None else proto.name,
        proto.error,
        proto.timestamp,
        dict(proto.metadata) if proto.metadata else {},
    )


#: Input messages of model steps, shared by every fold of the process.
INPUTS = EventCache()

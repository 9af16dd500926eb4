"""smolagents' text protocol turned back into tool calls and outputs: the input messages of a model step.

smolagents re-sends the tool calls and outputs of earlier steps as text: an assistant ``Calling tools:`` message
holding the calls (a Python list of their dicts), a user ``Observation:`` message holding their outputs (joined in
call-id order), or a user ``Call id: ...`` message holding a failed step's error. :func:`input_messages` turns them
back into what they stand for: an assistant message with the tool calls (ids, names, arguments; the step's own text
before them, when it had some, in the same message, as the model gave it) and one ``tool`` message per output (the
outputs as the agent's tool runs observed them, :class:`Observations`). Text that does not parse stays as it was
sent, in smolagents' roles for it (``tool-call`` as assistant, ``tool-response`` as user).
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Sequence
from typing import Any

from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.instrumentation.toolkit.reading.chat_messages import content_parts, tool_call_parts
from spanfold.semconv import parts as p

CALLING_TOOLS = "Calling tools:\n"
OBSERVATION = "Observation:\n"
CALL_ID = "Call id: "


class Observations:
    """What an agent's tool runs observed (the text the agent sends the model as a call's output), by call id, and
    the order the model gave each batch of calls in (smolagents re-sends a batch sorted by id): what turns its
    ``Calling tools:`` and ``Observation:`` messages back into the calls and outputs they stand for. Bounded: the
    oldest half goes when full."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._texts: dict[str, str] = {}
        self._orders: dict[tuple[str, ...], list[str]] = {}

    def add(self, call_id: Any, text: Any) -> None:
        if isinstance(call_id, str) and isinstance(text, str):
            with self._lock:
                _bounded(self._texts, self.LIMIT)[call_id] = text

    def batch(self, ids: list[str]) -> None:
        """The model asked for these calls, in this order."""
        with self._lock:
            _bounded(self._orders, self.LIMIT)[tuple(sorted(ids))] = ids

    def get(self, call_id: str) -> str | None:
        return self._texts.get(call_id)

    def order(self, ids: list[str]) -> list[str]:
        """``ids`` in the order the model gave them, when known."""
        return self._orders.get(tuple(sorted(ids)), ids)

    def clear(self) -> None:
        with self._lock:
            self._texts.clear()
            self._orders.clear()


def _bounded(table: dict[Any, Any], limit: int) -> dict[Any, Any]:
    if len(table) >= limit:
        for key in list(table)[: limit // 2]:
            del table[key]
    return table


def _role(msg: Any) -> str:
    role = m.get(msg, "role")
    return str(getattr(role, "value", role))


def _text(msg: Any) -> str | None:
    """A message's text (its text items joined), or None when it holds something else too."""
    content = m.get(msg, "content")
    if isinstance(content, str):
        return content
    items = m.as_list(content)
    texts = [m.get(item, "text") for item in items if m.get(item, "type") == "text"]
    if len(texts) != len(items) or not all(isinstance(t, str) for t in texts):
        return None
    return "".join(texts)


def _parsed_calls(text: str) -> list[tuple[str, str, Any]] | None:
    """(id, name, arguments) of each call in a ``Calling tools:`` message (a Python list of the calls' dicts), or
    None when the text is not one."""
    if not text.startswith(CALLING_TOOLS):
        return None
    try:
        calls = ast.literal_eval(text[len(CALLING_TOOLS) :])
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    out = []
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(call.get("id"), str):
            return None
        out.append((call["id"], str(function.get("name")), function.get("arguments")))
    return out or None


def _outputs(text: str, ids: list[str], observations: Observations | None) -> list[tuple[str, str]] | None:
    """(call id, output) of each call an ``Observation:`` message (the outputs joined in call-id order) or an error
    message about a call (``Call id: ...``) answers, or None when it is neither."""
    if text.startswith(CALL_ID):
        first, _, rest = text[len(CALL_ID) :].partition("\n")
        return [(first, rest)] if first in ids else None
    if not text.startswith(OBSERVATION) or observations is None:
        return None
    found = [(call_id, observations.get(call_id)) for call_id in sorted(ids)]
    known = [(call_id, out) for call_id, out in found if out is not None]
    if len(known) != len(found) or OBSERVATION + "\n".join(out for _, out in known) != text:
        return None
    order = {call_id: n for n, call_id in enumerate(ids)}
    return sorted(known, key=lambda item: order[item[0]])


def input_messages(messages: Sequence[Any], observations: Observations | None) -> list[p.Message]:
    """The messages a model call was sent, smolagents' text protocol turned back into tool calls and outputs."""
    out: list[p.Message] = []
    ids: list[str] = []  # the calls of the last ``Calling tools:`` message
    for msg in messages:
        role, text = _role(msg), _text(msg)
        calls = _parsed_calls(text) if role == "tool-call" and text is not None else None
        if calls is not None:
            if observations is not None:
                place = {call_id: n for n, call_id in enumerate(observations.order([c[0] for c in calls]))}
                calls.sort(key=lambda call: place.get(call[0], len(place)))
            parts: list[p.Part] = [p.tool_call(call_id, name, arguments) for call_id, name, arguments in calls]
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant" and not _has_calls(last):
                last["parts"] = [*last["parts"], *parts]  # the step's own text, then its calls: one message
            else:
                out.append(p.message("assistant", parts))
            ids = [call_id for call_id, _, _ in calls]
            continue
        answers = _outputs(text, ids, observations) if role == "tool-response" and text is not None else None
        if answers is not None:
            out.extend(p.message("tool", [p.tool_response(call_id, output)]) for call_id, output in answers)
            continue
        role = {"tool-call": "assistant", "tool-response": "user"}.get(role, role)
        parts = content_parts(m.get(msg, "content")) + tool_call_parts(m.get(msg, "tool_calls"))
        out.append(p.message(role, parts))
    return out


def _has_calls(msg: p.Message) -> bool:
    return any(part.get("type") == "tool_call" for part in msg["parts"])

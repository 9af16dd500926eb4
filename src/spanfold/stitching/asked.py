"""The tool calls a traced run's model calls asked for, by trace: a tool run started inside that trace without a call
id (an MCP ``call_tool(name, args)``, a ``@spanfold.tool`` called without ``tool_call_id=``) gets the id of the call it
answers, so its span says which call it answers whether or not an agent span is around it.

The evidence is the trace (a run's own: an agent span's, a framework's, an external parent's) and the call's exact
name and arguments; by name alone is order, not evidence, and nothing is paired across traces. Un-parented zero-code
runs are placed by :mod:`.conversations` instead (their model calls have no trace of their own to share).

Bounded: the traces most recently asking are kept (:data:`MAX_TRACES`), and each keeps its latest
:data:`MAX_CALLS` unanswered calls; a call answered (by id or by match) is let go.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Iterable
from typing import Any

from spanfold.semconv.parts import Message
from spanfold.stitching.pairing import args_key

#: Traces whose unanswered calls are kept (the least recently asking are let go first).
MAX_TRACES = 1024
#: Unanswered calls kept per trace (the oldest are let go first).
MAX_CALLS = 256

_Call = tuple[str, Any, str | None]  # (id, name, arguments key)

_lock = threading.Lock()
_asked: OrderedDict[int, deque[_Call]] = OrderedDict()


def record(trace_id: int, messages: Iterable[Message]) -> None:
    """The model call of trace ``trace_id`` answered ``messages``: the tool calls with an id in them wait."""
    calls: list[_Call] = []
    for message in messages:
        for part in message.get("parts") or ():
            if part.get("type") == "tool_call" and part.get("id") is not None:
                calls.append((str(part.get("id")), part.get("name"), args_key(part.get("arguments"))))
    if not calls:
        return
    with _lock:
        waiting = _asked.get(trace_id)
        if waiting is None:
            waiting = _asked[trace_id] = deque(maxlen=MAX_CALLS)
            if len(_asked) > MAX_TRACES:
                _asked.popitem(last=False)
        else:
            _asked.move_to_end(trace_id)
        waiting.extend(calls)


def answered(trace_id: int, call_id: Any) -> None:
    """A tool run of trace ``trace_id`` brought its own call id: that call is answered."""
    if not _asked:
        return
    with _lock:
        waiting = _asked.get(trace_id)
        if waiting is None:
            return
        key = str(call_id)
        for call in waiting:
            if call[0] == key:
                waiting.remove(call)
                break
        if not waiting:
            del _asked[trace_id]


def take(trace_id: int, name: Any, arguments: Any) -> str | None:
    """The id of the earliest unanswered call of trace ``trace_id`` with this exact name and these arguments (now
    answered), None when there is none."""
    if not _asked:
        return None
    key = args_key(arguments)
    with _lock:
        waiting = _asked.get(trace_id)
        if waiting is None:
            return None
        for call in waiting:
            if call[1] == name and call[2] == key:
                waiting.remove(call)
                if not waiting:
                    del _asked[trace_id]
                return call[0]
    return None


def clear() -> None:
    """Forget every call (a fork's child, :func:`spanfold.shutdown`)."""
    with _lock:
        _asked.clear()

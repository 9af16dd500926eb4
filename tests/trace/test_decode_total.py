"""Property tests: the decoders are total. Any JSON value, of any shape or none, decodes or raises
:class:`TraceError` naming what is wrong (never another exception, which the CLI would print as a traceback), and
whatever decodes can be summarised, rendered, validated and written in every format as strict JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.trace.test_round_trip_properties import invariant_traces

from spanfold.trace import formats
from spanfold.trace.decode import decode, decode_trace
from spanfold.trace.errors import TraceError
from spanfold.trace.model import TraceMeta
from spanfold.trace.render import render_trace
from spanfold.trace.validate import validate_value

#: Every key some trace shape gives a meaning, so random objects hit the decoders' branches, not only their first check.
KEYS = [
    "role", "content", "tool_calls", "tool_call_id", "name", "error", "timestamp", "function", "arguments", "id",
    "type", "messages", "trace", "metadata", "summary", "trace_summary", "output", "text", "token_usage", "input",
    "cached", "duration_ms", "tool", "start_time", "end_time", "model", "usage", "input_tokens", "output_tokens",
    "status", "steps", "start", "end", "models", "span_count", "trace_id", "service", "kind", "event", "call_id",
    "message", "image_url", "timestamp_inferred", "eventCount", "toolNames", "toolCallsByName", "errorCount",
]  # fmt: skip
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()  # NaN and infinities too: Python's JSON reader accepts them
    | st.text(max_size=6)
    | st.sampled_from(["user", "assistant", "tool", "error", "model_step", "tool_call", "tool_result", "message"])
    | st.just("\ud83d")  # half an emoji: a lone surrogate, as a cut provider stream leaves it
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=3), inner),
    max_leaves=30,
)


def _shapes(events: list[dict[str, Any]]) -> list[Any]:
    """One well-formed value of every shape spanfold reads, from one trace."""
    trace = decode_trace(events)
    trace.meta = TraceMeta(trace_id="ab" * 16, models=["m"], start="2026-01-02T03:04:05.000Z", duration_ms=2.0)
    values = [formats.to_value(trace, fmt) for fmt in formats.FORMATS]
    values.append(formats.to_value(trace, "invariant", style="object"))
    values.append(formats.to_value(trace, "agentv", summary_only=True))
    values.append(formats.meta_record(trace))
    values.append({"trace": events, "metadata": trace.meta.to_dict()})
    return json.loads(json.dumps(values))


#: What a node of a well-formed value is replaced by: every JSON type, and the wrong ones inside each.
WRONG: list[Any] = [None, True, -1, 1.5, float("inf"), "x", "\ud83d", [], [1], [None], {}, {"type": 1}, {"x": [2]}]
_REMOVE = object()


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every node of ``value`` (the root's is ``()``)."""
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_paths(item, (*path, key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.extend(_paths(item, (*path, i)))
    return out


def _changed(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """``value`` with the node at ``path`` replaced by ``new`` (or removed: :data:`_REMOVE`)."""
    if not path:
        return None if new is _REMOVE else new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        if not rest and new is _REMOVE:
            return {k: v for k, v in value.items() if k != head}
        return {**value, head: _changed(value[head], rest, new)}
    if not rest and new is _REMOVE:
        return [*value[:head], *value[head + 1 :]]
    return [*value[:head], _changed(value[head], rest, new), *value[head + 1 :]]


def damaged(value: Any) -> Iterator[Any]:
    """``value`` with each of its nodes in turn replaced by each :data:`WRONG` value, or removed."""
    for path in _paths(value):
        for new in [*WRONG, _REMOVE]:
            yield _changed(value, path, new)


def _strict_json(text: str) -> Any:
    """Written text reads back (as every reader reads it) and can be written as UTF-8 (a lone surrogate escaped)."""
    text.encode("utf-8")
    return json.loads(text)


def _read_everything(value: Any, *, validate: bool = True) -> None:
    """What every command and the page do with a decoded value: must not raise."""
    try:
        decoded = decode(value)
    except TraceError as exc:
        assert str(exc)  # a named problem
        return
    if validate:
        validate_value(value)
    meta = decoded.meta
    if meta is not None:
        _strict_json(formats.dumps(meta.to_dict()))
    if decoded.summary is not None:
        _strict_json(formats.dumps(decoded.summary.to_dict()))
    trace = decoded.trace
    if trace is None:
        return
    trace.summary()
    render_trace(trace.events, trace.meta, color=True, max_chars=50, width=60)
    for fmt in formats.FORMATS:
        _strict_json(formats.dumps(formats.to_value(trace, fmt)))
    _strict_json(formats.dumps(formats.to_value(trace, "invariant", style="object")))
    _strict_json(formats.dumps(formats.to_value(trace, "agentv", summary_only=True)))
    _strict_json(formats.meta_line(trace))
    _strict_json(formats.invariant_line(trace))
    _strict_json(formats.agentv_line(trace))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES)
def test_any_json_value(value: Any) -> None:
    _read_everything(value)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(invariant_traces().filter(lambda events: 0 < len(events) <= 3))
def test_every_damage_to_a_well_formed_value(events: list[dict[str, Any]]) -> None:
    """Every shape of one trace, with any one node (the decoders' checks are nested) of the wrong type or missing."""
    for value in _shapes(events):
        for bad in damaged(value):
            _read_everything(bad, validate=False)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=3), VALUES))
def test_any_metadata_record(raw: dict[str, Any]) -> None:
    """A metadata record (a ``.meta.jsonl`` line's ``metadata``) reads leniently: a field of the wrong type is left
    out; what is read is written, and reads back the same."""
    written = formats.dumps(TraceMeta.from_dict(raw).to_dict())
    again = formats.dumps(TraceMeta.from_dict(_strict_json(written)).to_dict())
    assert again == written

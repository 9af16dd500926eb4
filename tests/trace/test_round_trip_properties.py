"""Property tests: any Invariant trace survives AgentV exactly, and the compact form is a fixed point."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from spanfold.trace import formats
from spanfold.trace.compact import compact_messages
from spanfold.trace.decode import decode_trace

text = st.text(max_size=12)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), text)
arguments = st.one_of(st.dictionaries(st.text(min_size=1, max_size=5), json_scalars, max_size=3), text)
chunks = st.lists(
    st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, text),
        st.builds(lambda u: {"type": "image", "image_url": u}, text),
    ),
    min_size=1,
    max_size=3,
)
content = st.one_of(st.none(), text, chunks)
timestamps = st.one_of(st.none(), st.integers(0, 59).map(lambda s: f"2026-01-02T03:04:{s:02d}.000Z"))
error = st.one_of(st.none(), st.builds(lambda t, m: {"type": t, "message": m}, st.text(min_size=1, max_size=8), text))


@st.composite
def invariant_traces(draw: st.DrawFn) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    ids = iter(range(1000))
    for _ in range(draw(st.integers(0, 6))):
        role = draw(st.sampled_from(["system", "user", "assistant", "assistant", "tool", "error", "developer"]))
        event: dict[str, Any] = {"role": role}
        if role == "assistant" and draw(st.booleans()):
            calls = [
                {
                    "id": f"c{next(ids)}",
                    "type": "function",
                    "function": {"name": draw(st.sampled_from(["a", "b"])), "arguments": draw(arguments)},
                }
                for _ in range(draw(st.integers(1, 3)))
            ]
            # a message with calls has text, or none at all (an empty text has no AgentV event of its own)
            event["content"] = draw(st.one_of(st.none(), st.text(min_size=1, max_size=12)))
            event["tool_calls"] = [
                {**c, "function": {**c["function"], "arguments": c["function"]["arguments"]}} for c in calls
            ]
        else:
            event["content"] = draw(content)
        if role == "tool":
            event["tool_call_id"] = f"c{draw(st.integers(0, 5))}"
            err = draw(error)
            if err is not None:
                event["error"] = err
        if role == "error":
            event["error"] = draw(error) or {"type": "Error"}
        ts = draw(timestamps)
        if ts is not None:
            event["timestamp"] = ts
        events.append(event)
    return events


def expected_invariant(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the model writes back: arguments that are JSON-object strings become dicts."""
    out = json.loads(json.dumps(events))
    for ev in out:
        for call in ev.get("tool_calls", []):
            raw = call["function"]["arguments"]
            if isinstance(raw, str):
                try:
                    parsed = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(parsed, dict):
                    call["function"]["arguments"] = parsed
    return out


@settings(max_examples=150, deadline=None)
@given(invariant_traces())
def test_invariant_through_agentv_is_exact(events: list[dict[str, Any]]) -> None:
    trace = decode_trace(events)
    doc = json.loads(json.dumps(formats.to_value(trace, "agentv")))
    back = decode_trace(doc)
    assert back.to_invariant(timestamps=True) == expected_invariant(events)
    assert back.summary() == trace.summary()
    assert doc["trace_summary"]["eventCount"] == len(doc["trace"])


@settings(max_examples=150, deadline=None)
@given(invariant_traces())
def test_compact_is_a_fixed_point(events: list[dict[str, Any]]) -> None:
    compact = compact_messages(decode_trace(events))
    again = compact_messages(decode_trace(json.loads(json.dumps(compact))))
    assert again == compact

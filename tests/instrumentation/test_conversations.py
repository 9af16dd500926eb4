"""The calling thread's conversations (stitching at the source), on their own: a tool run that names its
``gen_ai.conversation.id``, and tool runs that outlast the idle window, with a clock the test moves."""

from __future__ import annotations

import json
import time
from typing import Any

from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import TracerProvider

from spanfold import semconv
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit import tool_spans as tools
from spanfold.stitching import conversations
from spanfold.stitching.conversations import Conversations

TRACER = TracerProvider().get_tracer("test")
RT = Runtime(capture_content=True)
INPUTS = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Book me a table"}]}])
TEXT = {"type": "text", "content": "Hi there"}
OUTPUTS = json.dumps(
    [{"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "book", "arguments": {"n": 2}}]}]
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _trace_of(context: Any) -> int:
    return int(otel_trace.get_current_span(context).get_span_context().trace_id)


def _call(source: Conversations, attrs: dict[str, Any]) -> Any:
    """One un-parented model call that asked for ``book`` (call_1): its span, and its conversation."""
    turn = source.turn({semconv.INPUT_MESSAGES: INPUTS, **attrs})
    span = TRACER.start_span("chat", turn.context)
    turn.started(span)
    span.end()
    turn.done({semconv.OUTPUT_MESSAGES: OUTPUTS})
    return span, turn.conversation


def test_a_tool_run_without_a_call_id_joins_the_conversation_its_id_names() -> None:
    source = Conversations()
    first, conv = _call(source, {semconv.CONVERSATION_ID: "conv-7"})
    context, joined, answered, _ = source.tool_context(None, "search", None, "conv-7")  # no call waits for "search"
    assert joined is conv and _trace_of(context) == first.get_span_context().trace_id
    assert answered is None  # no call was matched
    assert source.tool_context(None, "search", None, "conv-8") == (None, None, None, None)
    assert source.tool_context(None, "search", None) == (None, None, None, None)


def test_start_tool_span_passes_the_producers_conversation_id() -> None:
    source = Conversations()
    conversations.activate(source)
    try:
        first, _ = _call(source, {semconv.CONVERSATION_ID: "conv-7"})
        span = tools.start_tool_span(TRACER, "search", RT, attributes={semconv.CONVERSATION_ID: "conv-7"})
        span.end()
        assert span.get_span_context().trace_id == first.get_span_context().trace_id
    finally:
        conversations.activate(None)


def test_a_running_tool_keeps_its_conversation_open_past_the_idle_window() -> None:
    clock = Clock()
    source = Conversations(idle=30.0, clock=clock)
    _, conv = _call(source, {})
    context, joined, _, _ = source.tool_context("call_1", "book", {"n": 2})
    assert joined is conv
    span = TRACER.start_span("execute_tool book", context)
    source.running(conv, span)
    clock.now += 600  # a ten-minute tool run: past even the window of a run waiting on its tools
    assert source.tool_context(None, "other", None) == (None, None, None, None)  # looks the index over: conv stays
    assert len(source) == 1
    clock.now += 300  # the tool ends, 295 s ago by its own clock (the SDK's end time)
    span.end(end_time=time.time_ns() - 295_000_000_000)
    clock.now += 6  # 306 s after the last look: but the window (300 s: the call asked for a tool) counts from its end
    source.tool_context(None, "other", None)
    assert len(source) == 1
    clock.now += 14  # 309 s after the tool ended
    source.tool_context(None, "other", None)
    assert len(source) == 0


def test_the_window_is_longer_while_a_run_waits_on_its_tools() -> None:
    """A call that asked for tools keeps its conversation open ten times ``idle`` (a plain tool function, or a person
    approving it, gives no sign of life); one that gave a final answer, ``idle``."""
    clock = Clock()
    source = Conversations(idle=30.0, clock=clock)
    _call(source, {})  # asked for ``book``
    answered = source.turn({semconv.INPUT_MESSAGES: INPUTS.replace("Book me a table", "Hello")})
    answered.started(TRACER.start_span("chat"))
    answered.done({semconv.OUTPUT_MESSAGES: json.dumps([{"role": "assistant", "parts": [TEXT]}])})
    assert len(source) == 2
    clock.now += 31
    source.tool_context(None, "other", None)
    assert len(source) == 1  # the answered one closed
    clock.now += 268
    source.tool_context(None, "other", None)
    assert len(source) == 1
    clock.now += 2
    source.tool_context(None, "other", None)
    assert len(source) == 0

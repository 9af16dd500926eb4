"""The exporter's stitcher closes idle conversations by two windows: a run whose latest call asked for tools waits on
them (``ASKING_IDLE_FACTOR`` times longer), a failed call leaves that as it was (it is retried), a final answer
shortens it again; a busy conversation (a span of its trace still running) stays open."""

from __future__ import annotations

from typing import Any

from spanfold.config import ASKING_IDLE_FACTOR
from spanfold.exporter.runs.stitch import Stitcher
from spanfold.exporter.steps import ModelStep

USER = {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}
ASKS = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {}}]}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "18°C"}]}
ANSWER = {"role": "assistant", "parts": [{"type": "text", "content": "18°C in Paris."}]}
IDLE = 30.0


def _step(span_id: int, inputs: list[Any], outputs: list[Any], error: Any = None) -> ModelStep:
    return ModelStep(span_id, None, 0, 1, inputs=inputs, outputs=outputs, error=error)


def _add(stitcher: Stitcher, trace_id: int, step: ModelStep, now: float) -> Any:
    return stitcher.add(step, trace_id, [], {step.span_id: step}, "complete", now)


def _closed(stitcher: Stitcher, now: float) -> int:
    return len(stitcher.idle(now - IDLE, None, now, now - IDLE * ASKING_IDLE_FACTOR))


def test_a_run_waiting_on_its_tools_gets_the_long_window_and_a_failed_call_keeps_it() -> None:
    stitcher = Stitcher()
    conv = _add(stitcher, 1, _step(1, [USER], [ASKS]), 0.0)
    assert conv.asking and _closed(stitcher, IDLE + 1) == 0
    failed = _add(stitcher, 2, _step(2, [USER, ASKS, RESULT], [], error={"type": "RateLimitError"}), 100.0)
    assert failed is conv and conv.asking  # a retry comes: still waiting
    assert _closed(stitcher, 100.0 + IDLE + 1) == 0
    assert stitcher.idle_deadline(IDLE, IDLE * ASKING_IDLE_FACTOR) == 100.0 + IDLE * ASKING_IDLE_FACTOR
    answered = _add(stitcher, 3, _step(3, [USER, ASKS, RESULT], [ANSWER]), 200.0)
    assert answered is conv and not conv.asking
    assert stitcher.idle_deadline(IDLE, IDLE * ASKING_IDLE_FACTOR) == 200.0 + IDLE
    assert _closed(stitcher, 200.0 + IDLE - 1) == 0 and _closed(stitcher, 200.0 + IDLE + 1) == 1
    assert not stitcher.open and not stitcher.asking and not stitcher.resting


def test_a_busy_conversation_stays_open_and_goes_last() -> None:
    stitcher = Stitcher()
    busy = _add(stitcher, 1, _step(1, [USER], [ANSWER]), 0.0)
    other = _add(stitcher, 2, _step(2, [{**USER, "parts": [{"type": "text", "content": "Hi"}]}], [ANSWER]), 1.0)
    closed = stitcher.idle(100.0 - IDLE, lambda conv: conv is busy, 100.0)
    assert closed == [other] and list(stitcher.open.values()) == [busy] and busy.touched == 100.0

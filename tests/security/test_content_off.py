"""Content capture off leaves no prompt, completion, system instruction or tool text anywhere (spans or files), while
the traces still fold: roles, tool names, call ids, the error."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from spanfold.testing import MockLLMServer

from .conftest import Session, Texts, run_everything

MARKED = Texts(
    system="SYSTEM-marker-a1b2 be brief",
    prompt="PROMPT-marker-c3d4 weather?",
    arguments="ARGUMENT-marker-e5f6",
    result="RESULT-marker-g7h8 sunny",
    answer="ANSWER-marker-i9j0 it is sunny",
)
MARKERS = ["SYSTEM-marker", "PROMPT-marker", "ARGUMENT-marker", "RESULT-marker", "ANSWER-marker"]


def test_markers_are_recorded_with_content_on(session: Callable[..., Session], server: MockLLMServer) -> None:
    """The control: the same runs with capture on record every marker (so the test below could fail)."""
    s = session(capture_content=True)
    run_everything(server, MARKED)
    recorded = s.recorded()
    assert recorded.missing(MARKERS) == []
    assert all(m in recorded.spans for m in MARKERS)


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_content_off_leaves_no_text_anywhere(
    session: Callable[..., Session], server: MockLLMServer, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    if how == "environment":
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "NO_CONTENT")
        s = session()
    else:
        s = session(capture_content=False)
    run_everything(server, MARKED)
    recorded = s.recorded()
    assert recorded.leaks(MARKERS) == []
    traces = [json.loads(line) for line in recorded.files["traces.jsonl"].splitlines()]
    assert len(traces) == 7  # five runs, and two failed calls: never one trace (equal text is no retry)
    first = traces[0]  # the first chat run still folds: who spoke, which tool, which call
    assert [e["role"] for e in first] == ["system", "user", "assistant", "tool", "assistant"]
    call = first[2]["tool_calls"][0]
    assert call["function"]["name"] == "get_weather"
    assert first[3]["tool_call_id"] == call["id"]
    assert "AuthenticationError" in recorded.files["traces.jsonl"]

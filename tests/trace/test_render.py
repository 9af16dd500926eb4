"""render_trace: the terminal view of a trace, plain and coloured."""

from __future__ import annotations

import click

from spanfold.trace.decode import decode_trace
from spanfold.trace.model import TraceMeta, Usage
from spanfold.trace.render import format_ms, render_trace

T = "2026-01-02T03:04:05"
EVENTS = [
    {"role": "user", "content": "Weather in Paris?\nAnd Tokyo?", "timestamp": f"{T}.000Z"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
        ],
        "timestamp": f"{T}.250Z",
        "model": "gpt-x",
    },
    {"role": "tool", "tool_call_id": "c1", "content": "sunny", "timestamp": f"{T}.262Z"},
    {
        "role": "tool",
        "tool_call_id": "c9",
        "content": "no such city",
        "error": {"type": "LookupError", "message": "no such city"},
        "timestamp": f"{T}.300Z",
    },
    {
        "role": "user",
        "content": [{"type": "text", "text": "And this? "}, {"type": "image", "image_url": "https://x/y.png"}],
    },
    {
        "role": "error",
        "content": "RateLimitError: slow down",
        "error": {"type": "RateLimitError"},
        "timestamp": f"{T}.500Z",
    },
]


def test_plain_lines() -> None:
    trace = decode_trace(EVENTS)
    trace.events[1].metadata["usage"] = {"input_tokens": 12, "output_tokens": 3}
    meta = TraceMeta("abc123", name="bot", models=["gpt-x"], usage=Usage(12, 3), duration_ms=1500.0, start=f"{T}.000Z")
    assert render_trace(trace.events, meta) == [
        "trace abc123 (bot)",
        "  gpt-x · 12 in / 3 out tokens · 1.50 s · 6 events, 1 tool call, 2 errors",
        "   +0.0 ms user       Weather in Paris?",
        "                      And Tokyo?",
        ' +250.0 ms assistant  -> get_weather({"city": "Paris"})  [c1]',
        "                      (gpt-x, 12 in / 3 out tokens)",
        " +262.0 ms tool       <- get_weather [c1]: sunny  (12.0 ms)",
        " +300.0 ms tool       <- tool [c9]: !! LookupError: no such city",
        "           user       And this? [image: https://x/y.png]",
        " +500.0 ms error      RateLimitError: slow down",
    ]


def test_without_timestamps_or_metadata_there_is_no_time_column() -> None:
    trace = decode_trace([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    assert render_trace(trace.events) == [
        "trace",
        "  2 events, 0 tool calls, 0 errors",
        "user       hi",
        "assistant  yo",
    ]


def test_color_is_ansi_styles_that_click_strips() -> None:
    trace = decode_trace(EVENTS)
    coloured = render_trace(trace.events, color=True)
    assert any("\x1b[" in line for line in coloured)
    assert [click.unstyle(line) for line in coloured] == render_trace(trace.events, color=False)
    assert not any("\x1b[" in line for line in render_trace(trace.events))


def test_format_ms() -> None:
    assert [format_ms(x) for x in (0.25, 999.94, 1500, 61_000)] == ["0.2 ms", "999.9 ms", "1.50 s", "1m01.0s"]


def test_long_contents_are_cut_when_asked() -> None:
    trace = decode_trace(
        [
            {"role": "user", "content": "x" * 50},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": {"q": "y" * 50}}}
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": "z" * 50},
        ]
    )
    lines = render_trace(trace.events, max_chars=10)
    assert lines[2:] == [
        "user       xxxxxxxxxx... (40 more characters)",
        'assistant  -> f({"q": "yyy... (49 more characters))  [c]',
        "tool       <- f [c]: zzzzzzzzzz... (40 more characters)",
    ]
    assert "x" * 50 in render_trace(trace.events)[2]

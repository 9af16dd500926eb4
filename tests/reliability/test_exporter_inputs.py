"""The fold never breaks either: arbitrary, malformed GenAI spans (any producer may send them) through the
processor's worker. It never raises into ``on_end``, never dies, counts what it cannot fold, and keeps writing: a
well-formed trace sent after each batch of garbage comes out exactly right."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanfold import config, counters
from spanfold.exporter.pipeline.processor import FoldingSpanProcessor

from .conftest import FaultLog
from .strategies import JSON, TEXT
from .test_bounded_memory import bench

KEYS = [
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.response.id",
    "gen_ai.response.finish_reasons",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.system_instructions",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.definitions",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.agent.name",
    "gen_ai.conversation.id",
    "gen_ai.prompt.0.content",
    "gen_ai.completion.0.role",
    "llm.input_messages.0.message.content",
    "llm.output_messages.0.message.role",
    "openinference.span.kind",
    "error.type",
]
VALUE = st.one_of(
    JSON.map(json.dumps),
    TEXT,
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True),
    st.booleans(),
    st.lists(TEXT, max_size=3).map(tuple),
    st.sampled_from(["chat", "execute_tool", "invoke_agent", "text_completion", "embeddings", "LLM", "TOOL"]),
)
SPAN = st.tuples(
    st.sampled_from(["chat m", "execute_tool t", "invoke_agent a", "anthropic.messages.create", "other", ""]),
    st.dictionaries(st.sampled_from(KEYS), VALUE, max_size=8),
    st.integers(0, 3),  # parent: 0 = root, else the span id of an earlier span
)
BATCH = st.lists(st.tuples(st.integers(1, 4), st.lists(SPAN, min_size=1, max_size=5)), min_size=1, max_size=4)


def _good_run(run: int) -> list[Any]:
    return [span for _, span in bench.run_spans(run) if span is not None]


def test_arbitrary_spans_never_stop_the_fold(fault_log: FaultLog) -> None:
    written: list[Any] = []
    writer = bench.CountingWriter()
    writer.write = written.append  # type: ignore[method-assign]
    processor = FoldingSpanProcessor([writer], config.load({"trace_timeout": 3600.0}))
    good = 0

    @settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(batch=BATCH)
    def check(batch: list[tuple[int, list[tuple[str, dict[str, Any], int]]]]) -> None:
        nonlocal good
        for trace_no, spans in batch:
            trace_id = 10**9 + trace_no
            for k, (name, attrs, parent) in reversed(list(enumerate(spans, start=1))):  # children end first
                parent_ctx = bench._ctx(trace_id, parent) if 0 < parent < k else None
                processor.on_end(bench._span(name, bench._ctx(trace_id, k), parent_ctx, attrs, bench.T0 + k))
        assert processor.force_flush(30_000)
        written.clear()
        good += 1
        for span in _good_run(good * 10):  # never a stuck run: run numbers ending in 0
            processor.on_end(span)
        assert processor.force_flush(30_000)
        assert [t.to_invariant() for t in written] == [
            [
                {"role": "user", "content": f"Weather in city {good * 10}?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{good * 10}",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": {"c": good * 10}},
                        }
                    ],
                },
                {"role": "tool", "content": "sunny", "tool_call_id": f"call_{good * 10}"},
                {"role": "assistant", "content": f"Sunny in city {good * 10}."},
            ]
        ]

    try:
        check()
    finally:
        processor.shutdown()
    assert good >= 150
    fault_log.check_logged_once()
    assert counters.snapshot().get("fault.processor.worker", 0) == 0  # the worker's last-resort catch never fired

"""AutoGen AgentChat's own spans (scope ``autogen-core``), replayed from a recording of a real team run
(tests/recordings/frameworks/autogen_team.otlp.json: autogen-agentchat 0.7.5, ``RoundRobinGroupChat`` of the weather
agent and a critic, against the mock server, with spanfold's openai and AutoGen instrumentors; autogen-core pins
protobuf 5, so it does not install here). In a team each agent's turn is an ``invoke_agent`` span of its own while
the agent keeps one model context: ``dialects.microsoft.autogen`` makes an agent's turns one thread (its
``gen_ai.agent.id``), so its history is shown once, under its name."""

from __future__ import annotations

from typing import Any

from spanfold import counters
from spanfold.exporter.dialects import microsoft as dialect_microsoft
from spanfold.exporter.dialects.dispatch import REWRITERS
from spanfold.exporter.records import SpanRecord
from spanfold.testing import WEATHER

from .frameworks import folded, recording

RECORDED = "autogen_team.otlp.json"
SPANFOLD_AUTOGEN = "spanfold.instrumentation.frameworks.autogen"


def call(call_id: str, name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]


#: The team's run: (role, agent, content or tool calls) of each event.
TEAM_RUN: list[tuple[str, str, Any]] = [
    ("system", "weather_agent", WEATHER.system),
    ("user", "weather_agent", "Weather in Paris?"),
    ("assistant", "weather_agent", call("call_mock_1", "get_weather", {"city": "Paris"})),
    ("tool", "weather_agent", "Paris: 18°C, sunny"),
    ("system", "critic", "Critique the answer."),
    ("user", "critic", "Weather in Paris?"),
    ("user", "critic", "Paris: 18°C, sunny"),
    ("assistant", "critic", "Say it in Fahrenheit."),
    ("user", "weather_agent", "Say it in Fahrenheit."),
    ("assistant", "weather_agent", call("call_mock_2", "convert_temperature", {"celsius": 18})),
    ("tool", "weather_agent", "18°C is 64.4°F"),
]


def events(records: list[SpanRecord]) -> list[tuple[str, str | None, Any]]:
    return [
        (e.role, e.metadata.get("agent"), [c.to_invariant() for c in e.tool_calls] if e.tool_calls else e.content)
        for e in folded(records).events
    ]


def test_the_rewriter_is_dispatched() -> None:
    assert dialect_microsoft.autogen in REWRITERS


def test_a_team_run_is_one_thread_per_agent_under_its_name() -> None:
    records = recording(RECORDED)
    scope = dialect_microsoft.AUTOGEN_SCOPE
    turns = [r for r in records if r.scope_name == scope and r.name.startswith("invoke_agent")]
    assert sorted(r.name for r in turns) == ["invoke_agent critic", *["invoke_agent weather_agent"] * 2]
    trace = folded(records)
    assert events(records) == TEAM_RUN
    assert trace.meta.name == "weather_team" and trace.meta.status == "complete"
    assert trace.summary().tool_calls_by_name == {"get_weather": 1, "convert_temperature": 1}
    assert "conversation_id" not in trace.meta.to_dict()  # the agent ids name threads, not the run's conversation


def test_autogen_s_tool_spans_fold_into_spanfold_s() -> None:
    """AutoGen's ``execute_tool`` spans (name and call id) nest in spanfold's (arguments and result): one tool step
    each, at spanfold's span."""
    records = recording(RECORDED)
    tools = [r for r in records if r.name.startswith("execute_tool")]
    assert sorted(r.scope_name for r in tools) == [dialect_microsoft.AUTOGEN_SCOPE] * 2 + [SPANFOLD_AUTOGEN] * 2
    counters.reset()
    steps = [s for s in folded(records).meta.steps if s.kind == "tool"]
    assert counters.snapshot().get("fold.nested_tool_steps") == 2
    ours = {format(r.span_id, "016x") for r in tools if r.scope_name == SPANFOLD_AUTOGEN}
    assert [(s.call_id, s.span_id in ours) for s in steps] == [("call_mock_1", True), ("call_mock_2", True)]


def test_autogen_s_own_spans_carry_no_tool_result() -> None:
    """Without spanfold's AutoGen instrumentor (AutoGen's spans and the openai patch's only, as from another process):
    still one thread per agent; an output is known only where a later model call was sent it, and the run's last
    one (AutoGen's default run ends on a tool's result) never was."""
    records = [r for r in recording(RECORDED) if r.scope_name != SPANFOLD_AUTOGEN]
    got = events(records)
    assert [(role, agent) for role, agent, _ in got] == [(role, agent) for role, agent, _ in TEAM_RUN]
    assert [content for role, _, content in got if role == "tool"] == ["Paris: 18°C, sunny", None]


def test_an_agent_s_turns_without_the_dialect_repeat_its_history(monkeypatch: Any) -> None:
    """What the dialect mends: each turn a thread of its own shows the agent's history again, its calls twice."""
    monkeypatch.setattr(dialect_microsoft, "AUTOGEN_SCOPE", "not-autogen")
    trace = folded(recording(RECORDED))
    assert len(trace.events) > len(TEAM_RUN)
    assert trace.summary().tool_calls_by_name == {"get_weather": 2, "convert_temperature": 1}

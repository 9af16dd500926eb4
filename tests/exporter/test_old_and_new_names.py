"""The fold reads the conventions' older names and the current ones alike: other producers still write the older
ones (the anthropic SDK's native spans, openai-v2, OpenLLMetry, spanfold before issue 37). One run written in each
vocabulary folds to the same trace, events and metadata (ids and times aside):

=================================  ==========================================  ====================================
what                               older                                       current
=================================  ==========================================  ====================================
a framework run's root             ``invoke_agent {agent}``, the agents after  ``handle_conversation_turn {agent}``
                                   a handoff children with the run's           with an ``invoke_agent`` child per
                                   ``gen_ai.conversation.id``                  agent (``openai_agents.trace.id``)
a workflow's root                  ``invoke_agent {graph}``                    ``invoke_workflow {graph}`` with
                                                                               ``gen_ai.workflow.name``
cache writes                       ``gen_ai.usage.cache_creation.input_tokens`` ``gen_ai.usage.cache_write...``
finish reasons                     per output message (``finish_reason``)      the span's only
a part of a kind with no type      ``{"type": kind}``                          ``{"type": "generic",
                                                                                 "generic_type": kind}``
an MCP client call                 ``execute_tool {tool}``                     ``tools/call {tool}``
=================================  ==========================================  ====================================
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import SpanKind

from spanfold.trace.model import Trace

from .conftest import Spans, assistant, call, dumps, tool_msg, user

RUN_ID = "trace_0123456789abcdef"
#: The application's name of the conversation (a trace's ``group_id``), on both runs.
CHAT = "chat-7"
GUARD = "guardContent"


def _guard(new: bool) -> dict[str, Any]:
    return {"type": "generic", "generic_type": GUARD} if new else {"type": GUARD}


def _finish(message: dict[str, Any], reason: str, new: bool) -> dict[str, Any]:
    return message if new else {**message, "finish_reason": reason}


def run(spans: Spans, new: bool) -> None:
    """A triage agent hands off to a weather agent, which calls an MCP tool and answers."""
    question = {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}, _guard(new)]}
    transfer = call("call_1", "transfer_to_weather", {})
    weather = call("call_2", "get_weather", {"city": "Paris"})
    history = [question, assistant(None, transfer), tool_msg("call_1", '{"assistant": "Weather"}')]
    usage = {
        "gen_ai.usage.cache_read.input_tokens": 4,
        ("gen_ai.usage.cache_write.input_tokens" if new else "gen_ai.usage.cache_creation.input_tokens"): 6,
    }

    def agent(name: str, root: bool = False) -> Any:
        if new:
            attrs = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": name,
                "gen_ai.invocation.is_nested": True,
                "gen_ai.conversation.id": CHAT,
                "openai_agents.trace.id": RUN_ID,
            }
        else:
            attrs = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": name,
                "gen_ai.conversation.id": CHAT,
            }
        return spans.span(f"invoke_agent {name}", attrs, root=root)

    def calls(name: str) -> None:
        if name == "Triage":
            out = _finish(assistant(None, transfer), "tool_call", new)
            spans.chat([question], [out], attributes=usage)
            return
        out = _finish(assistant(None, weather), "tool_call", new)
        spans.chat(history, [out], attributes=usage)
        tool_attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_2",
            "mcp.method.name": "tools/call",
            "gen_ai.tool.call.arguments": dumps({"city": "Paris"}),
        }
        name_ = "tools/call get_weather" if new else "execute_tool get_weather"
        with spans.span(name_, tool_attrs, kind=SpanKind.CLIENT) as span:
            span.set_attribute("gen_ai.tool.call.result", "sunny")
        answer = _finish(assistant("Sunny in Paris."), "stop", new)
        spans.chat([*history, assistant(None, weather), tool_msg("call_2", "sunny")], [answer], attributes=usage)

    if new:
        turn = {
            "gen_ai.operation.name": "handle_conversation_turn",
            "gen_ai.agent.name": "Triage",
            "gen_ai.invocation.is_nested": False,
            "gen_ai.conversation.id": CHAT,
            "openai_agents.trace.id": RUN_ID,
        }
        with spans.span("handle_conversation_turn Triage", turn, root=True):
            with agent("Triage"):
                calls("Triage")
            with agent("Weather"):
                calls("Weather")
    else:
        with agent("Triage", root=True):
            calls("Triage")
            with agent("Weather"):
                calls("Weather")


def comparable(trace: Trace) -> tuple[Any, dict[str, Any]]:
    """The events and the metadata, without ids, times, the span count and the agents below the root (the current
    vocabulary has one span more: the turn beside its first agent, which is then an agent below it)."""
    meta = trace.meta.to_dict()
    for key in ("trace_id", "root_span_id", "start", "end", "duration_ms", "span_count", "steps", "agents"):
        meta.pop(key, None)
    return trace.to_invariant(), meta


def test_older_and_current_names_fold_to_the_same_trace(spans: Spans) -> None:
    run(spans, new=False)
    run(spans, new=True)
    older, current = spans.flush()
    assert comparable(current) == comparable(older)
    events, meta = comparable(current)
    assert [e["role"] for e in events] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert events[-1]["content"] == "Sunny in Paris."
    assert meta["name"] == "Triage" and meta["status"] == "complete" and meta["conversation_id"] == CHAT
    assert meta["usage"]["input_tokens"] == 30


def workflow(spans: Spans, new: bool) -> None:
    if new:
        attrs = {"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": "supervisor"}
        name = "invoke_workflow supervisor"
    else:
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "supervisor"}
        name = "invoke_agent supervisor"
    with spans.span(name, attrs, root=True):
        spans.chat([user("Weather?")], [_finish(assistant("Sunny."), "stop", new)])


def test_a_workflow_root_reads_like_an_agent_root(spans: Spans) -> None:
    workflow(spans, new=False)
    workflow(spans, new=True)
    older, current = spans.flush()
    assert comparable(current) == comparable(older)
    assert current.meta.name == "supervisor"

"""Dialect: Microsoft's agent frameworks' own spans, each recognised by its scope (one comparison). Both write the
contract's names already and leave one thing unsaid.

AutoGen (scope ``autogen-core``, under AgentChat 0.7) writes ``invoke_agent {agent}`` (``gen_ai.agent.name``, and in a
team ``gen_ai.agent.id``), ``execute_tool {tool}`` (``gen_ai.tool.name``, ``gen_ai.tool.call.id``; no arguments, no
result: spanfold's instrumentor records those in a tool span around AutoGen's, into which the fold merges it) and
``create_agent`` (not a step). In a team an agent runs once per turn, each turn its own ``invoke_agent`` span, while
the agent keeps one model context across its turns (each turn's model call re-sends the agent's whole history). The
turns of one agent are one conversation: an ``invoke_agent`` span with a ``gen_ai.agent.id`` (the agent in its team's
runtime, ``{name}_{team id}/{team id}``, the same for each of its turns) and no ``gen_ai.conversation.id`` is given
that id as its conversation, so the fold keeps one thread per agent and shows each message of its history once.

Agent Framework (scope ``agent_framework``) names its agents' runs, tool runs and model calls by the contract; its
workflow's run is ``workflow.run`` with ``workflow.name`` and ``workflow.id`` and no ``gen_ai.operation.name``, so a
workflow's trace would be named after its first agent: it is rewritten into an ``invoke_workflow {name}`` run (the
agents' runs in it its nested agents).

Never imports :mod:`spanfold.instrumentation`.
"""

from __future__ import annotations

from typing import Any, Final

from spanfold import semconv
from spanfold.exporter.records import SpanRecord

#: The instrumentation scope of AutoGen's GenAI spans (``trace.get_tracer("autogen-core")``).
AUTOGEN_SCOPE: Final = "autogen-core"


def autogen(record: SpanRecord) -> tuple[str, dict[str, Any]] | None:
    """An agent's turn in a team with its agent id as its conversation; None for other spans."""
    if record.scope_name != AUTOGEN_SCOPE:
        return None
    attrs = record.attributes
    agent_id = attrs.get(semconv.AGENT_ID)
    if attrs.get(semconv.OPERATION_NAME) != semconv.OP_INVOKE_AGENT or not isinstance(agent_id, str) or not agent_id:
        return None
    if semconv.CONVERSATION_ID in attrs:
        return None
    return record.name, {**attrs, semconv.CONVERSATION_ID: agent_id}


#: The instrumentation scope of Agent Framework's spans, its workflow run's span name and its name attribute.
AGENT_FRAMEWORK_SCOPE: Final = "agent_framework"
WORKFLOW_RUN: Final = "workflow.run"
WORKFLOW_NAME: Final = "workflow.name"


def agent_framework(record: SpanRecord) -> tuple[str, dict[str, Any]] | None:
    """A workflow's run as an ``invoke_workflow`` span; None for other spans."""
    if record.scope_name != AGENT_FRAMEWORK_SCOPE or record.name != WORKFLOW_RUN:
        return None
    attrs = record.attributes
    if semconv.OPERATION_NAME in attrs:
        return None
    named = attrs.get(WORKFLOW_NAME)
    name = named if isinstance(named, str) and named else "workflow"
    rewritten = {**attrs, semconv.OPERATION_NAME: semconv.OP_INVOKE_WORKFLOW, semconv.WORKFLOW_NAME: name}
    return semconv.span_name(semconv.OP_INVOKE_WORKFLOW, name), rewritten

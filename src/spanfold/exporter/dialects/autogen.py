"""Dialect: AutoGen's own spans (scope ``autogen-core``), recognised by their scope (one comparison).

AutoGen (``autogen-core`` 0.7, under AgentChat) writes the contract's names already: ``invoke_agent {agent}``
(``gen_ai.agent.name``, and in a team ``gen_ai.agent.id``), ``execute_tool {tool}`` (``gen_ai.tool.name``,
``gen_ai.tool.call.id``; no arguments, no result: spanfold's instrumentor records those in a tool span around
AutoGen's, into which the fold merges it) and ``create_agent`` (not a step). One thing the fold needs is not said:
in a team an agent runs once per turn, each turn its own ``invoke_agent`` span, while the agent keeps one model
context across its turns (each turn's model call re-sends the agent's whole history). The turns of one agent are
one conversation: an ``invoke_agent`` span with a ``gen_ai.agent.id`` (the agent in its team's runtime,
``{name}_{team id}/{team id}``, the same for each of its turns) and no ``gen_ai.conversation.id`` is given that id
as its conversation, so the fold keeps one thread per agent and shows each message of its history once.
Never imports :mod:`spanfold.instrumentation`.
"""

from __future__ import annotations

from typing import Any, Final

from spanfold import semconv
from spanfold.exporter.records import SpanRecord

#: The instrumentation scope of AutoGen's GenAI spans (``trace.get_tracer("autogen-core")``).
SCOPE: Final = "autogen-core"


def rewrite(record: SpanRecord) -> tuple[str, dict[str, Any]] | None:
    """An agent's turn in a team with its agent id as its conversation; None for other spans."""
    if record.scope_name != SCOPE:
        return None
    attrs = record.attributes
    agent_id = attrs.get(semconv.AGENT_ID)
    if attrs.get(semconv.OPERATION_NAME) != semconv.OP_INVOKE_AGENT or not isinstance(agent_id, str) or not agent_id:
        return None
    if semconv.CONVERSATION_ID in attrs:
        return None
    return record.name, {**attrs, semconv.CONVERSATION_ID: agent_id}

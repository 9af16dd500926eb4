"""The registry spanfold follows: the OpenTelemetry GenAI semantic conventions at one pinned commit.

The GenAI conventions live in ``open-telemetry/semantic-conventions-genai`` (no tagged releases; the official Python
instrumentations pin a commit of it too). :data:`PINNED_COMMIT` is the commit spanfold follows; the sets below are
the attribute keys, operation names and event names its registry files define there, as plain data (nothing here
reads the network or imports OpenTelemetry).

To move to a newer commit:

1. read ``model/gen-ai/registry.yaml``, ``model/gen-ai/spans.yaml``, ``model/mcp/registry.yaml`` and the
   fragments under ``changelog.d/`` (``*.breaking.md`` first) at that commit;
2. set :data:`PINNED_COMMIT` to it and make the sets below say what those files define there (keys added, renamed,
   removed);
3. run ``tests/semconv/test_written_names.py``: it fails for every name spanfold writes that the new registry lacks
   (rename it in :mod:`spanfold.semconv.names`, keep the old name among the ones the dialects read, and update its
   row in :mod:`spanfold.semconv.written`).
"""

from __future__ import annotations

from typing import Final

#: The repository of the GenAI conventions.
PINNED_REPOSITORY: Final = "open-telemetry/semantic-conventions-genai"
#: The commit of :data:`PINNED_REPOSITORY` whose registry spanfold follows.
PINNED_COMMIT: Final = "e9de14bafd9725937c6b0c219897260074a2896c"

#: Where each set below comes from (the value of a row of :data:`spanfold.semconv.written.WRITTEN`).
GENAI: Final = "model/gen-ai/registry.yaml"
MCP: Final = "model/mcp/registry.yaml"
#: Attributes of the core ``open-telemetry/semantic-conventions`` registry that the GenAI and MCP span definitions
#: reference (``ref:``) at the pinned commit.
CORE: Final = "semantic-conventions core registry (referenced)"

#: ``model/gen-ai/registry.yaml``: every attribute key (``gen_ai.prompt.variable`` is a template: ``.<name>``).
GENAI_ATTRIBUTES: Final = frozenset(
    {
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "gen_ai.request.max_tokens",
        "gen_ai.request.choice.count",
        "gen_ai.request.temperature",
        "gen_ai.request.top_p",
        "gen_ai.request.top_k",
        "gen_ai.request.stop_sequences",
        "gen_ai.request.frequency_penalty",
        "gen_ai.request.presence_penalty",
        "gen_ai.request.encoding_formats",
        "gen_ai.request.seed",
        "gen_ai.request.stream",
        "gen_ai.request.reasoning.level",
        "gen_ai.request.previous_response.id",
        "gen_ai.request.stream_cursor",
        "gen_ai.response.id",
        "gen_ai.response.model",
        "gen_ai.response.finish_reasons",
        "gen_ai.response.status",
        "gen_ai.response.time_to_first_chunk",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_write.input_tokens",
        "gen_ai.usage.text.input_tokens",
        "gen_ai.usage.image.input_tokens",
        "gen_ai.usage.audio.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.reasoning.output_tokens",
        "gen_ai.usage.text.output_tokens",
        "gen_ai.usage.image.output_tokens",
        "gen_ai.usage.audio.output_tokens",
        "gen_ai.usage.text.cache_read.input_tokens",
        "gen_ai.usage.image.cache_read.input_tokens",
        "gen_ai.usage.audio.cache_read.input_tokens",
        "gen_ai.token.modality",
        "gen_ai.conversation.id",
        "gen_ai.conversation.compacted",
        "gen_ai.agent.id",
        "gen_ai.agent.name",
        "gen_ai.agent.description",
        "gen_ai.agent.version",
        "gen_ai.main_agent.id",
        "gen_ai.main_agent.name",
        "gen_ai.main_agent.description",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.description",
        "gen_ai.tool.type",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.tool.definitions",
        "gen_ai.data_source.id",
        "gen_ai.operation.name",
        "gen_ai.output.type",
        "gen_ai.embeddings.dimension.count",
        "gen_ai.retrieval.documents",
        "gen_ai.retrieval.query.text",
        "gen_ai.retrieval.top_k",
        "gen_ai.memory.store.id",
        "gen_ai.memory.record.id",
        "gen_ai.memory.record.count",
        "gen_ai.memory.query.text",
        "gen_ai.memory.records",
        "gen_ai.system_instructions",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.evaluation.name",
        "gen_ai.evaluation.score.value",
        "gen_ai.evaluation.score.label",
        "gen_ai.evaluation.explanation",
        "gen_ai.prompt.name",
        "gen_ai.prompt.version",
        "gen_ai.prompt.variable",
        "gen_ai.workflow.name",
        "gen_ai.invocation.is_nested",
        "gen_ai.skill.name",
        "gen_ai.skill.description",
        "gen_ai.skill.source.uri",
        "gen_ai.skill.resource.name",
    }
)

#: ``model/mcp/registry.yaml``: every attribute key.
MCP_ATTRIBUTES: Final = frozenset({"mcp.method.name", "mcp.session.id", "mcp.resource.uri", "mcp.protocol.version"})

#: Core attributes the GenAI spans (``error.type``, ``server.*``; the ``exception`` span event's), the MCP spans
#: (``jsonrpc.*``, ``network.*``, ``rpc.response.status_code``) and the Bedrock refinement (``aws.request_id`` of the
#: AWS SDK conventions) reference.
CORE_ATTRIBUTES: Final = frozenset(
    {
        "error.type",
        "server.address",
        "server.port",
        "exception.type",
        "exception.message",
        "exception.stacktrace",
        "jsonrpc.request.id",
        "jsonrpc.protocol.version",
        "network.transport",
        "network.protocol.name",
        "network.protocol.version",
        "rpc.response.status_code",
        "aws.request_id",
    }
)

#: Every attribute key the pinned registry and the core attributes it references define, by where each comes from.
ATTRIBUTES: Final = {GENAI: GENAI_ATTRIBUTES, MCP: MCP_ATTRIBUTES, CORE: CORE_ATTRIBUTES}

#: ``gen_ai.operation.name``'s members.
OPERATIONS: Final = frozenset(
    {
        "chat",
        "generate_content",
        "text_completion",
        "embeddings",
        "retrieval",
        "fetch_response",
        "create_agent",
        "invoke_agent",
        "execute_tool",
        "invoke_workflow",
        "handle_conversation_turn",
        "plan",
        "search_memory",
        "create_memory",
        "update_memory",
        "upsert_memory",
        "delete_memory",
        "create_memory_store",
        "delete_memory_store",
    }
)

#: ``model/gen-ai/metrics.yaml``: the metrics it defines. (Not ``gen_ai.client.token.usage``: at the pinned commit
#: the conventions count tokens per inference elsewhere; nor a ``gen_ai.client.operation.time_to_first_chunk``: a
#: stream's first chunk is ``gen_ai.client.inference.time_to_first_chunk``.)
GENAI_METRICS_FILE: Final = "model/gen-ai/metrics.yaml"
METRICS: Final = frozenset(
    {
        "gen_ai.client.operation.duration",
        "gen_ai.client.inference.duration",
        "gen_ai.client.inference.time_to_first_chunk",
        "gen_ai.client.inference.time_per_output_chunk",
        "gen_ai.server.request.duration",
        "gen_ai.server.time_per_output_token",
        "gen_ai.server.time_to_first_token",
        "gen_ai.invocation.duration",
        "gen_ai.invoke_agent.inference_calls",
        "gen_ai.invoke_agent.tool_calls",
        "gen_ai.execute_tool.duration",
    }
)

#: Event names of ``model/gen-ai/events.yaml`` (log-record events).
GENAI_EVENTS: Final = "model/gen-ai/events.yaml"
EVENTS: Final = frozenset({"gen_ai.client.inference.operation.details", "gen_ai.evaluation.result"})


def defines(name: str) -> bool:
    """Whether the pinned registry (or a core attribute it references) defines the attribute ``name``; a template
    attribute (``gen_ai.prompt.variable.<name>``) counts as its template."""
    if any(name in keys for keys in ATTRIBUTES.values()):
        return True
    return name.startswith("gen_ai.prompt.variable.")

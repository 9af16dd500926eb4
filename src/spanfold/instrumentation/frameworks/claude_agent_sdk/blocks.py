"""The Claude Agent SDK's messages as typed parts, usage and options, read without importing the SDK.

Its content blocks are the Anthropic API's as dataclasses told apart by class name (``TextBlock``, ``ToolUseBlock``,
``ToolResultBlock`` ...): :mod:`~spanfold.instrumentation.toolkit.reading.anthropic_blocks` reads them, and the
blocks of a prompt the application sends (a string, or the stream-json ``{"type": "user", "message": {...}}`` dicts
of an async iterable prompt), and the stream-json ``usage`` object (its thinking tokens the reasoning ones).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

from spanfold import semconv
from spanfold.instrumentation.toolkit.invocation import Usage
from spanfold.instrumentation.toolkit.reading import anthropic_blocks
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.semconv import parts as p
from spanfold.semconv import shapes

#: The agent's name when the options name none (``extra_args={"agent": ...}``, the CLI's ``--agent``).
DEFAULT_NAME: Final = "claude_agent"
#: The name of a subagent whose ``Agent`` tool call names no ``subagent_type``.
SUBAGENT_NAME: Final = "subagent"
#: The CLI's own environment variables that send its model calls to a cloud provider, and that provider.
CLOUD_PROVIDERS: Final = (
    ("CLAUDE_CODE_USE_BEDROCK", semconv.PROVIDER_AWS_BEDROCK),
    ("CLAUDE_CODE_USE_VERTEX", semconv.PROVIDER_GCP_VERTEX_AI),
)
#: The model name the CLI gives a message it made itself (an API error told as a message).
SYNTHETIC_MODEL: Final = "<synthetic>"


#: The SDK's block classes and the API's block types they are.
BLOCK_TYPES: Final = {
    "TextBlock": "text",
    "ThinkingBlock": "thinking",
    "ToolUseBlock": "tool_use",
    "ServerToolUseBlock": "server_tool_use",
    "ToolResultBlock": "tool_result",
    "ServerToolResultBlock": "server_tool_result",
}


def text_of(content: Any) -> str:
    """The text of a message's ``TextBlock``s, joined."""
    return "".join(block.text for block in m.as_list(content) if type(block).__name__ == "TextBlock")


def block_parts(block: Any) -> list[p.Part]:
    """The parts of one content block of a message the SDK parsed (an empty text: none)."""
    kind = type(block).__name__
    if kind == "TextBlock" and not block.text:
        return []
    return anthropic_blocks.block_parts(block, BLOCK_TYPES.get(kind, kind))


def content_messages(role: str, content: Any) -> list[p.Message]:
    """A message's content (a string or blocks) as messages: each tool result a ``tool`` message of its own."""
    if isinstance(content, str):
        return [p.message(role, [p.text(content)])]
    parts = [part for block in m.as_list(content) for part in block_parts(block)]
    return shapes.split_tool_responses(role, parts, p.message)


def prompt_message(item: Any) -> p.Message | None:
    """The user message of a prompt: a string, or one stream-json ``user`` dict (its content a string or Anthropic
    content blocks)."""
    message = item.get("message") if isinstance(item, Mapping) else None
    content = item if isinstance(item, str) else message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, (str, list)):
        return None
    blocks = [content] if isinstance(content, str) else content
    return p.message("user", [part for block in blocks for part in anthropic_blocks.block_parts(block)])


def usage(raw: Any) -> Usage | None:
    """The tokens of a stream-json ``usage`` object (None: none given), its thinking tokens the reasoning ones."""
    if not isinstance(raw, Mapping):
        return None
    used = anthropic_blocks.usage(raw)
    if used is not None:
        used.reasoning_output_tokens = m.get(raw.get("output_tokens_details"), "thinking_tokens") or None
    return used


def agent_name(options: Any) -> str:
    """The session's agent: ``extra_args={"agent": name}`` (the CLI's ``--agent``), else :data:`DEFAULT_NAME`."""
    name = m.get(getattr(options, "extra_args", None), "agent")
    return name if isinstance(name, str) and name else DEFAULT_NAME


def system_parts(prompt: Any) -> list[p.Part] | None:
    """The system prompt the application gives (a string, or ``{"type": "custom", "prompt": ...}``); None for
    Claude Code's own (a preset, a file: text the SDK never sees)."""
    if isinstance(prompt, Mapping) and prompt.get("type") == "custom":
        prompt = prompt.get("prompt")
    return [p.text(prompt)] if isinstance(prompt, str) and prompt else None


def subagent_prompts(options: Any) -> dict[str, list[p.Part]]:
    """The system prompt of each subagent the options define (``agents={name: AgentDefinition(prompt=...)}``)."""
    agents = getattr(options, "agents", None)
    out: dict[str, list[p.Part]] = {}
    for name, definition in agents.items() if isinstance(agents, Mapping) else ():
        parts = system_parts(getattr(definition, "prompt", None))
        if parts is not None:
            out[str(name)] = parts
    return out


def provider(options: Any) -> str:
    """Where the CLI sends its model calls: Amazon Bedrock or Vertex AI when its environment (the options' ``env``,
    else this process's, which the CLI inherits) says so, else the Anthropic API."""
    for variable, name in CLOUD_PROVIDERS:
        if (environment(options, variable) or "").strip().lower() in ("1", "true"):
            return name
    return semconv.PROVIDER_ANTHROPIC


def environment(options: Any, name: str) -> str | None:
    """A variable of the CLI's environment: the options' ``env``, else this process's."""
    value = m.get(getattr(options, "env", None), name)
    return value if isinstance(value, str) else os.environ.get(name)

"""The Claude Agent SDK's messages as typed parts, usage and options, read without importing the SDK.

* an ``AssistantMessage``'s ``TextBlock`` -> ``text``, ``ThinkingBlock`` -> ``reasoning``, ``ToolUseBlock`` and
  ``ServerToolUseBlock`` -> ``tool_call``, ``ServerToolResultBlock`` -> a ``tool`` message of its own after it;
* a ``UserMessage``'s ``ToolResultBlock`` -> a ``tool`` message (``tool_call_response``: the result's text, or its
  blocks when they are not all text), its text -> a ``user`` message;
* a prompt the application sends (a string, or the stream-json ``{"type": "user", "message": {...}}`` dicts of an
  async iterable prompt) -> a ``user`` message;
* usage (the stream-json ``usage`` object) as the Anthropic API's: input tokens count the cache reads and writes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

from spanfold import semconv
from spanfold.instrumentation.toolkit.invocation import Usage, usage_with_cache
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


def _is_text(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "text"


def result_value(content: Any) -> Any:
    """A tool result's content as the model got it: its text (text blocks, dicts as the CLI sends them, joined),
    else its blocks."""
    if content is None or isinstance(content, str):
        return content
    blocks = m.as_list(content)
    return "".join(str(b.get("text") or "") for b in blocks) if all(map(_is_text, blocks)) else blocks


def text_of(content: Any) -> str:
    """The text of a message's ``TextBlock``s, joined."""
    return "".join(block.text for block in m.as_list(content) if type(block).__name__ == "TextBlock")


def block_parts(block: Any) -> list[p.Part]:
    """The parts of one content block of a message the SDK parsed (its dataclasses, told by their class name)."""
    kind = type(block).__name__
    if kind == "TextBlock":
        return [p.text(block.text)] if block.text else []
    if kind == "ThinkingBlock":
        return [p.reasoning(block.thinking)]
    if kind in ("ToolUseBlock", "ServerToolUseBlock"):
        return [p.tool_call(block.id, block.name, block.input)]
    if kind in ("ToolResultBlock", "ServerToolResultBlock"):
        return [p.tool_response(block.tool_use_id, result_value(block.content))]
    return [p.other(kind)]


def content_messages(role: str, content: Any) -> list[p.Message]:
    """A message's content (a string or blocks) as messages: each tool result a ``tool`` message of its own."""
    if isinstance(content, str):
        return [p.message(role, [p.text(content)])]
    parts = [part for block in m.as_list(content) for part in block_parts(block)]
    return shapes.split_tool_responses(role, parts, p.message)


def prompt_message(item: Any) -> p.Message | None:
    """The user message of a prompt: a string, or one stream-json ``user`` dict (its content a string or Anthropic
    content blocks, whose text is kept and whose other blocks keep their type)."""
    message = item.get("message") if isinstance(item, Mapping) else None
    content = item if isinstance(item, str) else message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, str):
        return p.message("user", [p.text(content)])
    if not isinstance(content, list):
        return None
    return p.message("user", [_prompt_part(block) for block in content])


def _prompt_part(block: Any) -> p.Part:
    if _is_text(block):
        return p.text(block.get("text"))
    return p.other(block.get("type") if isinstance(block, Mapping) else type(block).__name__)


def usage(raw: Any) -> Usage | None:
    """The tokens of a stream-json ``usage`` object (None: none given), its thinking tokens the reasoning ones."""
    if not isinstance(raw, Mapping):
        return None
    keys = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    used = usage_with_cache(*(raw.get(key) for key in keys))
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

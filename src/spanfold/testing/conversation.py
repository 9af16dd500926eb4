"""Read the conversation a request carries, whatever the API, into provider-neutral turns."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from spanfold.testing.replies import ToolCallSpec

Api = Literal[
    "chat",
    "messages",
    "responses",
    "gemini",
    "converse",
    "invoke",
    "groq",
    "mistral",
    "ollama",
    "ollama_generate",
    "cohere",
    "embeddings",
    "cohere_embed",
    "cohere_rerank",
    "gemini_embed",
    "vertex_embed",
    "vertex_predict",
    "mistral_embed",
    "ollama_embed",
    "bedrock_embed",
]
Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class Turn:
    """One message of a conversation: text, the tool calls an assistant made, or a tool's result (``role="tool"``)."""

    role: Role
    text: str = ""
    tool_calls: tuple[ToolCallSpec, ...] = ()
    tool_call_id: str | None = None


def _text_of(content: Any) -> str:
    """Text of a string or of a list of content parts / blocks (``text``, ``input_text``, ``output_text``)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text_of(part) for part in content)
    if isinstance(content, dict):
        text = content.get("text")
        if isinstance(text, str):
            return text
        if content.get("type") == "tool_result":
            return _text_of(content.get("content"))
        document = content.get("document")  # Cohere v2 tool results: {"type": "document", "document": {"data"}}
        if content.get("type") == "document" and isinstance(document, dict):
            data = document.get("data")
            return data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return ""


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw:
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {}
        if isinstance(parsed, dict):
            return parsed
    return {}


def _role(raw: Any) -> Role:
    if raw in ("system", "developer"):
        return "system"
    if raw == "assistant":
        return "assistant"
    if raw == "tool":
        return "tool"
    return "user"


def _dicts(items: Any) -> Iterable[dict[str, Any]]:
    if isinstance(items, list):
        yield from (item for item in items if isinstance(item, dict))


def chat_turns(body: dict[str, Any]) -> list[Turn]:
    """Chat Completions ``messages`` (``role: tool`` messages are the tool results)."""
    turns: list[Turn] = []
    for message in _dicts(body.get("messages")):
        role = _role(message.get("role"))
        if role == "tool":
            turns.append(Turn("tool", _text_of(message.get("content")), tool_call_id=message.get("tool_call_id")))
            continue
        calls = tuple(
            ToolCallSpec(
                str(call.get("function", {}).get("name", "")),
                _arguments(call.get("function", {}).get("arguments")),
                call.get("id"),
            )
            for call in _dicts(message.get("tool_calls"))
        )
        turns.append(Turn(role, _text_of(message.get("content")), calls))
    return turns


def messages_turns(body: dict[str, Any]) -> list[Turn]:
    """Anthropic Messages ``system`` and ``messages`` (``tool_result`` blocks in user messages are the tool results)."""
    turns: list[Turn] = []
    if body.get("system"):
        turns.append(Turn("system", _text_of(body["system"])))
    for message in _dicts(body.get("messages")):
        role = _role(message.get("role"))
        content = message.get("content")
        if isinstance(content, str):
            turns.append(Turn(role, content))
            continue
        blocks = list(_dicts(content))
        for block in blocks:
            if block.get("type") == "tool_result":
                turns.append(Turn("tool", _text_of(block.get("content")), tool_call_id=block.get("tool_use_id")))
        text = "".join(_text_of(block) for block in blocks if block.get("type") == "text")
        calls = tuple(
            ToolCallSpec(str(block.get("name", "")), _arguments(block.get("input")), block.get("id"))
            for block in blocks
            if block.get("type") == "tool_use"
        )
        if text or calls or not blocks:
            turns.append(Turn(role, text, calls))
    return turns


def converse_turns(body: dict[str, Any]) -> list[Turn]:
    """Bedrock Converse (and Amazon Nova bodies): ``system`` text blocks, ``messages[].content[]`` blocks with one key
    each (``toolResult`` blocks in user messages are the tool results)."""
    turns: list[Turn] = []
    system = _text_of(list(_dicts(body.get("system"))))
    if system:
        turns.append(Turn("system", system))
    for message in _dicts(body.get("messages")):
        role = _role(message.get("role"))
        blocks = list(_dicts(message.get("content")))
        for block in blocks:
            result = block.get("toolResult")
            if isinstance(result, dict):
                turns.append(Turn("tool", _text_of(result.get("content")), tool_call_id=result.get("toolUseId")))
        text = "".join(block["text"] for block in blocks if isinstance(block.get("text"), str))
        uses = [block["toolUse"] for block in blocks if isinstance(block.get("toolUse"), dict)]
        calls = tuple(
            ToolCallSpec(str(u.get("name", "")), _arguments(u.get("input")), u.get("toolUseId")) for u in uses
        )
        if text or calls or not blocks:
            turns.append(Turn(role, text, calls))
    return turns


def generate_turns(body: dict[str, Any]) -> list[Turn]:
    """Ollama ``/api/generate``: the ``system`` text and the ``prompt``."""
    system = [Turn("system", _text_of(body["system"]))] if body.get("system") else []
    return [*system, Turn("user", _text_of(body.get("prompt")))]


def responses_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's ``input`` as a list of items (a plain string is one user message)."""
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    return list(_dicts(raw))


def responses_turns(items: Sequence[dict[str, Any]], instructions: Any = None) -> list[Turn]:
    """Responses API items: messages, ``function_call`` items and ``function_call_output`` items (the results)."""
    turns: list[Turn] = []
    if instructions:
        turns.append(Turn("system", _text_of(instructions)))
    for item in items:
        kind = item.get("type", "message")
        if kind == "function_call":
            call = ToolCallSpec(str(item.get("name", "")), _arguments(item.get("arguments")), item.get("call_id"))
            turns.append(Turn("assistant", "", (call,)))
        elif kind == "function_call_output":
            turns.append(Turn("tool", _text_of(item.get("output")), tool_call_id=item.get("call_id")))
        elif kind == "message":
            turns.append(Turn(_role(item.get("role")), _text_of(item.get("content"))))
    return turns


def gemini_turns(body: dict[str, Any]) -> list[Turn]:
    """Gemini ``systemInstruction`` and ``contents``: ``functionCall`` parts are the model's tool calls,
    ``functionResponse`` parts the tool results (by name, with an ``id`` only when the call had one)."""
    turns: list[Turn] = []
    system = body.get("systemInstruction")
    if isinstance(system, dict):
        turns.append(Turn("system", "".join(_text_of(part) for part in _dicts(system.get("parts")))))
    for content in _dicts(body.get("contents")):
        parts = list(_dicts(content.get("parts")))
        for part in parts:
            response = part.get("functionResponse")
            if isinstance(response, dict):
                result = response.get("response")
                if isinstance(result, dict) and len(result) == 1 and isinstance(next(iter(result.values())), str):
                    result = next(iter(result.values()))  # {"result": text} / {"output": text}
                text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
                turns.append(Turn("tool", text, tool_call_id=response.get("id")))
        calls = tuple(
            ToolCallSpec(str(call.get("name", "")), _arguments(call.get("args")), call.get("id"))
            for call in (part.get("functionCall") for part in parts)
            if isinstance(call, dict)
        )
        texts = [part["text"] for part in parts if isinstance(part.get("text"), str) and not part.get("thought")]
        text = "".join(texts)
        if text or calls or not parts:
            turns.append(Turn("assistant" if content.get("role") == "model" else "user", text, calls))
    return turns


def prompt_of(body: dict[str, Any]) -> str:
    """The part of a request body that counts as input tokens: ``system``, ``instructions``, ``messages``, ``input``
    (Gemini: ``systemInstruction``, ``contents``; Ollama's generate: ``prompt``).

    Canonical JSON (sorted keys, no spaces, non-ASCII kept) of those keys that are present.
    """
    keys = ("system", "instructions", "messages", "input", "systemInstruction", "contents", "prompt")
    prompt = {key: body[key] for key in keys if key in body}
    return json.dumps(prompt, ensure_ascii=False, separators=(",", ":"), sort_keys=True)

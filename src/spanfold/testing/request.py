"""What the mock server received: one request, as responders and tests see it."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import unquote

from spanfold.testing.conversation import (
    Api,
    Turn,
    chat_turns,
    converse_turns,
    gemini_turns,
    generate_turns,
    messages_turns,
    prompt_of,
    responses_items,
    responses_turns,
)
from spanfold.testing.replies import count_tokens


@dataclass(frozen=True, eq=False)
class MockRequest:
    """One request to the mock server.

    ``api`` is ``"chat"``, ``"messages"`` or ``"responses"``; ``body`` the parsed JSON body; ``headers`` lower-case
    names. ``history`` holds, for a Responses request with ``previous_response_id``, the items of the earlier
    responses' conversation (their inputs and outputs), so ``turns()`` sees the whole conversation.
    """

    api: Api
    path: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    index: int = 0
    history: tuple[dict[str, Any], ...] = ()

    @property
    def stream(self) -> bool:
        if self.api == "gemini":  # the method in the path: ``models/{model}:streamGenerateContent``
            return self.path.endswith(":streamGenerateContent")
        if self.api in ("converse", "invoke"):  # Bedrock: the operation says it
            return self.path.endswith("-stream")
        return self.body.get("stream") is True

    @property
    def model(self) -> str:
        if self.api == "gemini":  # ``.../models/{model}:generateContent``
            name = self.path.rpartition("/models/")[2].partition(":")[0]
            return name or "mock-model"
        if self.api in ("converse", "invoke", "bedrock_embed"):  # Bedrock: /model/{modelId}/...
            return unquote(self.path.split("/")[2])
        model = self.body.get("model")
        return model if isinstance(model, str) and model else "mock-model"

    @property
    def include_usage(self) -> bool:
        """Chat Completions streaming: ``stream_options.include_usage``."""
        options = self.body.get("stream_options")
        return isinstance(options, dict) and options.get("include_usage") is True

    @property
    def input_tokens(self) -> int:
        """Input tokens the mock reports: ``count_tokens`` of ``conversation.prompt_of(body)``."""
        return count_tokens(prompt_of(self.body))

    @property
    def input_items(self) -> list[dict[str, Any]]:
        """Responses API: the items this request sent (``input``), a string input as one user message."""
        return responses_items(self.body)

    @cached_property
    def _turns(self) -> tuple[Turn, ...]:
        if self.api in ("chat", "groq", "mistral", "ollama", "cohere"):  # tool results: role "tool" messages
            return tuple(chat_turns(self.body))
        if self.api == "messages" or (self.api == "invoke" and "anthropic_version" in self.body):
            return tuple(messages_turns(self.body))
        if self.api == "gemini":
            return tuple(gemini_turns(self.body))
        if self.api in ("converse", "invoke"):
            return tuple(converse_turns(self.body))
        if self.api == "ollama_generate":
            return tuple(generate_turns(self.body))
        return tuple(responses_turns([*self.history, *self.input_items], self.body.get("instructions")))

    def turns(self) -> list[Turn]:
        """The whole conversation, provider-neutral."""
        return list(self._turns)

    def tool_results(self) -> list[Turn]:
        """The tool results in the conversation (``Turn.role == "tool"``, ``tool_call_id`` and ``text``)."""
        return [turn for turn in self._turns if turn.role == "tool"]

    def last_user_text(self) -> str | None:
        for turn in reversed(self._turns):
            if turn.role == "user":
                return turn.text
        return None

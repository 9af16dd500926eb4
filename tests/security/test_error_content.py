"""Error messages are content: a tool's exception that quotes its input and a provider's 400 that echoes the prompt
follow the same rules as messages (capture off: nothing of them recorded; redaction: redacted). And the secrets the
built-in redaction used to miss: a card number sent as a JSON number, a JWT, an AWS secret access key, stop
sequences. Spans and every file are checked."""

from __future__ import annotations

import json
from collections.abc import Callable

import openai
import pytest

import spanfold
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec

from .conftest import OPENAI_KEY, Session

EMAIL = "bob.jones@example.org"
CARD = 4111111111111111  # Luhn-valid, as a JSON number
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PROMPT_MARKER = "PROMPT-echo-marker-q1w2"
TOOL_MARKER = "TOOLINPUT-marker-z9x8"


def _run(server: MockLLMServer) -> None:
    """A tool that fails quoting its input, a 400 that echoes the prompt, a tool call with a card number as a JSON
    number, a prompt with a JWT and an AWS secret, stop sequences holding an email."""

    @spanfold.tool
    def charge(card: int, note: str) -> str:
        raise ValueError(f"cannot charge {card} for {note} ({EMAIL})")

    client = openai.OpenAI(api_key=OPENAI_KEY, base_url=server.base_url, max_retries=0)
    server.script(
        Reply.tools([ToolCallSpec("charge", {"card": CARD, "note": TOOL_MARKER})]),
        Reply.error(400, f"Invalid prompt: '{PROMPT_MARKER} {EMAIL} {CARD}' is not allowed", should_retry=False),
    )
    with spanfold.agent("payments"):
        messages: list[dict[str, object]] = [
            {"role": "user", "content": f"{PROMPT_MARKER} token {JWT} secret {AWS_SECRET}"}
        ]
        reply = client.chat.completions.create(model="gpt-4o", messages=messages, stop=[f"END {EMAIL}"])  # type: ignore[arg-type]
        call = reply.choices[0].message.tool_calls[0]  # type: ignore[index]
        args = json.loads(call.function.arguments)  # type: ignore[union-attr]
        with pytest.raises(ValueError):
            charge(args["card"], args["note"], tool_call_id=call.id)
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="gpt-4o", messages=messages)  # type: ignore[arg-type]


def test_control_everything_is_recorded_without_redaction(
    session: Callable[..., Session], server: MockLLMServer
) -> None:
    s = session()
    _run(server)
    recorded = s.recorded()
    assert recorded.missing([EMAIL, str(CARD), JWT, AWS_SECRET, PROMPT_MARKER, TOOL_MARKER]) == []


def test_capture_off_records_no_error_message(session: Callable[..., Session], server: MockLLMServer) -> None:
    s = session(capture_content=False)
    _run(server)
    recorded = s.recorded()
    assert recorded.leaks([EMAIL, str(CARD), PROMPT_MARKER, TOOL_MARKER, JWT, AWS_SECRET]) == []
    # the errors are still there, by type
    assert "ValueError" in recorded.files["traces.jsonl"]
    assert "BadRequestError" in recorded.files["traces.jsonl"]


def test_redaction_covers_errors_numbers_tokens_and_stop_sequences(
    session: Callable[..., Session], server: MockLLMServer
) -> None:
    s = session(redact=True)
    _run(server)
    recorded = s.recorded()
    assert recorded.leaks([EMAIL, str(CARD), JWT, AWS_SECRET]) == []
    assert recorded.missing(["[REDACTED:card]", "[REDACTED:jwt]", "[REDACTED:aws_secret]", "[REDACTED:email]"]) == []
    assert recorded.missing([PROMPT_MARKER, TOOL_MARKER]) == []  # what is not a secret stays

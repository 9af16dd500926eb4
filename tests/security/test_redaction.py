"""The redaction hook: built-in patterns (emails, API keys, bearer tokens, Luhn-valid card numbers) and a user
callable run before content is recorded, on every API, mode and tool span; a failing hook never leaks or breaks."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import openai
import pytest

import spanfold
from spanfold.content import redaction as redact
from spanfold.content import runtime
from spanfold.testing import MockLLMServer, Reply

from .conftest import OPENAI_KEY, Session, Texts, run_everything
from .provider_runs import PROVIDER_RUNS, run_provider

EMAIL = "alice.smith@example.com"
KEY = "sk-proj-PLANTEDkey0123456789abcdefgh"
CARD = "4111 1111 1111 1111"  # a Luhn-valid test number
NOT_A_CARD = "4111 1111 1111 1112"  # fails the Luhn check: an order number, kept
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PLANTED = Texts(
    system=f"Escalate to {EMAIL}.",
    prompt=f"Charge card {CARD} (order {NOT_A_CARD}) using key {KEY}",
    arguments=f"Paris <{EMAIL}>",
    result=f"sunny; token {GITHUB}",
    answer=f"Done, receipt sent to {EMAIL}, card {CARD}.",
)
SECRETS = [EMAIL, KEY, CARD, GITHUB, "PLANTEDkey", "alice.smith@"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"mail {EMAIL} now", "mail [REDACTED:email] now"),
        ("a.b+tag@sub.example.co.uk", "[REDACTED:email]"),
        (f"key={KEY}", "key=[REDACTED:api_key]"),
        ("sk-ant-api03-abcdefghijklmnop_QRST", "[REDACTED:api_key]"),
        ("AKIAIOSFODNN7EXAMPLE", "[REDACTED:api_key]"),
        (GITHUB, "[REDACTED:api_key]"),
        ("xoxb-1234567890-abcdefghij", "[REDACTED:api_key]"),
        ("Authorization: Bearer abcdef0123456789ABCDEF", "Authorization: [REDACTED:bearer]"),
        (f"card {CARD}.", "card [REDACTED:card]."),
        ("5555-5555-5555-4444", "[REDACTED:card]"),
        ("378282246310005", "[REDACTED:card]"),  # Amex, 15 digits
        (NOT_A_CARD, NOT_A_CARD),
        ("call 0123456789", "call 0123456789"),  # too short for a card
        ("t eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlLXZhbHVl x", "t [REDACTED:jwt] x"),
        ("k=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY;", "k=[REDACTED:aws_secret];"),
        ("sha1 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12", "sha1 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"),
        ("sk-short", "sk-short"),  # too short for a key
        ("the task-force met", "the task-force met"),
        ("", ""),
    ],
)
def test_builtin_patterns(text: str, expected: str) -> None:
    assert redact.builtin(text) == expected


def test_luhn() -> None:
    assert redact.luhn("4111111111111111")
    assert redact.luhn("79927398713")
    assert not redact.luhn("79927398710")


def test_secrets_recorded_without_redaction(session: Callable[..., Session], server: MockLLMServer) -> None:
    """The control: without redaction every planted secret is recorded (so the next test could fail)."""
    s = session()
    run_everything(server, PLANTED)
    assert s.recorded().missing(SECRETS) == []


def test_builtin_redaction_everywhere(session: Callable[..., Session], server: MockLLMServer) -> None:
    s = session(redact=True)
    run_everything(server, PLANTED)
    recorded = s.recorded()
    assert recorded.leaks(SECRETS) == []
    assert recorded.missing(["[REDACTED:email]", "[REDACTED:card]", "[REDACTED:api_key]", NOT_A_CARD]) == []
    assert spanfold.stats().get("faults", 0) == 0


@pytest.mark.parametrize("provider", PROVIDER_RUNS)
def test_every_provider_records_the_planted_content_without_redaction(
    session: Callable[..., Session], server: MockLLMServer, provider: str
) -> None:
    """The control, provider by provider: its run records every planted secret (so the next test could fail)."""
    s = session()
    run_provider(provider, server, PLANTED)
    assert s.recorded().missing(SECRETS) == []


@pytest.mark.parametrize("provider", PROVIDER_RUNS)
def test_builtin_redaction_in_every_provider(
    session: Callable[..., Session], server: MockLLMServer, provider: str
) -> None:
    """Every provider's system prompt, messages, tool arguments and results, answers (whole and streamed) and error
    messages go through the redaction: no planted secret in any span or file."""
    s = session(redact=True)
    run_provider(provider, server, PLANTED)
    recorded = s.recorded()
    assert recorded.leaks(SECRETS) == []
    assert recorded.missing(["[REDACTED:email]", "[REDACTED:card]", "[REDACTED:api_key]", NOT_A_CARD]) == []
    assert spanfold.stats().get("faults", 0) == 0


def test_environment_variable_turns_it_on(
    session: Callable[..., Session], server: MockLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPANFOLD_REDACT", "1")
    s = session()
    run_everything(server, PLANTED)
    assert s.recorded().leaks(SECRETS) == []


def test_a_user_hook_runs_after_the_builtin_patterns(session: Callable[..., Session], server: MockLLMServer) -> None:
    seen: list[str] = []

    def hook(text: str) -> str:
        seen.append(text)
        return text.replace("Paris", "[city]")

    s = session(redact=hook)
    run_everything(server, PLANTED)
    recorded = s.recorded()
    assert recorded.leaks([*SECRETS, "Paris"]) == []
    assert "[city]" in recorded.text
    assert not any(EMAIL in t for t in seen)  # the built-in patterns ran first


def test_a_hook_alone(session: Callable[..., Session], server: MockLLMServer) -> None:
    s = session(redact=redact.Redaction(hook=lambda t: t.replace("Paris", "[city]"), builtin=False))
    run_everything(server, PLANTED)
    recorded = s.recorded()
    assert recorded.leaks(["Paris"]) == []
    assert recorded.missing([EMAIL]) == []  # built-in patterns off


@pytest.mark.parametrize("bad", ["raises", "returns_none"])
def test_a_failing_hook_never_breaks_the_app_nor_leaks(
    session: Callable[..., Session], server: MockLLMServer, caplog: pytest.LogCaptureFixture, bad: str
) -> None:
    def hook(text: str) -> str:
        if bad == "raises":
            raise RuntimeError("the hook is broken")
        return None  # type: ignore[return-value]

    s = session(redact=hook)
    with caplog.at_level(logging.WARNING, logger="spanfold"):
        run_everything(server, PLANTED)  # every call returns (or raises) just as it would without spanfold
    recorded = s.recorded()
    assert recorded.leaks(SECRETS) == []
    assert redact.FAILED in recorded.text
    stats = spanfold.stats()
    assert stats["fault.redact.hook"] > 10
    assert [r for r in caplog.records if "redact.hook" in r.getMessage()].__len__() == 1


def test_history_converted_before_redaction_is_not_reused(
    session: Callable[..., Session], server: MockLLMServer
) -> None:
    """spanfold caches converted history messages by identity; turning redaction on forgets them."""
    client = openai.OpenAI(api_key=OPENAI_KEY, base_url=server.base_url, max_retries=0)
    history = [{"role": "user", "content": f"write to {EMAIL}"}]
    s = session()
    server.script(Reply.text("ok"))
    client.chat.completions.create(model="gpt-4o", messages=history)
    assert EMAIL in s.recorded().spans
    spanfold.shutdown()
    s.exporter.clear()
    s = session(redact=True)
    server.script(Reply.text("ok"))
    client.chat.completions.create(model="gpt-4o", messages=history)  # the very same message objects
    spans = s.recorded().spans  # (the files still hold the first, unredacted run)
    assert EMAIL not in spans
    assert "[REDACTED:email]" in spans


def test_off_after_shutdown(tmp_path: Path) -> None:
    spanfold.init(redact=True, output=str(tmp_path))
    assert runtime.active().redaction is not None
    spanfold.shutdown()
    assert runtime.active().redaction is None


def test_a_bad_option_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="redact: expected a bool, a callable or a Redaction"):
        redact.from_option(42)


def test_media_urls_are_redacted_in_every_provider(session: Callable[..., Session], server: MockLLMServer) -> None:
    """Image URLs are content: an Anthropic URL image block and an OpenAI image_url part carrying a secret are
    recorded redacted (the Anthropic one used to be a hand-built part that skipped redaction)."""
    import anthropic

    from .conftest import ANTHROPIC_KEY

    url = f"https://img.example/{EMAIL}/chart.png"
    s = session(redact=True)
    server.script(Reply.text("a chart"), Reply.text("a chart"))
    an = anthropic.Anthropic(api_key=ANTHROPIC_KEY, base_url=server.anthropic_base_url, max_retries=0)
    an.messages.create(
        model="claude-x",
        max_tokens=16,
        messages=[{"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": url}}]}],
    )
    oa = openai.OpenAI(api_key=OPENAI_KEY, base_url=server.base_url, max_retries=0)
    oa.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]
    )
    recorded = s.recorded()
    assert recorded.leaks([EMAIL]) == []
    assert recorded.text.count("https://img.example/[REDACTED:email]/chart.png") >= 2

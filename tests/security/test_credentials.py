"""No credential ever reaches a span or a file: API keys, the organisation header, custom auth headers and a
password in the base URL, across every API and mode, errors included."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spanfold.testing import MockLLMServer

from .conftest import (
    ANTHROPIC_KEY,
    BASIC_PASSWORD,
    CREDENTIALS,
    CUSTOM_TOKEN,
    OPENAI_KEY,
    ORG_ID,
    Session,
    Texts,
    run_everything,
)


def test_no_credential_in_any_span_or_file(session: Callable[..., Session], server: MockLLMServer) -> None:
    s = session()
    run_everything(
        server, Texts(), default_headers={"X-Custom-Auth": CUSTOM_TOKEN, "Proxy-Authorization": CUSTOM_TOKEN}
    )
    recorded = s.recorded()
    # The credentials were really sent (so the scan below could have found them) ...
    headers = [r.headers for r in server.requests]
    assert any(
        h.get("authorization") == f"Bearer {OPENAI_KEY}" and h.get("openai-organization") == ORG_ID for h in headers
    )
    assert any(
        ANTHROPIC_KEY in (h.get("x-api-key"), h.get("authorization", "").removeprefix("Bearer ")) for h in headers
    )
    assert all(h.get("x-custom-auth") == CUSTOM_TOKEN for h in headers)
    # ... and the runs were recorded in full, with their content: 5 agent runs, and the 2 failed un-parented calls
    # (the same prompt, so stitched as one conversation: a retry).
    assert len(recorded.files["traces.jsonl"].splitlines()) == 7  # five runs and two failed calls
    assert recorded.missing([Texts().prompt, Texts().answer, Texts().result]) == []
    assert recorded.leaks(CREDENTIALS) == []


def test_no_password_from_a_base_url_with_userinfo(session: Callable[..., Session], server: MockLLMServer) -> None:
    import openai

    s = session()
    url = server.base_url.replace("http://", f"http://agent:{BASIC_PASSWORD}@")
    client = openai.OpenAI(api_key=OPENAI_KEY, base_url=url, max_retries=0)
    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    recorded = s.recorded()
    assert "127.0.0.1" in recorded.spans  # server.address is recorded ...
    assert recorded.leaks(CREDENTIALS) == []  # ... without the userinfo


def test_no_credential_in_spans_of_failed_connections(session: Callable[..., Session]) -> None:
    """A call to a port nobody listens on: the connection error's span carries no key or header."""
    import openai
    import pytest

    s = session()
    client = openai.OpenAI(
        api_key=OPENAI_KEY,
        base_url="http://127.0.0.1:9/v1",
        max_retries=0,
        default_headers={"X-Custom-Auth": CUSTOM_TOKEN},
    )
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    recorded: Any = s.recorded()
    assert "APIConnectionError" in recorded.spans
    assert recorded.leaks(CREDENTIALS) == []


def test_a_key_echoed_in_a_provider_error_is_not_recorded(
    session: Callable[..., Session], server: MockLLMServer
) -> None:
    """Some servers (proxies, self-hosted gateways) echo the key they rejected: the error is recorded, not the key."""
    import anthropic
    import openai
    import pytest

    from spanfold.testing import Reply

    s = session()
    oa = openai.OpenAI(api_key=OPENAI_KEY, base_url=server.base_url, max_retries=0)
    an = anthropic.Anthropic(api_key=ANTHROPIC_KEY, base_url=server.anthropic_base_url, max_retries=0)
    server.script(Reply.error(401, f"Incorrect API key provided: {OPENAI_KEY}.", should_retry=False))
    with pytest.raises(openai.AuthenticationError) as raised:
        oa.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert OPENAI_KEY in str(raised.value)  # the user's exception is untouched
    server.script(Reply.error(401, f"invalid key {ANTHROPIC_KEY}", should_retry=False))
    with pytest.raises(anthropic.AuthenticationError):
        an.messages.create(model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "hello"}])
    recorded = s.recorded()
    assert "Incorrect API key provided" in recorded.text
    assert recorded.leaks(CREDENTIALS) == []

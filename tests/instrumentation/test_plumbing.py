"""What every provider shares, owned once by the toolkit: where a call goes (``server.*``), and post-import hooks
that a later ``uninstrument()`` withdraws."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from spanfold.instrumentation.toolkit.calls import server_of
from spanfold.instrumentation.toolkit.hooks import ImportHooks


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (httpx.URL("https://api.openai.com/v1"), ("api.openai.com", 443)),
        (httpx.URL("http://127.0.0.1:8080/v1"), ("127.0.0.1", 8080)),
        ("https://bedrock-runtime.us-east-1.amazonaws.com", ("bedrock-runtime.us-east-1.amazonaws.com", 443)),
        ("http://localhost:11434", ("localhost", 11434)),
        ("http://ollama.internal/", ("ollama.internal", 80)),
    ],
)
def test_the_server_is_the_urls_host_and_port_else_its_schemes_default(url: Any, expected: tuple[str, int]) -> None:
    endpoint = server_of(url)
    assert endpoint is not None
    assert (endpoint.address, endpoint.port) == expected


@pytest.mark.parametrize("url", [None, "", "not a url", 42])
def test_no_url_gives_no_server(url: Any) -> None:
    assert server_of(url) is None


def test_an_sdk_call_to_a_default_port_says_the_port(replay_client: Any, spans: Any) -> None:
    client, _ = replay_client("test_chat_tools.json")  # base URL http://recorded.test/v1: no port written
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Weather in Paris?"}])
    attrs = spans.attrs()
    assert (attrs["server.address"], attrs["server.port"]) == ("recorded.test", 80)


def _module(tmp_path: Path, name: str) -> None:
    (tmp_path / f"{name}.py").write_text("VALUE = 1\n")


def test_a_withdrawn_hook_does_not_fire_and_a_new_one_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    _module(tmp_path, "spanfold_hooks_probe")
    hooks, fired = ImportHooks(), []
    stale = hooks.renew()
    hooks.register("spanfold_hooks_probe", stale, lambda module: fired.append(("stale", module.VALUE)))
    hooks.withdraw()
    current = hooks.renew()
    hooks.register("spanfold_hooks_probe", current, lambda module: fired.append(("current", module.VALUE)))
    try:
        import spanfold_hooks_probe  # noqa: F401

        assert fired == [("current", 1)]
        assert not hooks.valid(stale) and hooks.valid(current)
        hooks.register("spanfold_hooks_probe", current, lambda module: fired.append(("at once", module.VALUE)))
        assert fired[-1] == ("at once", 1)  # already imported: the hook fires at once
    finally:
        sys.modules.pop("spanfold_hooks_probe", None)

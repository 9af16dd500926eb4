"""A call is priced as the provider it went to (issue 46, item 7): the openai SDK reaches Groq, DeepSeek, Azure OpenAI
and others through ``base_url``, and its spans name the provider ``openai``; the table's provider is the one whose
API URL the call's host is (genai-prices matches them), a public host the table does not know is priced by nobody
(never as OpenAI), and a local one (a proxy, a test double) by the span's provider as before.

The real openai SDK, its client pointed at the provider's URL, its requests carried over real HTTP to the mock server
by an httpx transport that only changes where the connection goes (the SDK, and spanfold, see the provider's host).
Every expected amount is genai-prices' own ``calc_price`` for that URL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

import spanfold
from spanfold import counters
from spanfold.testing import MockLLMServer, Reply, Usage

genai_prices = pytest.importorskip("genai_prices")

TOKENS = (1000, 200)


class ToMock(httpx.HTTPTransport):
    """Sends every request to the mock server, the request otherwise as the SDK made it."""

    def __init__(self, server: MockLLMServer) -> None:
        super().__init__()
        self.target = httpx.URL(server.base_url)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path.endswith("/chat/completions"), request.url
        request.url = request.url.copy_with(
            scheme=self.target.scheme, host=self.target.host, port=self.target.port, path="/v1/chat/completions"
        )
        return super().handle_request(request)


@contextmanager
def called(tmp_path: Path, base_url: str, model: str, **options: Any) -> Iterator[dict[str, Any]]:
    """One chat call of ``model`` through the openai SDK at ``base_url``; yields the run's metadata."""
    spanfold.init(output=str(tmp_path), **options)
    try:
        with MockLLMServer() as server:
            server.script(Reply.text("Hello.", usage=Usage(*TOKENS)))
            client = openai.OpenAI(
                api_key="sk-test", base_url=base_url, max_retries=0, http_client=httpx.Client(transport=ToMock(server))
            )
            with spanfold.agent("priced"):
                client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
            assert spanfold.flush(timeout=30)
        (line,) = (tmp_path / "traces.meta.jsonl").read_text().splitlines()
        yield json.loads(line)["metadata"]
    finally:
        spanfold.shutdown()


def expected(step: dict[str, Any], url: str) -> float:
    when = datetime.fromisoformat(step["start"].replace("Z", "+00:00"))
    usage = genai_prices.Usage(input_tokens=TOKENS[0], output_tokens=TOKENS[1])
    price = genai_prices.calc_price(usage, step["model"], provider_api_url=url, genai_request_timestamp=when)
    return float(price.total_price)


@pytest.mark.parametrize(
    ("base_url", "model"),
    [
        ("https://api.groq.com/openai/v1", "llama-3.1-8b-instant"),
        ("https://api.deepseek.com/v1", "deepseek-chat"),
        ("https://my-resource.openai.azure.com/openai/v1", "gpt-4o-mini"),
        ("https://api.openai.com/v1", "gpt-4o-mini"),
    ],
    ids=["groq", "deepseek", "azure", "openai"],
)
def test_priced_as_the_provider_the_call_went_to(tmp_path: Path, base_url: str, model: str) -> None:
    with called(tmp_path, base_url, model) as meta:
        (step,) = [s for s in meta["steps"] if s["kind"] == "model"]
    url = "https://" + httpx.URL(base_url).host
    assert step["cost"]["priced_by"] == "genai-prices"
    assert step["cost"]["amount"] == pytest.approx(expected(step, url), rel=1e-12)


def test_deepseek_through_the_openai_sdk_is_not_left_unpriced(tmp_path: Path) -> None:
    """Before: priced at "openai", which has no deepseek-chat: no cost at all."""
    with called(tmp_path, "https://api.deepseek.com/v1", "deepseek-chat") as meta:
        assert meta["cost"]["total"] > 0 and "unpriced_steps" not in meta["cost"]


def test_a_host_the_table_does_not_know_is_priced_by_nobody(tmp_path: Path) -> None:
    """A gateway (or a provider the table lacks) serving "gpt-4o-mini": not OpenAI's price (it was), counted."""
    with called(tmp_path, "https://llm.gateway.example.com/v1", "gpt-4o-mini") as meta:
        (step,) = [s for s in meta["steps"] if s["kind"] == "model"]
        assert "cost" not in step and "cost" not in meta  # no total made of nothing
        assert counters.snapshot()["cost.unknown_endpoint"] == 1


def test_the_users_prices_still_apply_at_such_a_host(tmp_path: Path) -> None:
    prices = [{"model": "gpt-4o-mini", "provider": "openai", "input_mtok": 1, "output_mtok": 2}]
    with called(tmp_path, "https://llm.gateway.example.com/v1", "gpt-4o-mini", prices=prices) as meta:
        (step,) = [s for s in meta["steps"] if s["kind"] == "model"]
    assert step["cost"]["priced_by"] == "override"
    assert step["cost"]["amount"] == pytest.approx((TOKENS[0] * 1 + TOKENS[1] * 2) / 1e6)


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "10.1.2.3", "vllm", "gpu-box.local", "[::1]"])
def test_a_local_host_is_priced_by_the_spans_provider(host: str) -> None:
    from spanfold.pricing.endpoints import api_url

    assert api_url(host.strip("[]"), 8000) is None
    assert api_url("api.groq.com", 443) == "https://api.groq.com"
    assert api_url("example.com", 8443) == "https://example.com:8443"

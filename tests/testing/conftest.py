"""A fresh mock server per test, and real SDK clients pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anthropic
import openai
import pytest

from spanfold.testing import MockLLMServer

RECORDINGS = Path(__file__).resolve().parents[1] / "recordings"  # real provider responses (tests/recordings)


@pytest.fixture
def recordings() -> Path:
    """The directory of real recorded provider responses."""
    return RECORDINGS


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer() as mock:
        yield mock


@pytest.fixture
def oai(server: MockLLMServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(api_key="test-key", base_url=server.base_url, max_retries=0) as client:
        yield client


@pytest.fixture
async def aoai(server: MockLLMServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(api_key="test-key", base_url=server.base_url, max_retries=0) as client:
        yield client


@pytest.fixture
def ant(server: MockLLMServer) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(api_key="test-key", base_url=server.anthropic_base_url, max_retries=0) as client:
        yield client


@pytest.fixture
async def aant(server: MockLLMServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(
        api_key="test-key", base_url=server.anthropic_base_url, max_retries=0
    ) as client:
        yield client

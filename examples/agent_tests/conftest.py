"""Fixtures: the embedded mock LLM server playing a weather agent, and an OpenAI client pointed at it.

``spanfold_traces`` comes from spanfold's pytest plugin (installed with spanfold): nothing to import.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from spanfold.testing import MockLLMServer, scenarios


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer(scenarios.weather_agent) as srv:
        yield srv


@pytest.fixture
def client(server: MockLLMServer) -> Any:
    return openai.OpenAI(api_key="test-key", base_url=server.base_url, max_retries=0)

"""Real traces for the CLI tests: the real openai SDK over real HTTP to the embedded mock server, traced by
``spanfold.init()``, written by the exporter's own writers (Invariant + metadata sibling, and AgentV)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest
from click.testing import CliRunner, Result

import spanfold
from spanfold.cli import main
from spanfold.testing import MockLLMServer, Reply, ToolCallSpec, run_agent, scenarios
from spanfold.testing.agents import PROVIDERS


@spanfold.tool
def lookup_city(city: str) -> str:
    """A tool that fails for a city it does not know."""
    raise LookupError(f"unknown city {city}")


def failing_run(client: openai.OpenAI, server: MockLLMServer) -> None:
    """One run whose tool raises and whose second model call is refused: a tool error and a model error."""
    server.script(
        Reply.tools([ToolCallSpec("lookup_city", {"city": "Atlantis"})]),
        Reply.error(429, "Rate limit reached", should_retry=False),
    )
    messages: list[Any] = [{"role": "user", "content": "Where is Atlantis?"}]
    with spanfold.agent("lookup-bot"):
        message = client.chat.completions.create(model=PROVIDERS["openai"].model, messages=messages).choices[0].message
        messages.append(message)
        for call in message.tool_calls or []:
            try:
                result = lookup_city(**json.loads(call.function.arguments), tool_call_id=call.id)
            except LookupError as exc:
                result = f"error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model=PROVIDERS["openai"].model, messages=messages)


def record(directory: Path, fmt: str) -> None:
    """Two runs (the weather agent, then the failing one) traced into ``directory`` in format ``fmt``."""
    spanfold.init(output=str(directory), format=fmt, capture_content=True)
    try:
        with MockLLMServer(scenarios.weather_agent) as server:
            client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
            with spanfold.agent("weather-bot"):
                run_agent("openai", client)
            failing_run(client, server)
        assert spanfold.flush(timeout=30)
    finally:
        spanfold.shutdown()


@dataclass(frozen=True)
class Recorded:
    invariant: Path  # traces.jsonl (+ traces.meta.jsonl beside it)
    agentv: Path  # traces.agentv.jsonl

    @property
    def meta(self) -> Path:
        return self.invariant.with_name("traces.meta.jsonl")


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory, _global_provider: Any) -> Recorded:
    base = tmp_path_factory.mktemp("recorded")
    record(base / "invariant", "invariant")
    record(base / "agentv", "agentv")
    out = Recorded(base / "invariant" / "traces.jsonl", base / "agentv" / "traces.agentv.jsonl")
    assert len(out.invariant.read_text().splitlines()) == 2 and len(out.agentv.read_text().splitlines()) == 2
    return out


@pytest.fixture
def traces(recorded: Recorded, tmp_path: Path) -> Recorded:
    """A private copy of the recorded files (tests may write beside them)."""
    (tmp_path / "inv").mkdir()
    (tmp_path / "av").mkdir()
    for src, dst in [
        (recorded.invariant, tmp_path / "inv" / "traces.jsonl"),
        (recorded.meta, tmp_path / "inv" / "traces.meta.jsonl"),
        (recorded.agentv, tmp_path / "av" / "traces.agentv.jsonl"),
    ]:
        dst.write_bytes(src.read_bytes())
    return Recorded(tmp_path / "inv" / "traces.jsonl", tmp_path / "av" / "traces.agentv.jsonl")


@pytest.fixture
def cli() -> Iterator[Callable[..., Result]]:
    runner = CliRunner()

    def run(*args: Any, input: str | None = None) -> Result:
        return runner.invoke(main, [str(a) for a in args], input=input, catch_exceptions=False)

    yield run

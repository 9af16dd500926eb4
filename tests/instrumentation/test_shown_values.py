"""What a backend shows first (Arize Phoenix's trace list and Input / Output columns, Langfuse): ``input.value`` /
``output.value`` with their MIME types on the run's root (the question, the final answer), on each model call (its
request's and reply's messages) and on each tool run (arguments, result), made from what content capture and
redaction already decided. The weather agent over real HTTP to the mock server, the spans as exported."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

import spanfold
from spanfold.testing import WEATHER, MockLLMServer, Reply, scenarios
from spanfold.testing.agents import PROVIDERS

SHOWN = ("input.value", "input.mime_type", "output.value", "output.mime_type")
PARIS, TOKYO = scenarios.get_weather("Paris"), scenarios.get_weather("Tokyo")
ANSWER = f"Here is the weather: {PARIS}; {TOKYO}. In Fahrenheit: 18°C is 64.4°F."


def attrs(span: Any) -> dict[str, Any]:
    return dict(span.attributes or {})


def shown(span: Any) -> dict[str, Any]:
    return {k: v for k, v in attrs(span).items() if k in SHOWN}


def weather_run(provider: str = "openai") -> None:
    api = PROVIDERS[provider]
    with MockLLMServer(WEATHER.replies) as server, spanfold.agent("weather"):
        assert api.run(api.client(server)) == ANSWER


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_root_model_and_tool_spans(traced: Any, global_spans: Any, provider: str) -> None:
    weather_run(provider)
    traced.one()
    spans = global_spans.get_finished_spans()
    (root,) = [s for s in spans if s.name == "invoke_agent weather"]
    assert shown(root) == {
        "input.value": WEATHER.question,
        "input.mime_type": "text/plain",
        "output.value": ANSWER,
        "output.mime_type": "text/plain",
    }
    calls = [s for s in spans if s.name.startswith("chat ")]
    assert len(calls) == 3
    for call in calls:
        a = attrs(call)
        assert shown(call) == {
            "input.value": a["gen_ai.input.messages"],
            "input.mime_type": "application/json",
            "output.value": a["gen_ai.output.messages"],
            "output.mime_type": "application/json",
        }
    tools = [s for s in spans if s.name.startswith("execute_tool ")]
    assert len(tools) == 3
    for tool in tools:
        a = attrs(tool)
        assert shown(tool) == {
            "input.value": a["gen_ai.tool.call.arguments"],
            "input.mime_type": "application/json",
            "output.value": a["gen_ai.tool.call.result"],
            "output.mime_type": "text/plain",
        }


def test_capture_off_shows_nothing(traced_off: Any, global_spans: Any) -> None:
    weather_run()
    traced_off.one()
    spans = global_spans.get_finished_spans()
    assert len(spans) == 7
    assert all(shown(s) == {} for s in spans)


@pytest.fixture
def traced_redacted(tmp_path: Path, _global_provider: Any) -> Iterator[Any]:
    from ..conftest import Traced

    handle = spanfold.init(output=str(tmp_path / "traces"), redact=True)
    try:
        yield Traced(handle, tmp_path / "traces")
    finally:
        spanfold.shutdown()


def test_redaction_applies_alike(traced_redacted: Any, global_spans: Any) -> None:
    """A secret in the question is redacted wherever it is shown: the root's question, the call's request."""
    secret = "alice@example.com"
    with MockLLMServer() as server, spanfold.agent("mail"):
        server.script(Reply.text("Noted."))
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"Write to {secret} please"}]
        )
    traced_redacted.one()
    spans = global_spans.get_finished_spans()
    (root,) = [s for s in spans if s.name == "invoke_agent mail"]
    (call,) = [s for s in spans if s.name.startswith("chat ")]
    for value in (shown(root)["input.value"], shown(call)["input.value"]):
        assert secret not in value and "Write to" in value
    assert shown(root)["output.value"] == "Noted."


def test_a_zero_code_run_s_first_call_shows_the_question(traced: Any, global_spans: Any) -> None:
    """No agent span: a stitched run's root is its first model call, which shows the question it was asked; the
    calls after it (in its trace) show their messages."""
    api = PROVIDERS["openai"]
    with MockLLMServer(WEATHER.replies) as server:
        api.run(api.client(server))
    traced.one()
    spans = [s for s in global_spans.get_finished_spans() if s.name.startswith("chat ")]
    first, *later = sorted(spans, key=lambda s: s.start_time or 0)
    assert first.parent is None
    assert shown(first)["input.value"] == WEATHER.question
    assert shown(first)["input.mime_type"] == "text/plain"
    assert json.loads(shown(first)["output.value"])[0]["parts"][0]["type"] == "tool_call"
    assert len(later) == 2
    for call in later:
        assert call.parent is not None and call.context.trace_id == first.context.trace_id
        assert shown(call)["input.value"] == attrs(call)["gen_ai.input.messages"]


def test_a_failed_run_shows_its_question(traced: Any, global_spans: Any) -> None:
    with MockLLMServer() as server:
        server.script(Reply.error(500, "down", should_retry=False))
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
        with pytest.raises(openai.InternalServerError), spanfold.agent("broken"):
            client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    traced.one()
    (root,) = [s for s in global_spans.get_finished_spans() if s.name == "invoke_agent broken"]
    assert shown(root) == {"input.value": "hi", "input.mime_type": "text/plain"}


def test_first_calls_with_a_shared_opening_show_their_own_questions(traced: Any, global_spans: Any) -> None:
    """Un-stitched first calls whose histories begin alike (a server's users; a history that extends another's text
    but not its run) each show their own last user message, however the requests' texts are parsed."""
    opening = {"role": "user", "content": "Hello, I would like some help planning a trip to Lisbon next spring."}
    requests = [
        [opening],
        [opening, {"role": "assistant", "content": "Something else entirely."}, {"role": "user", "content": "Budget?"}],
        [opening],
        [opening, {"role": "assistant", "content": "Another reply."}, {"role": "user", "content": "And hotels?"}],
    ]
    with MockLLMServer() as server:
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
        for messages in requests:
            server.script(Reply.text("Sure."))
            client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    spanfold.flush()
    calls = sorted(
        (s for s in global_spans.get_finished_spans() if s.name.startswith("chat ")), key=lambda s: s.start_time or 0
    )
    assert [c.parent for c in calls] == [None] * 4
    assert [shown(c)["input.value"] for c in calls] == [
        opening["content"],
        "Budget?",
        opening["content"],
        "And hotels?",
    ]

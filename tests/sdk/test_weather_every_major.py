"""Through ``spanfold.init()``: the weather agent folds to the same trace on every installed SDK major (CI runs this
directory against the oldest and newest supported release of each major: ``.ci/sdk-matrix``)."""

from __future__ import annotations

from typing import Any

import pytest

import spanfold

from . import agents


@pytest.mark.parametrize("scenario", list(agents.SCENARIOS))
def test_the_weather_agent_folds_to_the_same_trace(traced: Any, scenario: str) -> None:
    if scenario not in agents.available():
        pytest.skip("this openai has no Responses API (it came in 1.66)")
    with spanfold.agent("weather-bot"):
        answer = agents.run(scenario)
    assert answer.startswith("Here is the weather: Paris: 18°C, sunny; Tokyo: 24°C, cloudy.")
    assert traced.one() == agents.expected(scenario)
    (record,) = traced.metas()
    meta = record["metadata"]
    assert meta["status"] == "complete"
    assert len(meta["models"]) == 1


def test_structured_parse_is_one_model_step(traced: Any, server: Any) -> None:
    """``parse()`` (``client.beta.chat.completions`` before openai 1.92, which in 1.40 calls ``create`` itself) is one
    model call: one span, not two."""
    import openai

    client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    chat = client.chat.completions
    parse = chat.parse if hasattr(chat, "parse") else client.beta.chat.completions.parse
    with spanfold.agent("parser"):
        parse(model="gpt-4o-mini", messages=[{"role": "user", "content": "What's the weather in Paris?"}])
    events = traced.one()
    assert [e["role"] for e in events] == ["user", "assistant"]
    assert [c["function"]["name"] for c in events[1]["tool_calls"]] == ["get_weather", "get_weather"]


def test_anthropic_streams_and_raw_responses_keep_their_types(traced: Any, server: Any) -> None:
    """anthropic 0.x: ``isinstance(stream, anthropic.Stream)`` is answered by the SDK's metaclass (it must stay True
    for our proxy), and ``with_raw_response`` returns a ``LegacyAPIResponse`` (its output must reach the span)."""
    import anthropic

    from spanfold.testing import Reply

    server.script(Reply.text("Streamed."), Reply.text("Raw."))
    client = anthropic.Anthropic(api_key="sk-test", base_url=server.anthropic_base_url, max_retries=0)
    user = [{"role": "user", "content": "Hi"}]
    with spanfold.agent("types"):
        stream = client.messages.create(model="claude-sonnet-5", max_tokens=64, messages=user, stream=True)
        assert isinstance(stream, anthropic.Stream)
        list(stream)
        raw = client.messages.with_raw_response.create(model="claude-sonnet-5", max_tokens=64, messages=user)
        assert raw.parse().content[0].text == "Raw."
    assert [(e["role"], e["content"]) for e in traced.one() if e["role"] == "assistant"] == [
        ("assistant", "Streamed."),
        ("assistant", "Raw."),
    ]

"""The metadata says which conversation a run belongs to and whom it served, as the application named them (the ui
groups runs into sessions and filters by user from it); nothing is made up when nothing names them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
from opentelemetry import trace as otel_trace

import spanfold
from spanfold.testing import MockLLMServer, run_agent, weather_agent


def _metas(directory: Path) -> list[dict[str, Any]]:
    assert spanfold.flush(timeout=30)
    lines = (directory / "traces.meta.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["metadata"] for line in lines]


def _client(server: MockLLMServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)


def test_a_run_names_its_conversation_and_user(traced: Any) -> None:
    with MockLLMServer(weather_agent) as server, spanfold.agent("weather-bot", conversation_id="chat-42"):
        otel_trace.get_current_span().set_attribute("user.id", "user-7")
        run_agent("openai", _client(server))
    (meta,) = _metas(traced.directory)
    assert (meta["conversation_id"], meta["user_id"]) == ("chat-42", "user-7")
    root = next(s for s in meta["steps"] if s["kind"] == "model")["span_id"]  # a step, not the root
    assert len(meta["root_span_id"]) == 16 and meta["root_span_id"] != root


def test_the_older_end_user_name_is_read_too(traced: Any) -> None:
    with MockLLMServer(weather_agent) as server, spanfold.agent("weather-bot"):
        otel_trace.get_current_span().set_attribute("enduser.id", "user-8")
        run_agent("openai", _client(server))
    (meta,) = _metas(traced.directory)
    assert meta["user_id"] == "user-8" and "conversation_id" not in meta


def test_a_run_nobody_named_has_neither(traced: Any) -> None:
    with MockLLMServer(weather_agent) as server:
        run_agent("openai", _client(server))
    (meta,) = _metas(traced.directory)
    assert "conversation_id" not in meta and "user_id" not in meta and "root_span_id" not in meta

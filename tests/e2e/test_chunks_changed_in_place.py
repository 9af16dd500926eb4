"""A streamed chunk changed by the application after it got it does not change the trace.

LlamaIndex's OpenAI LLM (``llama_index.llms.openai.utils.update_tool_calls``, what ``FunctionAgent`` streams through)
keeps the first tool-call delta of each call and appends every later delta's fragments to it *in place*. Its pins
(``openai<3``) do not install beside the test environment, so the test runs that exact accumulation over the real
``openai`` SDK's stream from the mock server: the span must record the arguments the model sent, once.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from spanfold.testing import MockLLMServer, Reply, ToolCallSpec

from ..conftest import Traced

CALLS = [ToolCallSpec("get_weather", {"city": "Paris"}), ToolCallSpec("get_weather", {"city": "Tokyo"})]


def update_tool_calls(tool_calls: list[Any], deltas: list[Any] | None) -> list[Any]:
    """LlamaIndex's accumulation: the first delta of a call is kept, later fragments appended to it in place."""
    if not deltas:
        return tool_calls
    delta = deltas[0]
    if not tool_calls or tool_calls[-1].index != delta.index:
        tool_calls.append(delta)
        return tool_calls
    kept = tool_calls[-1]
    kept.function.arguments = (kept.function.arguments or "") + (delta.function.arguments or "")
    kept.function.name = (kept.function.name or "") + (delta.function.name or "")
    kept.id = (kept.id or "") + (delta.id or "")
    return tool_calls


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_tool_call_deltas_changed_in_place_keep_their_arguments(traced: Traced, mode: str) -> None:
    with MockLLMServer() as server:
        server.script(Reply.tools(CALLS), Reply.tools(CALLS))
        request: dict[str, Any] = {
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": "Weather in Paris and Tokyo?"}],
            "stream": True,
        }
        kept: list[Any] = []
        if mode == "sync":
            client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
            for chunk in client.chat.completions.create(**request):
                if chunk.choices:
                    kept = update_tool_calls(kept, chunk.choices[0].delta.tool_calls)
        else:
            aclient = openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
            async for chunk in await aclient.chat.completions.create(**request):
                if chunk.choices:
                    kept = update_tool_calls(kept, chunk.choices[0].delta.tool_calls)
    assert [json.loads(c.function.arguments) for c in kept] == [{"city": "Paris"}, {"city": "Tokyo"}]
    (events,) = traced.traces()
    calls = events[-1]["tool_calls"]
    assert [c["function"]["arguments"] for c in calls] == [{"city": "Paris"}, {"city": "Tokyo"}]
    assert [c["id"] for c in calls] == [c.id for c in kept]

"""The weather agent in every way the SDKs let an agent call a model, for each installed major of openai and anthropic.

Each scenario runs ``spanfold.testing``'s loops (or their async twins below) against a fresh ``MockLLMServer`` over real
HTTP, so the tool-call ids and the answer are the same on every SDK version. The folded trace of each must equal
``weather.json`` (the same file for every major: what the fold makes does not depend on the SDK version). This module
is shared by the ``init()`` tests and by the zero-code app (run as a script, it runs the scenarios named on its
command line).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai

from spanfold.testing import WEATHER, MockLLMServer, run_agent, scenarios
from spanfold.testing.agents import PROVIDERS

GOLDEN = Path(__file__).resolve().parent / "weather.json"


def has_responses() -> bool:
    """The Responses API exists from openai 1.66 on."""
    return hasattr(openai.OpenAI(api_key="sk-test"), "responses")


def _openai(server: MockLLMServer) -> Any:
    return openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)


def _anthropic(server: MockLLMServer) -> Any:
    return anthropic.Anthropic(api_key="sk-test", base_url=server.anthropic_base_url, max_retries=0)


async def _chat_async(server: MockLLMServer, question: str, stream: bool) -> str:
    async with openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0) as client:
        return await _chat_async_loop(client, question, stream)


async def _chat_async_loop(client: Any, question: str, stream: bool) -> str:
    messages: list[Any] = [{"role": "system", "content": WEATHER.system}, {"role": "user", "content": question}]
    request = {"model": PROVIDERS["openai"].model, "messages": messages, "tools": scenarios.WEATHER_TOOLS_OPENAI}
    for _ in range(8):
        if stream:  # raw stream=True, read chunk by chunk (no helper)
            chunks = [c async for c in await client.chat.completions.create(**request, stream=True)]
            calls: dict[int, dict[str, Any]] = {}
            text = ""
            for chunk in chunks:
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                text += delta.content or ""
                for tc in delta.tool_calls or []:
                    call = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                    call["id"] = tc.id or call["id"]
                    call["name"] += (tc.function and tc.function.name) or ""
                    call["arguments"] += (tc.function and tc.function.arguments) or ""
            tool_calls = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in calls.values()
            ]
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if tool_calls:
                message["tool_calls"] = tool_calls
            messages.append(message)
        else:
            completion = await client.chat.completions.create(**request)
            reply = completion.choices[0].message
            messages.append(reply)
            text = reply.content or ""
            tool_calls = [
                {"id": c.id, "function": {"name": c.function.name, "arguments": c.function.arguments}}
                for c in reply.tool_calls or []
            ]
        if not tool_calls:
            return text
        for call in tool_calls:
            fn = call["function"]
            result = WEATHER.run_tool(fn["name"], fn["arguments"], call["id"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return ""


async def _anthropic_async(server: MockLLMServer, question: str, stream: bool) -> str:
    async with anthropic.AsyncAnthropic(api_key="sk-test", base_url=server.anthropic_base_url, max_retries=0) as client:
        return await _anthropic_async_loop(client, question, stream)


async def _anthropic_async_loop(client: Any, question: str, stream: bool) -> str:
    history: list[Any] = [{"role": "user", "content": question}]
    request = {
        "model": PROVIDERS["anthropic"].model,
        "max_tokens": 1024,
        "system": WEATHER.system,
        "messages": history,
        "tools": scenarios.WEATHER_TOOLS_ANTHROPIC,
    }
    for _ in range(8):
        if stream:  # the async streaming helper
            async with client.messages.stream(**request) as s:
                message = await s.get_final_message()
        else:
            message = await client.messages.create(**request)
        history.append({"role": "assistant", "content": message.content})
        uses = [block for block in message.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in message.content if block.type == "text")
        history.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": u.id,
                        "content": WEATHER.run_tool(u.name, json.dumps(u.input), u.id),
                    }
                    for u in uses
                ],
            }
        )
    return ""


#: scenario -> (the golden trace it must fold to, the run). Each run makes its own server.
SCENARIOS: dict[str, tuple[str, Callable[[MockLLMServer, str], str]]] = {
    "chat": ("openai", lambda s, q: run_agent("openai", _openai(s), q)),
    "chat-stream-helper": ("openai", lambda s, q: run_agent("openai", _openai(s), q, stream=True)),
    "chat-async": ("openai", lambda s, q: asyncio.run(_chat_async(s, q, stream=False))),
    "chat-async-raw-stream": ("openai", lambda s, q: asyncio.run(_chat_async(s, q, stream=True))),
    "responses": ("openai-responses", lambda s, q: run_agent("openai-responses", _openai(s), q)),
    "responses-stream-helper": (
        "openai-responses",
        lambda s, q: run_agent("openai-responses", _openai(s), q, stream=True),
    ),
    "anthropic": ("anthropic", lambda s, q: run_agent("anthropic", _anthropic(s), q)),
    "anthropic-stream-helper": ("anthropic", lambda s, q: run_agent("anthropic", _anthropic(s), q, stream=True)),
    "anthropic-async": ("anthropic", lambda s, q: asyncio.run(_anthropic_async(s, q, stream=False))),
    "anthropic-async-stream-helper": ("anthropic", lambda s, q: asyncio.run(_anthropic_async(s, q, stream=True))),
}


def available() -> list[str]:
    """The scenarios this SDK version has (the Responses API only from openai 1.66)."""
    return [name for name in SCENARIOS if has_responses() or not name.startswith("responses")]


def question(name: str) -> str:
    """Each scenario asks its own question: zero-code stitches one process's un-parented calls by their history, so
    runs in one process must not share one."""
    return f"{WEATHER.question} ({name})"


def run(name: str) -> str:
    with MockLLMServer(scenarios.weather_agent) as server:
        return SCENARIOS[name][1](server, question(name))


def expected(name: str) -> list[dict[str, Any]]:
    """The folded weather trace ``name`` must give (Invariant events): its API's, with its question."""
    events: list[dict[str, Any]] = json.loads(GOLDEN.read_text(encoding="utf-8"))[SCENARIOS[name][0]]
    return [{**e, "content": question(name)} if e["role"] == "user" else e for e in events]


if __name__ == "__main__":  # the zero-code app: python agents.py SCENARIO...
    for scenario in sys.argv[1:]:
        run(scenario)
    print("done")

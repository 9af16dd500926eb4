"""One description per added provider (groq, mistral, ollama, cohere): how the scenario matrix drives its real SDK.

The sync agent loop is the demo's (``spanfold.testing.agents.PROVIDERS``); a spec adds what the demo does not have:
the async client and loop, a one-message call (streamed or not), the SDK's exception for a 500, and the tool-call id
prefix the mock server gives that API.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from spanfold.testing import WEATHER, MockLLMServer, scenarios, shapes, streams
from spanfold.testing.agents import PROVIDERS


@dataclass(frozen=True)
class Spec:
    name: str
    aclient: Callable[[MockLLMServer], Any]
    #: (async client, question, stream) -> the final answer
    async_agent: Callable[[Any, str, bool], Awaitable[str]]
    #: (client, user text, stream) -> the reply text (a stream is read to its end)
    say: Callable[[Any, str, bool], str]
    #: the fully qualified name of the SDK's exception for an HTTP 500
    server_error: str
    #: None: the API's tool calls have no ids (ollama): the fold makes them (:data:`MADE_ID`)
    call_prefix: str | None
    model: str
    #: a stream reports usage without ``stream_options`` (not OpenAI's Chat Completions, so not through litellm)
    stream_usage: bool = True


#: The id the fold gives a tool call its API gave none: the model step's span id and the call's place in it.
MADE_ID = re.compile(r"call_[0-9a-f]{16}_[0-9]+")


def made_ids(events: list[dict[str, Any]], prefix: str = "made-") -> list[dict[str, Any]]:
    """A trace of an API without tool-call ids, with the ids the fold made renumbered ``{prefix}1``, ``{prefix}2``
    ... in order of first use, after checking that every call has one, each its own, and every output names one."""
    ids: dict[str, str] = {}
    calls = [c for event in events for c in event.get("tool_calls") or ()]
    outputs = [event for event in events if event["role"] == "tool"]
    assert all(MADE_ID.fullmatch(str(c.get("id"))) for c in calls), calls
    assert len({c["id"] for c in calls}) == len(calls), calls
    assert all(event.get("tool_call_id") in {c["id"] for c in calls} for event in outputs), outputs
    out = json.loads(json.dumps(events))
    for event in out:
        for call in event.get("tool_calls") or ():
            call["id"] = ids.setdefault(call["id"], f"{prefix}{len(ids) + 1}")
        if "tool_call_id" in event:
            event["tool_call_id"] = ids.setdefault(event["tool_call_id"], f"{prefix}{len(ids) + 1}")
    return out


# --- groq -----------------------------------------------------------------------------------------------


def _groq_aclient(server: MockLLMServer) -> Any:
    import groq

    return groq.AsyncGroq(api_key="gsk-test-secret", base_url=server.groq_base_url, max_retries=0)


async def _groq_agent(client: Any, question: str, stream: bool) -> str:
    messages: list[Any] = [{"role": "system", "content": WEATHER.system}, {"role": "user", "content": question}]
    for _ in range(6):
        request = {"model": PROVIDERS["groq"].model, "messages": messages, "tools": scenarios.WEATHER_TOOLS_OPENAI}
        if stream:
            chunks = [chunk async for chunk in await client.chat.completions.create(**request, stream=True)]
            message: dict[str, Any] = streams.chat_message(chunks)
        else:
            completion = await client.chat.completions.create(**request)
            message = completion.choices[0].message.model_dump(exclude_none=True)
        messages.append(message)
        if not message.get("tool_calls"):
            return str(message.get("content") or "")
        for call in message["tool_calls"]:
            args = json.loads(call["function"]["arguments"])
            result = scenarios.run_weather_tool(call["function"]["name"], args)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    raise AssertionError("agent did not finish")


def _groq_say(client: Any, text: str, stream: bool) -> str:
    request = {"model": PROVIDERS["groq"].model, "messages": [{"role": "user", "content": text}]}
    if stream:
        return "".join(
            c.choices[0].delta.content or ""
            for c in client.chat.completions.create(**request, stream=True)
            if c.choices
        )
    return str(client.chat.completions.create(**request).choices[0].message.content)


GROQ = Spec(
    "groq", _groq_aclient, _groq_agent, _groq_say, "groq.InternalServerError", "call_mock_", PROVIDERS["groq"].model
)

# --- mistral --------------------------------------------------------------------------------------------


def _mistral_aclient(server: MockLLMServer) -> Any:
    from mistralai.client import Mistral

    return Mistral(api_key="mistral-test-secret", server_url=server.mistral_server_url)


async def _mistral_agent(client: Any, question: str, stream: bool) -> str:
    messages: list[Any] = [{"role": "system", "content": WEATHER.system}, {"role": "user", "content": question}]
    for _ in range(6):
        request = {"model": PROVIDERS["mistral"].model, "messages": messages, "tools": scenarios.WEATHER_TOOLS_OPENAI}
        if stream:
            events = await client.chat.stream_async(**request)
            message: dict[str, Any] = streams.chat_message([event.data async for event in events])
        else:
            response = await client.chat.complete_async(**request)
            message = response.choices[0].message.model_dump(by_alias=True)
        messages.append(message)
        if not message.get("tool_calls"):
            return str(message.get("content") or "")
        for call in message["tool_calls"]:
            args = json.loads(call["function"]["arguments"])
            result = scenarios.run_weather_tool(call["function"]["name"], args)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    raise AssertionError("agent did not finish")


def _mistral_say(client: Any, text: str, stream: bool) -> str:
    request = {"model": PROVIDERS["mistral"].model, "messages": [{"role": "user", "content": text}]}
    if stream:
        return "".join(e.data.choices[0].delta.content or "" for e in client.chat.stream(**request))
    return str(client.chat.complete(**request).choices[0].message.content)


MISTRAL = Spec(
    "mistral",
    _mistral_aclient,
    _mistral_agent,
    _mistral_say,
    "mistralai.client.errors.SDKError",
    "mockcall",
    PROVIDERS["mistral"].model,
)

# --- ollama ---------------------------------------------------------------------------------------------


def _ollama_aclient(server: MockLLMServer) -> Any:
    import ollama

    return ollama.AsyncClient(host=server.ollama_host)


async def _ollama_agent(client: Any, question: str, stream: bool) -> str:
    messages: list[Any] = [{"role": "system", "content": WEATHER.system}, {"role": "user", "content": question}]
    for _ in range(6):
        request = {"model": PROVIDERS["ollama"].model, "messages": messages, "tools": scenarios.WEATHER_TOOLS_OPENAI}
        if stream:
            parts = [part async for part in await client.chat(**request, stream=True)]
            calls = [call for part in parts for call in part.message.tool_calls or []]
            message: Any = {"role": "assistant", "content": "".join(p.message.content or "" for p in parts)}
            message["tool_calls"] = calls
        else:
            message = (await client.chat(**request)).message
            calls = list(message.tool_calls or [])
        messages.append(message)
        if not calls:
            return str(message["content"])
        for call in calls:
            result = scenarios.run_weather_tool(call.function.name, call.function.arguments)
            messages.append({"role": "tool", "content": result, "tool_name": call.function.name})
    raise AssertionError("agent did not finish")


def _ollama_say(client: Any, text: str, stream: bool) -> str:
    messages = [{"role": "user", "content": text}]
    if stream:
        return "".join(
            part.message.content or "" for part in client.chat(PROVIDERS["ollama"].model, messages, stream=True)
        )
    return str(client.chat(PROVIDERS["ollama"].model, messages).message.content)  # positional, as the SDK allows


OLLAMA = Spec(
    "ollama", _ollama_aclient, _ollama_agent, _ollama_say, "ollama.ResponseError", None, PROVIDERS["ollama"].model
)

# --- cohere ---------------------------------------------------------------------------------------------


def _cohere_aclient(server: MockLLMServer) -> Any:
    import cohere

    return cohere.AsyncClientV2(api_key="co-test-secret", base_url=server.cohere_base_url, max_retries=0)


async def _cohere_agent(client: Any, question: str, stream: bool) -> str:
    messages: list[Any] = [{"role": "system", "content": WEATHER.system}, {"role": "user", "content": question}]
    for _ in range(6):
        request = {"model": PROVIDERS["cohere"].model, "messages": messages, "tools": scenarios.WEATHER_TOOLS_OPENAI}
        if stream:
            message: Any = streams.cohere_message([event async for event in client.chat_stream(**request)])
        else:
            message = (await client.chat(**request)).message.model_dump(exclude_none=True)
        messages.append(message)
        if not message.get("tool_calls"):
            return shapes.content_text(message.get("content"))
        for call in message["tool_calls"]:
            args = json.loads(call["function"]["arguments"])
            result = scenarios.run_weather_tool(call["function"]["name"], args)
            document = {"type": "document", "document": {"data": result}}  # v2 tool results may be documents
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": [document]})
    raise AssertionError("agent did not finish")


def _cohere_say(client: Any, text: str, stream: bool) -> str:
    request = {"model": PROVIDERS["cohere"].model, "messages": [{"role": "user", "content": text}]}
    if stream:
        events = client.chat_stream(**request)
        return "".join(e.delta.message.content.text or "" for e in events if e.type == "content-delta")
    return shapes.content_text(client.chat(**request).message.content)


COHERE = Spec(
    "cohere",
    _cohere_aclient,
    _cohere_agent,
    _cohere_say,
    "cohere.errors.InternalServerError",
    "toolcall_mock_",
    PROVIDERS["cohere"].model,
)

# --- litellm --------------------------------------------------------------------------------------------


def _litellm_aclient(server: MockLLMServer) -> Any:
    return PROVIDERS["litellm"].client(server)  # litellm has no client: its routing keywords


async def _litellm_agent(client: Any, question: str, stream: bool) -> str:
    import litellm

    messages: list[Any] = [{"role": "system", "content": WEATHER.system}, {"role": "user", "content": question}]
    for _ in range(6):
        request = {
            "model": PROVIDERS["litellm"].model,
            "messages": messages,
            "tools": scenarios.WEATHER_TOOLS_OPENAI,
            **client,
        }
        if stream:
            chunks = [chunk async for chunk in await litellm.acompletion(**request, stream=True)]
            message: dict[str, Any] = streams.chat_message(chunks)
        else:
            message = (await litellm.acompletion(**request)).choices[0].message.model_dump(exclude_none=True)
        messages.append(message)
        if not message.get("tool_calls"):
            return str(message.get("content") or "")
        for call in message["tool_calls"]:
            result = scenarios.run_weather_tool(call["function"]["name"], json.loads(call["function"]["arguments"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    raise AssertionError("agent did not finish")


def _litellm_say(client: Any, text: str, stream: bool) -> str:
    import litellm

    request = {"model": PROVIDERS["litellm"].model, "messages": [{"role": "user", "content": text}], **client}
    if stream:
        return "".join(c.choices[0].delta.content or "" for c in litellm.completion(**request, stream=True))
    return str(litellm.completion(**request).choices[0].message.content)


LITELLM = Spec(
    "litellm",
    _litellm_aclient,
    _litellm_agent,
    _litellm_say,
    "litellm.InternalServerError",
    "call_mock_",
    "gpt-4o-mini",
    stream_usage=False,
)

SPECS: dict[str, Spec] = {"groq": GROQ, "mistral": MISTRAL, "ollama": OLLAMA, "cohere": COHERE, "litellm": LITELLM}

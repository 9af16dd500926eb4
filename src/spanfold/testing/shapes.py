"""The agent's side of each provider API, as the one loop (:func:`spanfold.testing.agents.run_agent`) drives it: the
first request, the client call (streamed or not), how the reply's tool calls and text are read, and how the reply and
the tools' results go back into the next request. A request is the keyword arguments of the client call; the lists it
holds are kept and extended, so every call re-sends the same history objects, as agents do."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from spanfold.testing.scenarios import Scenario
from spanfold.testing.streams import chat_message, cohere_message, converse_message

Request = dict[str, Any]


@dataclass(frozen=True)
class Call:
    """A tool call the model asked for: the tool's name, its arguments as JSON text, its id (None where the API gives
    none)."""

    name: str
    arguments: str
    id: str | None


class Shape(Protocol):
    """One API's side of the loop."""

    def start(self, model: str, scenario: Scenario, question: str) -> Request:
        """The first request: the scenario's prompt, the user's question and the tools."""
        ...

    def send(self, client: Any, request: Request, stream: bool) -> Any:
        """One model call: the reply (streamed: read to its end)."""
        ...

    def calls(self, reply: Any) -> list[Call]:
        """The tool calls the reply asks for."""
        ...

    def text(self, reply: Any) -> str:
        """The reply's text: the agent's answer when it asks for no tool."""
        ...

    def send_back(self, request: Request, reply: Any, results: list[tuple[Call, str]]) -> None:
        """The reply and each call's result (its tool's output) made part of the next request."""
        ...

    def follow_up(self, request: Request, reply: Any, question: str) -> None:
        """The reply (an answer) and the user's next question made part of the next request: a new turn."""
        ...


# -- Chat Completions and the APIs that copy it ----------------------------------------------------------------------


def _field(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def content_text(content: Any) -> str:
    """A message's text: a string, or the ``text`` of its content items (Cohere)."""
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(_field(item, "text") or "" for item in content)


def _arguments(value: Any) -> str:
    """A call's arguments as JSON text (ollama gives an object)."""
    if value is None or isinstance(value, str):
        return value or ""
    return json.dumps(dict(value))


def tool_message(call: Call, output: str) -> dict[str, Any]:
    """A result as Chat Completions sends it: a ``tool`` message naming the call."""
    return {"role": "tool", "tool_call_id": call.id, "content": output}


def named_tool_message(call: Call, output: str) -> dict[str, Any]:
    """A ``tool`` message that also names its tool (groq, mistralai, litellm)."""
    return {**tool_message(call, output), "name": call.name}


def ollama_tool_message(call: Call, output: str) -> dict[str, Any]:
    """ollama's ``tool`` message: no call id, the tool's name."""
    return {"role": "tool", "content": output, "tool_name": call.name}


@dataclass(frozen=True)
class ChatCompletions:
    """The whole history each call: a system and a user message first, then each assistant message as it came (an
    SDK object, or a dict made of a stream) and one ``tool`` message per result (``result``). ``complete`` is the
    provider's client call: ``(client, request, stream) -> the assistant message``."""

    complete: Callable[[Any, Request, bool], Any]
    result: Callable[[Call, str], dict[str, Any]] = tool_message

    def start(self, model: str, scenario: Scenario, question: str) -> Request:
        messages = [{"role": "system", "content": scenario.system}, {"role": "user", "content": question}]
        return {"model": model, "messages": messages, "tools": scenario.definitions("chat")}

    def send(self, client: Any, request: Request, stream: bool) -> Any:
        return self.complete(client, request, stream)

    def calls(self, reply: Any) -> list[Call]:
        out = []
        for call in _field(reply, "tool_calls") or []:
            function = _field(call, "function")
            out.append(Call(_field(function, "name"), _arguments(_field(function, "arguments")), _field(call, "id")))
        return out

    def text(self, reply: Any) -> str:
        return content_text(_field(reply, "content"))

    def send_back(self, request: Request, reply: Any, results: list[tuple[Call, str]]) -> None:
        request["messages"].append(reply)
        request["messages"].extend(self.result(call, output) for call, output in results)

    def follow_up(self, request: Request, reply: Any, question: str) -> None:
        request["messages"] += [reply, {"role": "user", "content": question}]


def openai_chat(client: Any, request: Request, stream: bool) -> Any:
    """``chat.completions.create``, or the SDK's stream helper read to its final completion."""
    if stream:
        chat = client.chat.completions
        helpers = chat if hasattr(chat, "stream") else client.beta.chat.completions  # openai < 1.92: in beta
        with helpers.stream(**request) as events:
            return events.get_final_completion().choices[0].message
    return client.chat.completions.create(**request).choices[0].message


def groq_chat(client: Any, request: Request, stream: bool) -> Any:
    """groq's ``chat.completions.create`` (streamed: the raw chunks, assembled here)."""
    if stream:
        return chat_message(client.chat.completions.create(**request, stream=True))
    return client.chat.completions.create(**request).choices[0].message


def mistral_chat(client: Any, request: Request, stream: bool) -> Any:
    """mistralai's ``chat.complete``, or ``chat.stream`` whose events each hold a chunk in ``.data``."""
    if stream:
        with client.chat.stream(**request) as events:
            return chat_message(event.data for event in events)
    return client.chat.complete(**request).choices[0].message


def ollama_chat(client: Any, request: Request, stream: bool) -> Any:
    """ollama's ``chat`` (streamed: the parts' text joined, their tool calls gathered)."""
    if not stream:
        return client.chat(**request).message
    text: list[str] = []
    calls: list[Any] = []
    for part in client.chat(**request, stream=True):
        text.append(part.message.content or "")
        calls.extend(part.message.tool_calls or [])
    return {"role": "assistant", "content": "".join(text), "tool_calls": calls}


def cohere_chat(client: Any, request: Request, stream: bool) -> Any:
    """Cohere v2's ``chat``, or ``chat_stream``'s events assembled (the ``tool_plan`` goes back as it came)."""
    if stream:
        return cohere_message(client.chat_stream(**request))
    return client.chat(**request).message


def litellm_chat(client: Any, request: Request, stream: bool) -> Any:
    """``litellm.completion``; ``client`` is its routing keywords (``api_base``, ``api_key``)."""
    import litellm

    if stream:
        return chat_message(litellm.completion(**request, **client, stream=True))
    return litellm.completion(**request, **client).choices[0].message


# -- the other APIs -------------------------------------------------------------------------------------------------


class Messages:
    """Anthropic Messages: ``tool_use`` blocks in, ``tool_result`` blocks back in a user turn."""

    def start(self, model: str, scenario: Scenario, question: str) -> Request:
        return {
            "model": model,
            "max_tokens": 1024,
            "system": scenario.system,
            "messages": [{"role": "user", "content": question}],
            "tools": scenario.definitions("messages"),
        }

    def send(self, client: Any, request: Request, stream: bool) -> Any:
        if stream:
            with client.messages.stream(**request) as events:
                return events.get_final_message()
        return client.messages.create(**request)

    def calls(self, reply: Any) -> list[Call]:
        return [Call(b.name, json.dumps(b.input), b.id) for b in reply.content if b.type == "tool_use"]

    def text(self, reply: Any) -> str:
        return "".join(block.text for block in reply.content if block.type == "text")

    def send_back(self, request: Request, reply: Any, results: list[tuple[Call, str]]) -> None:
        request["messages"].append({"role": "assistant", "content": reply.content})
        blocks = [{"type": "tool_result", "tool_use_id": call.id, "content": output} for call, output in results]
        request["messages"].append({"role": "user", "content": blocks})

    def follow_up(self, request: Request, reply: Any, question: str) -> None:
        request["messages"] += [{"role": "assistant", "content": reply.content}, {"role": "user", "content": question}]


class Responses:
    """OpenAI Responses, chained by ``previous_response_id``: each call sends only the new items."""

    def start(self, model: str, scenario: Scenario, question: str) -> Request:
        tools = scenario.definitions("responses")
        return {
            "model": model,
            "instructions": scenario.system,
            "input": [{"role": "user", "content": question}],
            "tools": tools,
        }

    def send(self, client: Any, request: Request, stream: bool) -> Any:
        if stream:
            with client.responses.stream(**request) as events:
                return events.get_final_response()
        return client.responses.create(**request)

    def calls(self, reply: Any) -> list[Call]:
        return [Call(i.name, i.arguments, i.call_id) for i in reply.output if i.type == "function_call"]

    def text(self, reply: Any) -> str:
        return str(reply.output_text)

    def send_back(self, request: Request, reply: Any, results: list[tuple[Call, str]]) -> None:
        request["input"] = [
            {"type": "function_call_output", "call_id": call.id, "output": output} for call, output in results
        ]
        request["previous_response_id"] = reply.id

    def follow_up(self, request: Request, reply: Any, question: str) -> None:
        request["input"] = [{"role": "user", "content": question}]
        request["previous_response_id"] = reply.id


class Gemini:
    """Gemini ``generate_content``: ``function_call`` parts in (no ids), ``function_response`` parts back in a user
    turn; the SDK's automatic function calling off, the tools run by the loop."""

    def start(self, model: str, scenario: Scenario, question: str) -> Request:
        from google.genai import types

        config = types.GenerateContentConfig(
            system_instruction=scenario.system,
            tools=scenario.definitions("gemini"),  # type: ignore[arg-type]
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        contents = [types.Content(role="user", parts=[types.Part(text=question)])]
        return {"model": model, "contents": contents, "config": config}

    def send(self, client: Any, request: Request, stream: bool) -> Any:
        """The reply's parts (of the first candidate)."""
        if stream:
            chunks = client.models.generate_content_stream(**request)
            return [part for chunk in chunks for c in chunk.candidates[:1] for part in c.content.parts or ()]
        return list(client.models.generate_content(**request).candidates[0].content.parts or ())

    def calls(self, reply: Any) -> list[Call]:
        calls = [part.function_call for part in reply if part.function_call]
        return [Call(str(c.name), json.dumps(c.args or {}), c.id) for c in calls]

    def text(self, reply: Any) -> str:
        return "".join(part.text or "" for part in reply)

    def send_back(self, request: Request, reply: Any, results: list[tuple[Call, str]]) -> None:
        from google.genai import types

        request["contents"].append(types.Content(role="model", parts=reply))
        parts = [types.Part.from_function_response(name=c.name, response={"result": out}) for c, out in results]
        request["contents"].append(types.Content(role="user", parts=parts))

    def follow_up(self, request: Request, reply: Any, question: str) -> None:
        from google.genai import types

        request["contents"].append(types.Content(role="model", parts=reply))
        request["contents"].append(types.Content(role="user", parts=[types.Part(text=question)]))


class Converse:
    """Amazon Bedrock Converse: ``toolUse`` blocks in, ``toolResult`` blocks back in a user turn."""

    def start(self, model: str, scenario: Scenario, question: str) -> Request:
        messages = [{"role": "user", "content": [{"text": question}]}]
        tools = {"tools": scenario.definitions("converse")}
        return {"modelId": model, "system": [{"text": scenario.system}], "messages": messages, "toolConfig": tools}

    def send(self, client: Any, request: Request, stream: bool) -> Any:
        return converse_message(client, request) if stream else client.converse(**request)["output"]["message"]

    def calls(self, reply: Any) -> list[Call]:
        uses = [block["toolUse"] for block in reply["content"] if "toolUse" in block]
        return [Call(u["name"], json.dumps(u["input"]), u["toolUseId"]) for u in uses]

    def text(self, reply: Any) -> str:
        return "".join(block.get("text", "") for block in reply["content"])

    def send_back(self, request: Request, reply: Any, results: list[tuple[Call, str]]) -> None:
        request["messages"].append(reply)
        blocks = [{"toolResult": {"toolUseId": c.id, "content": [{"text": out}]}} for c, out in results]
        request["messages"].append({"role": "user", "content": blocks})

    def follow_up(self, request: Request, reply: Any, question: str) -> None:
        request["messages"] += [reply, {"role": "user", "content": [{"text": question}]}]

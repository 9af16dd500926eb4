"""``spanfold demo``: a tool-using agent run against the embedded mock LLM server, traced and shown.

No API key, no network: the real ``openai`` SDK talks real HTTP to a mock server on 127.0.0.1 that plays a
deterministic weather agent (two parallel ``get_weather`` calls, a ``convert_temperature`` call, an answer).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

import spanfold
from spanfold.commands.terminal import color_choice, terminal_width
from spanfold.testing import MockLLMServer, scenarios
from spanfold.trace.model import Trace
from spanfold.trace.read import Record, read_records
from spanfold.trace.render import render_trace

QUESTION = "What's the weather in Paris and Tokyo? And Paris's temperature in fahrenheit, please."
SYSTEM = "You are a weather assistant. Use the tools, then answer in one sentence."
MODEL = "gpt-4o-mini"
ANTHROPIC_MODEL = "claude-sonnet-5"
#: Where the demo writes unless told otherwise: the directory the README's commands read.
DEFAULT_OUTPUT = "traces"
#: Which extra brings each provider's client library.
#: Each provider's client library: (the module the demo imports, the extra that installs it).
LIBRARIES: dict[str, tuple[str, str]] = {
    "openai": ("openai", "openai"),
    "openai-responses": ("openai", "openai"),
    "anthropic": ("anthropic", "anthropic"),
    "gemini": ("google.genai", "gemini"),
    "bedrock": ("boto3", "bedrock"),
    "groq": ("groq", "groq"),
    "mistral": ("mistralai", "mistral"),
    "ollama": ("ollama", "ollama"),
    "cohere": ("cohere", "cohere"),
    "litellm": ("litellm", "litellm"),
}
#: Printed the first time the demo writes into a directory: what the output above means.
LEGEND = """\
What you are looking at: the agent's run as one flat trace, the event list an Invariant trace file holds.
  heading       trace id (agent name), then models, tokens in/out, wall time and counts
  system/user   the prompt the agent sent; assistant: the model's replies
  -> name(...)  a tool call the model asked for, with its arguments and [call id]
  <- name [id]  the tool's output, matched to its call
Next: `spanfold show {path} --trace -1`, `spanfold summary {directory}`; the README walks through the rest."""
GEMINI_MODEL = "gemini-2.5-flash"
BEDROCK_MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"


@spanfold.tool
def get_weather(city: str) -> str:
    """Current weather in a city."""
    return scenarios.get_weather(city)


@spanfold.tool
def convert_temperature(celsius: float, to: str = "fahrenheit") -> str:
    """Convert a temperature from celsius."""
    return scenarios.convert_temperature(celsius, to)


TOOLS: dict[str, Callable[..., str]] = {"get_weather": get_weather, "convert_temperature": convert_temperature}


def run_tool_call(name: str, arguments: str, call_id: str | None) -> str:
    """Run one tool the model asked for; a bad call becomes an error message for the model."""
    try:
        return TOOLS[name](**json.loads(arguments or "{}"), tool_call_id=call_id)
    except Exception as exc:  # the model sees the error, as agents do
        return f"error: {type(exc).__name__}: {exc}"


def openai_chat_agent(client: Any, question: str = QUESTION, *, stream: bool = False, max_steps: int = 8) -> str:
    """The usual Chat Completions tool loop: call, run the requested tools, send results back, repeat."""
    messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    request = {"model": MODEL, "messages": messages, "tools": scenarios.WEATHER_TOOLS_OPENAI}
    chat = client.chat.completions
    helpers = chat if hasattr(chat, "stream") else client.beta.chat.completions  # openai < 1.92: in beta
    for _ in range(max_steps):
        if stream:
            with helpers.stream(**request) as s:
                completion = s.get_final_completion()
        else:
            completion = client.chat.completions.create(**request)
        message = completion.choices[0].message
        messages.append(message)
        if not message.tool_calls:
            return str(message.content or "")
        for call in message.tool_calls:
            result = run_tool_call(call.function.name, call.function.arguments, call.id)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return ""


def anthropic_agent(client: Any, question: str = QUESTION, *, stream: bool = False, max_steps: int = 8) -> str:
    """The same loop on Anthropic Messages: ``tool_use`` blocks in, ``tool_result`` blocks back in a user turn."""
    history: list[Any] = [{"role": "user", "content": question}]
    request = {
        "model": ANTHROPIC_MODEL,
        "max_tokens": 1024,
        "system": SYSTEM,
        "messages": history,
        "tools": scenarios.WEATHER_TOOLS_ANTHROPIC,
    }
    for _ in range(max_steps):
        if stream:
            with client.messages.stream(**request) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(**request)
        history.append({"role": "assistant", "content": message.content})
        uses = [block for block in message.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in message.content if block.type == "text")
        results = [
            {"type": "tool_result", "tool_use_id": u.id, "content": run_tool_call(u.name, json.dumps(u.input), u.id)}
            for u in uses
        ]
        history.append({"role": "user", "content": results})
    return ""


def openai_responses_agent(client: Any, question: str = QUESTION, *, stream: bool = False, max_steps: int = 8) -> str:
    """The same loop on the Responses API, chained by ``previous_response_id`` (only new items are sent)."""
    items: list[Any] = [{"role": "user", "content": question}]
    previous: str | None = None
    for _ in range(max_steps):
        request: dict[str, Any] = {"model": MODEL, "instructions": SYSTEM, "input": items}
        request["tools"] = scenarios.WEATHER_TOOLS_RESPONSES
        if previous is not None:
            request["previous_response_id"] = previous
        if stream:
            with client.responses.stream(**request) as s:
                response = s.get_final_response()
        else:
            response = client.responses.create(**request)
        previous = response.id
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return str(response.output_text)
        items = [
            {
                "type": "function_call_output",
                "call_id": c.call_id,
                "output": run_tool_call(c.name, c.arguments, c.call_id),
            }
            for c in calls
        ]
    return ""


def gemini_agent(client: Any, question: str = QUESTION, *, stream: bool = False, max_steps: int = 8) -> str:
    """The same loop on Gemini ``generate_content``: ``function_call`` parts in (no ids), ``function_response`` parts
    back in a user turn; the SDK's automatic function calling off, the tools run here."""
    from google.genai import types

    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=question)])]
    config = types.GenerateContentConfig(
        system_instruction=SYSTEM,
        tools=scenarios.WEATHER_TOOLS_GEMINI,  # type: ignore[arg-type]
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    for _ in range(max_steps):
        if stream:
            chunks = client.models.generate_content_stream(model=GEMINI_MODEL, contents=contents, config=config)
            parts = [part for chunk in chunks for c in chunk.candidates[:1] for part in c.content.parts or ()]
        else:
            response = client.models.generate_content(model=GEMINI_MODEL, contents=contents, config=config)
            parts = list(response.candidates[0].content.parts or ())
        contents.append(types.Content(role="model", parts=parts))
        calls = [part.function_call for part in parts if part.function_call]
        if not calls:
            return "".join(part.text or "" for part in parts)
        results = [run_tool_call(str(c.name), json.dumps(c.args or {}), c.id) for c in calls]
        contents.append(
            types.Content(
                role="user",
                parts=[
                    types.Part.from_function_response(name=str(c.name), response={"result": result})
                    for c, result in zip(calls, results, strict=True)
                ],
            )
        )
    return ""


def _converse_streamed(client: Any, request: dict[str, Any]) -> dict[str, Any]:
    """The assistant message a ``converse_stream`` call streams, assembled from its events."""
    blocks: dict[int, dict[str, Any]] = {}
    for event in client.converse_stream(**request)["stream"]:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            blocks[start["contentBlockIndex"]] = {"toolUse": {**start["start"]["toolUse"], "input": ""}}
        elif "contentBlockDelta" in event:
            delta = event["contentBlockDelta"]
            block = blocks.setdefault(delta["contentBlockIndex"], {"text": ""})
            if "text" in delta["delta"]:
                block["text"] += delta["delta"]["text"]
            elif "toolUse" in delta["delta"]:
                block["toolUse"]["input"] += delta["delta"]["toolUse"]["input"]
    for block in blocks.values():
        if "toolUse" in block:
            block["toolUse"]["input"] = json.loads(block["toolUse"]["input"] or "{}")
    return {"role": "assistant", "content": [blocks[index] for index in sorted(blocks)]}


def bedrock_agent(client: Any, question: str = QUESTION, *, stream: bool = False, max_steps: int = 8) -> str:
    """The same loop on Amazon Bedrock Converse: ``toolUse`` blocks in, ``toolResult`` blocks back in a user turn."""
    history: list[Any] = [{"role": "user", "content": [{"text": question}]}]
    request = {
        "modelId": BEDROCK_MODEL,
        "system": [{"text": SYSTEM}],
        "messages": history,
        "toolConfig": {"tools": scenarios.WEATHER_TOOLS_BEDROCK},
    }
    for _ in range(max_steps):
        message = _converse_streamed(client, request) if stream else client.converse(**request)["output"]["message"]
        history.append(message)
        uses = [block["toolUse"] for block in message["content"] if "toolUse" in block]
        if not uses:
            return "".join(block.get("text", "") for block in message["content"])
        results = [
            {
                "toolUseId": u["toolUseId"],
                "content": [{"text": run_tool_call(u["name"], json.dumps(u["input"]), u["toolUseId"])}],
            }
            for u in uses
        ]
        history.append({"role": "user", "content": [{"toolResult": result} for result in results]})
    return ""


GROQ_MODEL = "llama-3.3-70b-versatile"


def _collect_chat_stream(chunks: Any) -> dict[str, Any]:
    """The assistant message a raw Chat Completions stream spells out (SDKs without a stream helper: groq)."""
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            delta = choice.delta
            text.append(delta.content or "")
            for call in delta.tool_calls or []:
                entry = calls.setdefault(
                    call.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                )
                entry["id"] = call.id or entry["id"]
                if call.function is not None:
                    entry["function"]["name"] += call.function.name or ""
                    entry["function"]["arguments"] += call.function.arguments or ""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def _field(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _text(content: Any) -> str:
    """A message's text: a string, or the ``text`` of its content items (Cohere)."""
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(_field(item, "text") or "" for item in content)


def _chat_tool_loop(send: Callable[[list[Any]], Any], question: str, max_steps: int, named: bool = True) -> str:
    """The Chat Completions tool loop over ``send(messages) -> assistant message`` (an SDK object or a dict); a tool
    result names its tool when ``named``."""
    messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    for _ in range(max_steps):
        message = send(messages)
        messages.append(message)
        calls = _field(message, "tool_calls") or []
        if not calls:
            return _text(_field(message, "content"))
        for call in calls:
            call_id, function = _field(call, "id"), _field(call, "function")
            name = _field(function, "name")
            result: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": ""}
            result["content"] = run_tool_call(name, _field(function, "arguments"), call_id)
            messages.append({**result, "name": name} if named else result)
    return ""


def groq_agent(client: Any, question: str = QUESTION, *, stream: bool = False, max_steps: int = 8) -> str:
    """The Chat Completions loop on the groq SDK (streamed: the raw chunks, assembled here)."""

    def send(messages: list[Any]) -> Any:
        request = {"model": GROQ_MODEL, "messages": messages, "tools": scenarios.WEATHER_TOOLS_OPENAI}
        if stream:
            return _collect_chat_stream(client.chat.completions.create(**request, stream=True))
        return client.chat.completions.create(**request).choices[0].message

    return _chat_tool_loop(send, question, max_steps)


MISTRAL_MODEL = "mistral-small-latest"


def mistral_agent(client: Any, question: str = QUESTION, *, stream: bool = False, max_steps: int = 8) -> str:
    """The loop on mistralai: ``chat.complete``, or ``chat.stream`` whose events each hold a chunk in ``.data``."""

    def send(messages: list[Any]) -> Any:
        request = {"model": MISTRAL_MODEL, "messages": messages, "tools": scenarios.WEATHER_TOOLS_OPENAI}
        if stream:
            with client.chat.stream(**request) as events:
                return _collect_chat_stream(event.data for event in events)
        return client.chat.complete(**request).choices[0].message

    return _chat_tool_loop(send, question, max_steps)


OLLAMA_MODEL = "llama3.2"


def ollama_agent(client: Any, question: str = QUESTION, *, stream: bool = False, max_steps: int = 8) -> str:
    """The loop on ollama: tool calls carry no ids and their arguments are objects; results name the tool."""
    messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    for _ in range(max_steps):
        request = {"model": OLLAMA_MODEL, "messages": messages, "tools": scenarios.WEATHER_TOOLS_OPENAI}
        if stream:
            text: list[str] = []
            calls: list[Any] = []
            for part in client.chat(**request, stream=True):
                text.append(part.message.content or "")
                calls.extend(part.message.tool_calls or [])
            message: Any = {"role": "assistant", "content": "".join(text), "tool_calls": calls}
        else:
            message = client.chat(**request).message
            calls = list(message.tool_calls or [])
        messages.append(message)
        if not calls:
            return str(_field(message, "content") or "")
        for call in calls:
            name = call.function.name
            result = run_tool_call(name, json.dumps(dict(call.function.arguments)), None)
            messages.append({"role": "tool", "content": result, "tool_name": name})
    return ""


COHERE_MODEL = "command-a-03-2025"


def _collect_cohere_stream(events: Any) -> dict[str, Any]:
    """The assistant message a Cohere v2 event stream spells out: text, ``tool_plan``, tool calls."""
    text: list[str] = []
    plan: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for event in events:
        delta = getattr(event, "delta", None)
        message: Any = getattr(delta, "message", None)
        if event.type == "content-delta":
            text.append(message.content.text or "")
        elif event.type == "tool-plan-delta":
            plan.append(message.tool_plan or "")
        elif event.type == "tool-call-start":
            call = message.tool_calls
            calls[event.index] = {"id": call.id, "type": "function", "function": call.function.model_dump()}
        elif event.type == "tool-call-delta":
            calls[event.index]["function"]["arguments"] += message.tool_calls.function.arguments or ""
    out: dict[str, Any] = {"role": "assistant"}
    if calls:
        out.update(tool_plan="".join(plan), tool_calls=[calls[i] for i in sorted(calls)])
    if text:
        out["content"] = "".join(text)
    return out


def cohere_agent(client: Any, question: str = QUESTION, *, stream: bool = False, max_steps: int = 8) -> str:
    """The loop on Cohere's v2 chat: the assistant's ``tool_plan`` and tool calls go back as they came."""

    def send(messages: list[Any]) -> Any:
        request = {"model": COHERE_MODEL, "messages": messages, "tools": scenarios.WEATHER_TOOLS_OPENAI}
        if stream:
            return _collect_cohere_stream(client.chat_stream(**request))
        return client.chat(**request).message

    return _chat_tool_loop(send, question, max_steps, named=False)


LITELLM_MODEL = "openai/gpt-4o-mini"


def litellm_agent(client: Any, question: str = QUESTION, *, stream: bool = False, max_steps: int = 8) -> str:
    """The loop through ``litellm.completion`` (``client``: its routing keywords, ``api_base`` and ``api_key``)."""
    import litellm

    def send(messages: list[Any]) -> Any:
        request = {"model": LITELLM_MODEL, "messages": messages, "tools": scenarios.WEATHER_TOOLS_OPENAI, **client}
        if stream:
            return _collect_chat_stream(litellm.completion(**request, stream=True))
        return litellm.completion(**request).choices[0].message

    return _chat_tool_loop(send, question, max_steps)


@dataclass(frozen=True)
class Provider:
    """How the demo talks to one API of the mock server."""

    agent: Callable[..., str]
    client: Callable[[MockLLMServer], Any]


def _openai_client(server: MockLLMServer) -> Any:
    import openai

    return openai.OpenAI(api_key="demo-key", base_url=server.base_url, max_retries=0)


def _anthropic_client(server: MockLLMServer) -> Any:
    import anthropic

    return anthropic.Anthropic(api_key="demo-key", base_url=server.anthropic_base_url, max_retries=0)


def _gemini_client(server: MockLLMServer) -> Any:
    from google import genai

    return genai.Client(api_key="demo-key", http_options={"base_url": server.gemini_base_url})


def _bedrock_client(server: MockLLMServer) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "bedrock-runtime",
        endpoint_url=server.url,
        region_name="us-east-1",
        aws_access_key_id="demo-key-id",
        aws_secret_access_key="demo-secret",
        config=Config(retries={"total_max_attempts": 1}),
    )


def _groq_client(server: MockLLMServer) -> Any:
    import groq

    return groq.Groq(api_key="demo-key", base_url=server.groq_base_url, max_retries=0)


def _mistral_client(server: MockLLMServer) -> Any:
    from mistralai.client import Mistral

    return Mistral(api_key="demo-key", server_url=server.mistral_server_url)


def _ollama_client(server: MockLLMServer) -> Any:
    import ollama

    return ollama.Client(host=server.ollama_host)


def _cohere_client(server: MockLLMServer) -> Any:
    import cohere

    return cohere.ClientV2(api_key="demo-key", base_url=server.cohere_base_url, max_retries=0)


def _litellm_client(server: MockLLMServer) -> Any:
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of the remote price list
    return {"api_base": server.base_url, "api_key": "demo-key", "max_retries": 0}


PROVIDERS: dict[str, Provider] = {
    "openai": Provider(openai_chat_agent, _openai_client),
    "anthropic": Provider(anthropic_agent, _anthropic_client),
    "openai-responses": Provider(openai_responses_agent, _openai_client),
    "gemini": Provider(gemini_agent, _gemini_client),
    "bedrock": Provider(bedrock_agent, _bedrock_client),
    "groq": Provider(groq_agent, _groq_client),
    "mistral": Provider(mistral_agent, _mistral_client),
    "ollama": Provider(ollama_agent, _ollama_client),
    "cohere": Provider(cohere_agent, _cohere_client),
    "litellm": Provider(litellm_agent, _litellm_client),
}


class DemoError(Exception):
    """The demo's traces could not be written (the message is the one-line problem)."""


def _last_trace(path: Path) -> Trace:
    """The trace the demo just appended, with its metadata from the sibling file."""
    traces = [r.trace for r in read_records(path) if isinstance(r, Record) and r.trace is not None]
    if not traces:
        raise DemoError(f"{path}: no trace was written")
    return traces[-1]


def installed(provider: str) -> bool:
    """Whether ``provider``'s client library is installed here (found without importing it)."""
    module = LIBRARIES[provider][0]
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _client_library(provider: str) -> None:
    """The provider's SDK imported, or :class:`DemoError` naming the extra that installs it."""
    module, extra = LIBRARIES[provider]
    try:
        importlib.import_module(module)
    except ImportError:
        raise DemoError(
            f"the demo needs the {module} package: pip install 'spanfold[{extra}]'"
            f" (or pip install -e '.[{extra}]' in a checkout)"
        ) from None


def run(output: str | None = None, *, provider: str = "openai", stream: bool = False, echo: bool = True) -> Path:
    """Run the demo agent on ``provider`` (a key of :data:`PROVIDERS`); return the trace file it appended to.
    Traces go to ``output`` (default ``./traces``); the first run into a new directory also prints a legend."""
    chosen = PROVIDERS[provider]
    _client_library(provider)
    directory = Path(output or DEFAULT_OUTPUT)
    first_time = not (directory / "traces.jsonl").exists()
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)  # traces hold prompts: the user's only
    except OSError as exc:
        raise DemoError(f"{directory}: cannot write traces ({exc.strerror or exc})") from None
    handle = spanfold.init(output=str(directory), format="invariant")  # the demo shows the Invariant file
    with MockLLMServer(scenarios.weather_agent) as server, spanfold.agent("weather-bot"):
        answer = chosen.agent(chosen.client(server), stream=stream)
    if not spanfold.flush() or not spanfold.stats().get("traces_written"):
        raise DemoError(f"{directory}: the trace was not written (see the warning above)")
    path = Path(handle.output) / "traces.jsonl"
    if echo:
        color, width = color_choice(), terminal_width()
        click.echo(f"{click.style('agent answered', bold=True)}: {answer}\n", color=color)
        trace = _last_trace(path)
        for line in render_trace(trace.events, trace.meta, color=True, max_chars=400, width=width):
            click.echo(line, color=color)
        click.echo(f"\nwritten to {path} (metadata: {path.with_name('traces.meta.jsonl')})")
        if first_time:
            shown = Path(output or DEFAULT_OUTPUT)
            click.echo("\n" + LEGEND.format(path=shown / "traces.jsonl", directory=shown))
    return path


@click.command("demo")
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False),
    default=None,
    help="Trace directory (default: ./traces, where the README's commands read).",
)
@click.option(
    "--provider",
    type=click.Choice(list(PROVIDERS)),
    default="openai",
    show_default=True,
    help="API the agent uses: openai (Chat Completions), anthropic (Messages), openai-responses, gemini, bedrock"
    " (Converse), groq, mistral, ollama, cohere or litellm.",
)
@click.option("--stream", is_flag=True, help="Stream the model's replies.")
def command(output: str | None, provider: str, stream: bool) -> None:
    """Run a tool-using agent against the embedded mock LLM server and show its flat trace."""
    try:
        run(output, provider=provider, stream=stream)
    except DemoError as exc:
        click.echo(str(exc), err=True)
        sys.exit(2)
    finally:
        spanfold.shutdown()
